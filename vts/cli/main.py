"""The ``nnvts`` command line: a thin layer over the ``vts`` library.

Parsing and exit codes live here, nothing else: 0 when every case passed,
1 when any case failed, 2 for usage and input errors (a malformed spec, an
unknown driver or family).  Heavy modules (numpy, jsonschema, rich, the
drivers) are imported inside the commands so ``nnvts --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from vts.bounds import shown
from vts.cli.ci import COMMANDS as CI_COMMANDS
from vts.cli.ci import ci_list_options, ci_options, ci_run_options, narrow_selection
from vts.cli.corpus import corpus
from vts.cli.fuzz import fuzz
from vts.cli.params import (
    DriverParam,
    FiniteFloat,
    InputFile,
    NnvtsGroup,
    OutputDir,
    OutputFile,
    SocketFd,
    SocketPath,
    bounded_int,
    configured_driver,
    driver_option,
)
from vts.cli.soak import soak
from vts.run.option_checks import MAX_CRASHES, MAX_MEMORY_MIB, MAX_TIMEOUT

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef
    from vts.run.runner import Selection

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_TESTS = 0, 1, 2, 5

#: Upper bounds of numeric options: a huge value is a usage error, not hours of spawning.
MAX_JOBS = 256
MAX_THREADS = 1024

#: ``nnvts run``'s exit statuses, for its --help and the README.
EXIT_STATUS_EPILOG = """\b
Exit status:
  0    every selected case passed
  1    some case failed (failed, error, crash, timeout, xpass)
  2    usage, input or I/O error (bad option, malformed spec, full disk); a bad spec: nothing runs or is written
  5    no case was selected (a -k typo, an empty spec folder)
  130  interrupted by SIGINT (Ctrl-C); 143 by SIGTERM; 129 by SIGHUP (reports are still written)
"""


def _usage_error(message: str) -> None:
    click.echo(f"nnvts: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _spec_paths(specs: Sequence[str], extra: Sequence[str]) -> list[str]:
    from vts.spec.bundled import default_spec_paths

    return list(specs) + list(extra) or default_spec_paths()


def _selection(specs: Sequence[str], keyword: str | None, families: Sequence[str], shard: str | None):
    from vts.run.plan import SelectionPlan
    from vts.run.selection import SelectionError
    from vts.spec.errors import SpecError
    from vts.spec.loader import iter_spec_paths

    try:
        iter_spec_paths(specs)  # a missing path, a FIFO: refused before anything runs or prints
        return SelectionPlan(tuple(specs), tuple(families) or None, keyword, shard).build()
    except (SelectionError, SpecError) as error:
        message = str(error)
        if "no such file or directory" in message:
            message += ("; name the folder of spec files with --specs DIR (the bundled cases are generated_tests/ "
                        "in the nnvts checkout, and the default of an installed nnvts)")
        _usage_error(message)
    raise AssertionError  # unreachable: _usage_error exits


def _check_specs(paths: Sequence[str], selection: Selection | None = None, ci: dict[str, object] | None = None
                 ) -> None:
    """Validate every spec file before anything runs or is written (exit 2 on the first bad one).

    With a ``selection`` that shards, only the spec files it needs: a shard costs its share, and the
    shard that needs a broken file reports it.  ``--last-failed`` and ``--durations-from`` replace the
    shard later, so with either every file is checked.
    """
    if ci is not None and (ci.get("last_failed") or ci.get("durations_from")):
        selection = None
    from vts.run.runner import needed_specs
    from vts.spec.errors import SpecError
    from vts.spec.loader import load_paths

    try:
        for _ in load_paths(paths, None if selection is None else needed_specs(selection)):
            pass
    except SpecError as error:
        _usage_error(str(error))


def _warn_unmatched(selection) -> None:
    if selection.keyword is not None:
        for term in selection.keyword.unmatched():
            click.echo(f"nnvts: warning: -k term {term!r} matched no case", err=True)


class FamilyOption(click.Option):
    """``--family``, whose help lists the families (from their catalogue: importing them is too slow for --help)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        from vts.families.catalogue import default_families, opt_in_families

        default, others = default_families(), opt_in_families()
        extra = f" Families: {', '.join(default)}"
        if others:
            extra += f"; opt-in: {', '.join(others)}"
        return record[0], record[1] + extra + "."


_SELECTION_OPTIONS = [
    click.option("--specs", "specs", multiple=True, metavar="PATH",
                 help="Spec file or directory (repeatable). Default: generated_tests/ here, else the bundled cases "
                      "installed with nnvts."),
    click.option("-k", "keyword", metavar="EXPR",
                 help="Select cases by name: substrings or globs with and/or/not (case-insensitive, as pytest's)."),
    click.option("--family", "families", multiple=True, metavar="NAME", cls=FamilyOption,
                 help="Test family to run (repeatable). Default: every applicable family."),
    click.option("--shard", metavar="I/N",
                 help="Run only shard I of N (a stable split; the cases of one model stay together)."),
]


def selection_options(fn):
    for option in reversed(_SELECTION_OPTIONS):
        fn = option(fn)
    return click.argument("extra_specs", nargs=-1, type=click.Path())(fn)


@click.group(cls=NnvtsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nnvts", message="nnvts %(version)s")
def main() -> None:
    """nnvts: conformance tests for NN HAL accelerator drivers."""
    if os.environ.get("NO_COLOR"):
        # no-color.org asks for no colour; rich alone drops colours but keeps bold, dim and the like.
        # On a "dumb" terminal it writes no escape sequence at all, in every command.
        os.environ["TERM"] = "dumb"


@main.command(epilog=EXIT_STATUS_EPILOG)
@click.option("--driver", type=DriverParam(), default="reference", show_default=True,
              help="Driver: an installed name, module:attr, or exec:COMMAND.")
@driver_option
@selection_options
@click.option("--json", "json_path", type=OutputFile(), help="Write the JSON report here.")
@click.option("--junit", "junit_path", type=OutputFile(), help="Write a JUnit XML report here.")
@click.option("--html", "html_path", type=OutputFile(), help="Write a self-contained HTML report here.")
@click.option("--jsonl", "jsonl_path", type=OutputFile(),
              help="Stream one JSON line per case here (survives a killed run).")
@click.option("--timeout", "case_timeout", type=FiniteFloat(0, MAX_TIMEOUT, low_open=True), default=60.0,
              show_default=True, help="Seconds a case may take before it is recorded as a timeout.")
@click.option("--pool", "pool_kind", type=click.Choice(["ashmem", "mmap_fd", "hardware_buffer_blob"]),
              default="ashmem", show_default=True, help="Shared-memory kind for requests and constants.")
@click.option("--expected-failures", type=InputFile(),
              help="File of case-name globs expected to fail (xfail / xpass).")
@click.option("--extension-allowlist", type=InputFile(),
              help="Clients allowed to use vendor extensions, one per line (docs/extensions.md).")
@click.option("-v", "--verbose", is_flag=True, help="Print every case as it ends.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress, failure list or table: only the closing counts, duration and report paths.")
@click.option("--progress-interval", type=FiniteFloat(0, MAX_TIMEOUT), default=5.0, show_default=True, metavar="S",
              help="Off a TTY (or with NO_COLOR): seconds between plain progress lines on stderr (0: none).")
@click.option("--in-process", is_flag=True,
              help="Load the driver into the harness process (faster; a crash or hang then ends the run).")
@click.option("-j", "--jobs", type=bounded_int(1, MAX_JOBS), default=None,
              help="Worker processes, each with its own driver (see --job-split). Default: the cores this "
                   "process may use; -j 1 for one.")
@click.option("--job-split", type=click.Choice(["claim", "hash"]), default="claim", show_default=True,
              help="With -j N: 'claim', each worker takes the next model nobody has as it gets to it (balanced); "
                   "'hash', each runs the models that hash to it (the same split every run).")
@click.option("--pin-cpus/--no-pin-cpus", default=True, show_default=True,
              help="With -j N: each worker and its driver on cores of their own, when there are N cores or more.")
@click.option("--memory-limit", "memory_limit", type=bounded_int(0, MAX_MEMORY_MIB), default=4096,
              show_default=True, metavar="MIB",
              help="Memory limit of the driver's whole process tree in MiB (a cgroup where the harness can make "
                   "one; each process's address space too; 0: none).")
@click.option("--oracle", default="reference", show_default=True, metavar="DRIVER",
              help="Driver whose answers the differential family expects (any --driver spec).")
@click.option("--large-budget", "large_budget", type=click.FloatRange(0, 86400), default=120.0, show_default=True,
              metavar="SECONDS", help="Time the differential family may spend on its realistic-size cases "
                                      "(millions of elements, hundreds of channels; 0: skip them).")
@click.option("--allow-unreproduced-crashes", is_flag=True,
              help="Report cases whose driver died once but passed when re-run alone without failing the run.")
@click.option("--allow-network", is_flag=True,
              help="Let the driver reach the network (default: an empty network namespace, where the kernel allows).")
@click.option("--driver-env", "driver_env", multiple=True, metavar="NAME",
              help="Pass the harness's environment variable NAME to the driver too (repeatable; the driver "
                   "otherwise gets an allowlist only, docs/sandbox.md).")
@click.option("--max-crashes", type=bounded_int(0, MAX_CRASHES), default=10, show_default=True, metavar="N",
              help="Crash loop: once the driver host has died in N cases in a row (or in more than "
                   "--max-crash-share of the last 50), the remaining cases are not run ('crash_loop'); 0: never.")
@click.option("--max-crash-share", type=FiniteFloat(0, 1, low_open=True), default=0.5, show_default=True,
              metavar="F", help="Crash loop: the share of the last 50 cases whose driver host died that ends the run.")
@ci_run_options
def run(driver: DriverRef, driver_options: tuple[tuple[str, str], ...], specs: tuple[str, ...],
        extra_specs: tuple[str, ...], keyword: str | None, families: tuple[str, ...], shard: str | None,
        **settings: object) -> None:
    """Run test cases against a driver (in a process of its own unless --in-process)."""
    from signal import strsignal as signal_name

    from vts.run import signals
    from vts.run.session import run_session

    paths = _spec_paths(specs, extra_specs)
    _pass_driver_env(settings.pop("driver_env"))  # type: ignore[arg-type]
    selection = None
    with signals.interrupt_on_signals():
        try:
            selection = _selection(paths, keyword, families, shard)
            _check_outputs(paths, {"--json": settings["json_path"], "--junit": settings["junit_path"],
                                   "--html": settings["html_path"], "--jsonl": settings["jsonl_path"]},
                           [settings["expected_failures"], settings["extension_allowlist"]])  # type: ignore[list-item]
            _check_specs(paths, selection, settings)
            if _no_spec_files(paths, families):
                code = EXIT_NO_TESTS
            else:
                plan = _run_plan(driver, driver_options, paths, keyword, families, shard, settings)
                outcome = run_session(plan, usage_error=_usage_error)
                code, selection = outcome.code, outcome.selection
        except KeyboardInterrupt:  # outside the run loop (which handles its own and writes the reports)
            code = signals.exit_status()
            click.echo(f"nnvts: interrupted ({signal_name(code - 128)})", err=True)
    if selection is not None:
        _warn_unmatched(selection)
    if code == EXIT_NO_TESTS:
        click.echo(f"nnvts: error: no case selected: {_why_nothing_selected(selection, paths)}", err=True)
    sys.exit(code)


def _sandbox_data() -> dict[str, str]:
    """Which sandbox driver hosts run in here (``nnvts info``): its label and its one-line description."""
    from vts.ipc.sandbox import probe

    kind = probe()
    return {"name": kind.label(), "description": kind.describe()}


def _pass_driver_env(names: Sequence[str]) -> None:
    """``--driver-env NAME``: these variables of the harness reach the driver too (every host, -j workers)."""
    from vts.ipc.sandbox import DRIVER_ENV

    if names:
        known = [n for n in os.environ.get(DRIVER_ENV, "").split(",") if n]
        os.environ[DRIVER_ENV] = ",".join(dict.fromkeys([*known, *names]))


def _run_plan(driver: DriverRef, driver_options: Sequence[tuple[str, str]], paths: Sequence[str],
              keyword: str | None, families: Sequence[str], shard: str | None, settings: dict[str, Any]):
    """The run's plan from ``nnvts run``'s parsed options: the one place its settings are gathered."""
    from vts.ipc.drivers import DriverNotFound, DriverRef
    from vts.run.affinity import default_jobs
    from vts.run.crashloop import CrashLoopPolicy
    from vts.run.plan import Isolation, Limits, ReportPlan, RunPlan, SelectionPlan, driver_ref

    try:
        oracle = DriverRef.of(settings["oracle"])  # --oracle text is parsed here, once
        driver = driver_ref(driver, driver_options)
    except DriverNotFound as error:
        _usage_error(str(error))
    return RunPlan(
        driver=driver,
        selection=SelectionPlan(tuple(paths), tuple(families) or None, keyword, shard),
        reports=ReportPlan(json=settings["json_path"], junit=settings["junit_path"], html=settings["html_path"],
                           jsonl=settings["jsonl_path"], verbose=settings["verbose"], quiet=settings["quiet"],
                           progress_interval=settings["progress_interval"], argv=tuple(sys.argv[1:])),
        isolation=Isolation(in_process=settings["in_process"], jobs=settings["jobs"] or default_jobs(MAX_JOBS),
                            pin_cpus=settings["pin_cpus"],
                            job_split=settings["job_split"], allow_network=settings["allow_network"]),
        limits=Limits(case_timeout=settings["case_timeout"], memory_limit_mib=settings["memory_limit"],
                      crash_loop=CrashLoopPolicy(settings["max_crashes"], settings["max_crash_share"])),
        ci=ci_options(settings), expected_failures=settings["expected_failures"],
        extension_allowlist=settings["extension_allowlist"], pool_kind=settings["pool_kind"], oracle=oracle,
        large_budget=settings["large_budget"], allow_unreproduced_crashes=settings["allow_unreproduced_crashes"])


def _check_outputs(paths: Sequence[str], outputs: dict[str, str | None], inputs: Sequence[str | None]) -> None:
    from vts.cli.params import check_outputs_spare_inputs
    from vts.spec.loader import iter_spec_paths

    check_outputs_spare_inputs(outputs, [*iter_spec_paths(paths), *(p for p in inputs if p)])


def _no_spec_files(paths: Sequence[str], families: Sequence[str]) -> bool:
    """An empty spec folder selects nothing (device-level families alone run only when named)."""
    from vts.spec.loader import iter_spec_paths

    return not families and not iter_spec_paths(paths)


def _why_nothing_selected(selection, paths: Sequence[str]) -> str:
    """The likeliest reasons a run selected no case, for the exit-5 message."""
    from vts.spec.loader import iter_spec_paths

    reasons = []
    if selection.keyword is not None and selection.keyword.unmatched():
        terms = ", ".join(repr(t) for t in selection.keyword.unmatched())
        reasons.append(f"-k term(s) {terms} matched no case")
    elif selection.keyword is not None:
        reasons.append("the -k expression matched no case")
    if not iter_spec_paths(paths):
        reasons.append(f"no spec files under {', '.join(paths)} (to run device-level families alone, name them "
                       "with --family)")
    if selection.shard is not None:
        reasons.append("--shard selected none of the matching cases")
    if selection.families:
        reasons.append(f"--family {', '.join(selection.families)} made no case from these specs for this driver")
    return "; ".join(reasons) or "the specs and families given make no case for this driver"


@main.command(name="list")
@selection_options
@click.option("--count", is_flag=True, help="Print only the number of cases.")
@ci_list_options
def list_cases(specs: tuple[str, ...], extra_specs: tuple[str, ...], keyword: str | None,
               families: tuple[str, ...], shard: str | None, count: bool, **ci: object) -> None:
    """Print the names of the cases a run would select, one per line."""
    from vts.run.runner import UnknownFamily, count_cases, iter_cases
    from vts.spec.errors import SpecError

    paths = _spec_paths(specs, extra_specs)
    selection = _selection(paths, keyword, families, shard)
    if not count:
        # A bad spec is an input error before any name is printed, as for run.  A count prints
        # nothing before the end, so the one pass below checks every spec as it loads it.
        _check_specs(paths, selection, ci)
    narrow_selection(selection, ci)
    total = 0
    try:
        if count:
            for _ in count_cases(selection):  # names only: no case is built
                total += 1
        else:
            out = sys.stdout
            for _family, case in iter_cases(selection):
                out.write(case.name + "\n")
    except (SpecError, UnknownFamily) as error:
        _usage_error(str(error))
    if count:
        click.echo(total)
    _warn_unmatched(selection)


@main.command()
@click.option("--specs", "specs", multiple=True, default=("specs",), show_default=True, metavar="PATH",
              help="Authoring specs to expand.")
@click.option("--out", "out_dir", default="generated_tests", show_default=True, type=OutputDir())
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when the output is stale.")
def generate(specs: tuple[str, ...], out_dir: str, check: bool) -> None:
    """Expand specs/ into concrete cases under generated_tests/."""
    from vts.spec.errors import SpecError
    from vts.spec.loader import load_paths
    from vts.spec.writer import write_generated

    try:
        if not check:
            from vts.cli.params import check_out_dir_spares_specs
            from vts.spec.loader import iter_spec_paths

            check_out_dir_spares_specs(out_dir, iter_spec_paths(list(specs)))
        files = list(load_paths(list(specs)))
        result = write_generated(files, out_dir, check=check)
    except SpecError as error:
        _usage_error(str(error))
        return
    except OSError as error:
        _usage_error(f"cannot write {out_dir}: {error.strerror or error} ({error.filename or out_dir})")
        return
    stale = list(getattr(result, "stale", ()) or ())
    if check:
        if stale:
            click.echo(f"nnvts: {shown(out_dir)} is stale ({len(stale)} files): run `nnvts generate`", err=True)
            for name in stale[:20]:
                click.echo(f"  {shown(name)}", err=True)
            sys.exit(EXIT_FAILED)
        click.echo(f"{out_dir} is up to date")
        return
    click.echo(f"generated {out_dir}: {result}")


@main.command()
@click.option("--driver", type=DriverParam(allow_exec=False), required=True,
              help="Driver to serve: an installed name or module:attr.")
@click.option("--socket", "socket_path", type=SocketPath(),
              help="Listen on this Unix socket path (each connection one more client of the same driver instance).")
@click.option("--fd", type=SocketFd(), help="Serve on this inherited, connected socket descriptor.")
@click.option("--threads", type=bounded_int(1, MAX_THREADS), default=1, show_default=True,
              help="Calls served concurrently.")
@click.option("--memory-limit", "memory_limit", type=bounded_int(0, MAX_MEMORY_MIB), default=0, show_default=True,
              metavar="MIB", help="Address-space limit in MiB (0: none).")
@click.option("--handshake-timeout", type=FiniteFloat(0, MAX_TIMEOUT, low_open=True), default=None, metavar="S",
              help="With --socket: close a connection that has not said HELLO within S seconds (default 10).")
@click.option("--idle-timeout", type=FiniteFloat(0, MAX_TIMEOUT, low_open=True), default=None, metavar="S",
              help="With --socket: close a connection silent for S seconds with nothing in flight (default 600).")
def serve(driver: DriverRef, socket_path: str | None, fd: int | None, threads: int, memory_limit: int,
          handshake_timeout: float | None, idle_timeout: float | None) -> None:
    """Serve a Python driver over the nnvts protocol (docs/protocol.md)."""
    from vts.ipc.host import serve as serve_driver

    if (socket_path is None) == (fd is None):
        _usage_error("give exactly one of --socket PATH and --fd N")
    sys.exit(serve_driver(driver, fd=fd, path=socket_path, threads=threads, memory_limit=memory_limit << 20,
                          handshake_timeout=handshake_timeout, idle_timeout=idle_timeout))


@main.command()
def drivers() -> None:
    """List the drivers found, with name, type, version and capabilities."""
    from vts.cli.describe import describe_drivers

    describe_drivers()


@main.command()
@click.option("--driver", type=DriverParam(), default="reference", show_default=True,
              help="Driver: an installed name, module:attr, or exec:COMMAND.")
@click.option("--size", type=bounded_int(32, 1024), default=224, show_default=True,
              help="MobileNet input edge (96 for a quick run).")
@click.option("--alpha", type=FiniteFloat(0, 4, low_open=True), default=1.0, show_default=True,
              help="MobileNet width multiplier.")
@click.option("--runs", type=bounded_int(1, 100_000), default=10, show_default=True,
              help="Timed execution pairs per workload (after one warm-up pair).")
@click.option("--factor", type=FiniteFloat(1, 1e6, low_open=True), default=5.0, show_default=True,
              help="Flag a declared execTime off from the measured ratio by more than this factor.")
@click.option("--json", "as_json", is_flag=True, help="Print the measurements as JSON.")
def bench(driver: DriverRef, size: int, alpha: float, runs: int, factor: float, as_json: bool) -> None:
    """Measure MobileNet speed against the reference CPU and compare with the declared execTime."""
    import json

    from vts.cli.device_info import opened_device
    from vts.families.capabilities_bench.measure import print_report, run_bench
    from vts.ipc.drivers import DriverNotFound, DriverRef
    from vts.ipc.process import HostStartError

    try:
        with opened_device(driver) as device:
            measurements = run_bench(device, DriverRef("reference").load(), size, alpha, runs)
    except (DriverNotFound, HostStartError) as error:
        _usage_error(str(error))
        return
    if as_json:
        click.echo(json.dumps([{"workload": m.workload, "operand_type": m.operand_type, "driver_ms": m.driver_ms,
                                "reference_ms": m.reference_ms, "measured": m.measured, "declared": m.declared,
                                "off_by": m.off_by, "flagged": m.flagged(factor), "note": m.note}
                               for m in measurements], indent=2))
    else:
        print_report(measurements, factor, driver, size)
    sys.exit(EXIT_FAILED if any(m.flagged(factor) for m in measurements) else EXIT_OK)


@main.command()
@click.option("--driver", type=DriverParam(), default="reference", show_default=True,
              help="Driver: an installed name, module:attr, or exec:COMMAND.")
@driver_option
@click.option("--json", "as_json", is_flag=True, help="Print the answers as JSON.")
@click.option("--expect-version", metavar="TEXT",
              help="Exit 1 unless the device's version string contains TEXT (pin the driver version in CI).")
def info(driver: DriverRef, driver_options: tuple[tuple[str, str], ...], as_json: bool,
         expect_version: str | None) -> None:
    """Show everything a device says about itself: name, type, version, capabilities, extensions, caching."""
    import json

    from vts.cli.device_info import device_info, opened_device, options_data, print_device_info, protocol_data
    from vts.ipc.drivers import DriverNotFound
    from vts.ipc.process import HostStartError

    driver = configured_driver(driver, driver_options, _usage_error)
    try:
        with opened_device(driver) as device:
            data = device_info(device)
            data["driver_options"] = options_data(driver, device)
            data["protocol"] = protocol_data(device)
            data["sandbox"] = _sandbox_data()
    except (DriverNotFound, HostStartError) as error:
        _usage_error(str(error))
        return
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        print_device_info(data)
        click.echo(f"sandbox: {data['sandbox']['description']}")
    if data["errors"]:
        # A query that failed or answered the wrong type is a broken driver, not a shorter table.
        click.echo(f"nnvts: {len(data['errors'])} device quer{'y' if len(data['errors']) == 1 else 'ies'} failed: "
                   + ", ".join(sorted(data["errors"])), err=True)
        sys.exit(EXIT_FAILED)
    if expect_version is not None and expect_version not in str(data.get("version")):
        click.echo(f"nnvts: version string {data.get('version')!r} does not contain {expect_version!r}", err=True)
        sys.exit(EXIT_FAILED)


for _command in CI_COMMANDS:
    main.add_command(_command)
main.add_command(fuzz)
main.add_command(corpus)
main.add_command(soak)

if __name__ == "__main__":
    main()
