"""One ``nnvts run``: load the driver, stream cases through the runner, report, decide the exit code."""

from __future__ import annotations

import contextlib
import datetime
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vts import __version__
from vts.families.base import DeviceInfo, RunOptions
from vts.ipc.drivers import DriverNotFound, DriverRef
from vts.model.extensions import default_registry
from vts.run import signals
from vts.run.ci import CiInputError, CiOptions, CiRun, prepare_ci
from vts.run.crashloop import CrashLoopPolicy, install_crash_guard
from vts.run.runner import Runner, Selection, UnknownFamily, count_cases, iter_cases, select_families, version_of
from vts.run.selection import ExpectationList

if TYPE_CHECKING:
    from vts.hal.interfaces import Device
    from vts.ipc.process import HostProcess
    from vts.report.files import FileReports
    from vts.report.terminal import TerminalReport


@dataclass
class RunRequest:
    driver: DriverRef
    selection: Selection
    json_path: str | None = None
    junit_path: str | None = None
    html_path: str | None = None
    jsonl_path: str | None = None
    case_timeout: float = 60.0
    pool_kind: str = "ashmem"
    expected_failures: str | None = None
    extension_allowlist: str | None = None
    verbose: bool = False
    argv: Sequence[str] = field(default_factory=list)
    #: Run the driver inside the harness process (fast, but a crash ends the run).
    in_process: bool = False
    #: Address-space limit of the driver process in MiB (0: none); ignored in process.
    memory_limit_mib: int = 4096
    #: Worker processes (each with its own driver); 1 runs everything in this process.
    jobs: int = 1
    #: The ``-k`` expression and ``--shard`` as typed (workers parse them again).
    keyword_text: str | None = None
    shard_text: str | None = None
    #: Terminal: only the closing summary; seconds between plain progress lines off a TTY (0: none).
    quiet: bool = False
    progress_interval: float = 5.0
    #: Re-runs, baselines, balanced shards, last-failed, strict expectations (vts/run/ci.py).
    ci: CiOptions = field(default_factory=CiOptions)
    #: Differential family: the driver whose answers are the expected ones (any driver spec).
    oracle: DriverRef | str = "reference"
    #: Differential family: seconds for its realistic-size cases (0: skipped).
    large_budget: float = 120.0
    #: UNREPRODUCED_CRASH cases are reported but do not fail the exit status.
    allow_unreproduced_crashes: bool = False
    #: ``-j N``: pin each worker and its driver host to cores of their own (vts/run/affinity.py).
    pin_cpus: bool = True
    #: ``-j N``: how workers share the cases, ``claim`` (models taken as they come, vts/run/claims.py) or ``hash``.
    job_split: str = "claim"
    #: When a driver whose host keeps dying stops being run (vts/run/crashloop.py).
    crash_loop: CrashLoopPolicy = field(default_factory=CrashLoopPolicy)


def run_session(request: RunRequest, usage_error: Callable[[str], None]) -> int:
    """Run and return the exit status: 0 all passed, 1 any failure, 5 no case selected, 128 + signal
    when interrupted (2 goes through ``usage_error``).

    The driver runs in a host process of its own unless ``in_process`` is
    set: a driver that crashes, hangs or exhausts memory then costs one case
    (CRASH / TIMEOUT), not the run.
    """
    from vts.ipc.process import HostProcess, HostStartError

    host: HostProcess | None = None
    try:
        ref = request.driver
        select_families(request.selection.families)
        oracle = DriverRef.of(request.oracle)  # --oracle text is parsed here, once
        if not oracle.is_exec:
            oracle.target  # noqa: B018 - an unknown --oracle is a usage error, not an error per case
        ci = prepare_ci(request.ci, request.selection, request.expected_failures, request.extension_allowlist)
        if request.jobs > 1:
            if not ref.is_exec:
                ref.target  # noqa: B018 - an unknown driver name is a usage error before workers start
            if ref.is_exec and request.in_process:
                raise DriverNotFound(f"{request.driver} is a program: it cannot run in process (drop --in-process)")
            return _run_parallel(request, ci)
        if request.in_process:
            if ref.is_exec:
                raise DriverNotFound(f"{request.driver} is a program: it cannot run in process (drop --in-process)")
            device: Device = ref.load()
        else:
            if not ref.is_exec:
                ref.target  # noqa: B018 - an unknown driver name is a usage error before any process starts
            host = HostProcess(request.driver, memory_limit=request.memory_limit_mib << 20)
            device = host.start()
    except (DriverNotFound, UnknownFamily, HostStartError, CiInputError) as error:
        usage_error(str(error))
        return 2
    try:
        return _run(request, device, host, ci)
    finally:
        if host is not None:
            host.stop()


def _run(request: RunRequest, device: Device, host: HostProcess | None, ci: CiRun) -> int:
    from vts.report.files import FileReports
    from vts.run.isolated import IsolatedRunner

    info = DeviceInfo(name=getattr(device, "name", request.driver.spec))
    header = _header(request, info.name, version_of(device),
                     "in_process" if host is None else "process", _device_type(device))
    header.update(ci.header_fields())
    expectations = ExpectationList.from_file(request.expected_failures) if request.expected_failures else None
    extensions = default_registry(request.extension_allowlist)
    options = RunOptions(pool_kind=request.pool_kind, case_timeout=request.case_timeout, extensions=extensions,
                         oracle=DriverRef.of(request.oracle), large_budget=request.large_budget, send_ahead=True)
    files = FileReports(header, request.jsonl_path, request.json_path, request.junit_path, request.html_path)
    terminal = _terminal(request, files)
    terminal.count_total(lambda: count_cases(request.selection, info, extensions.for_parsing()))  # names only
    runner = ci.install(Runner(device, options, expectations) if host is None else IsolatedRunner(
        device, options, expectations, host=host))
    install_crash_guard(runner, request.crash_loop)
    sinks = ci.sinks([terminal.before_reports(_renders(request)), files, terminal])
    completed = runner.run(iter_cases(request.selection, info, extensions.for_parsing()), sinks)
    if host is None:
        with contextlib.suppress(Exception):
            device.close()
    unwritten = _unwritten(files)
    if not completed:
        return signals.exit_status()
    return EXIT_IO_ERROR if unwritten else ci.exit_status(
        _exit_status(files.stream.summary(), request.allow_unreproduced_crashes))


#: Exit status of a run some report of which could not be written (a full disk): its results are incomplete.
EXIT_IO_ERROR = 2


def _unwritten(files: FileReports) -> bool:
    """Name each report that could not be written, one line each on stderr; whether there was any."""
    from vts.report.files import describe_failure

    for path, error in files.failures:
        print(f"nnvts: {describe_failure(path, error)}; the run's results are incomplete", file=sys.stderr,
              flush=True)
    return bool(files.failures)


def _terminal(request: RunRequest, files: FileReports) -> TerminalReport:
    from vts.report.terminal import TerminalReport

    return TerminalReport(verbose=request.verbose, quiet=request.quiet, progress_interval=request.progress_interval,
                          report_paths=lambda: files.written)


def _renders(request: RunRequest) -> bool:
    return bool(request.json_path or request.junit_path or request.html_path)


def _device_type(device: Device) -> str:
    """The device type's name for the report header; a failing call must not fail the run."""
    try:
        device_type = device.get_type()
        return str(getattr(device_type, "name", device_type))
    except Exception:
        return ""


def _header(request: RunRequest, name: str, version: str, isolation: str, device_type: str = "") -> dict[str, object]:
    selection = {"specs": list(request.selection.spec_paths), "families": list(request.selection.families or []),
                 "keyword": request.keyword_text, "shard": request.shard_text}
    return {
        "driver": {"ref": request.driver.spec, "name": name, "version": version, "isolation": isolation,
                   "type": device_type},
        "selection": {k: v for k, v in selection.items() if v},
        "nnvts_version": __version__,
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "argv": list(request.argv),
    }


#: Exit status of a run that selected no case (as pytest): a CI job must not pass on a typo in -k.
EXIT_NO_TESTS = 5


def _exit_status(summary: dict[str, int], allow_unreproduced_crashes: bool = False) -> int:
    if not summary.get("total"):
        return EXIT_NO_TESTS
    failing_verdicts = ["failed", "error", "crash", "timeout", "xpass", "crash_loop"]
    if not allow_unreproduced_crashes:
        failing_verdicts.append("unreproduced_crash")
    failing = sum(summary.get(v, 0) for v in failing_verdicts)
    return 1 if failing else 0


def _run_parallel(request: RunRequest, ci: CiRun) -> int:
    from vts.report.files import FileReports
    from vts.run.parallel import WorkerPlan, run_parallel
    from vts.spec.loader import checked_digests

    selection = request.selection
    plan = WorkerPlan(
        driver=request.driver, spec_paths=tuple(selection.spec_paths),
        families=tuple(selection.families) if selection.families else None, keyword=request.keyword_text,
        shard=None if ci.case_filter is not None else request.shard_text, jobs=request.jobs,
        in_process=request.in_process,
        memory_limit_mib=request.memory_limit_mib, case_timeout=request.case_timeout, pool_kind=request.pool_kind,
        expected_failures=request.expected_failures, extension_allowlist=request.extension_allowlist,
        extra={**ci.worker_extra(), "oracle": DriverRef.of(request.oracle), "large_budget": request.large_budget,
               "checked_specs": checked_digests(), "crash_loop": request.crash_loop},
        pin_cpus=request.pin_cpus, split=request.job_split)
    isolation = "in_process" if request.in_process else "process"

    def make_sinks(driver: dict[str, object]) -> list[object]:
        header = _header(request, str(driver["name"]), str(driver["version"]), isolation)
        header["jobs"] = request.jobs
        header.update(ci.header_fields())
        if driver.get("type"):
            header["driver"]["type"] = str(driver["type"])  # type: ignore[index]
        files = FileReports(header, request.jsonl_path, request.json_path, request.junit_path, request.html_path)
        terminal = _terminal(request, files)
        terminal.count_total(lambda: count_cases(selection, DeviceInfo(name=str(driver["name"])),
                                                default_registry(request.extension_allowlist).for_parsing()))
        return ci.sinks([terminal.before_reports(_renders(request)), files, terminal])

    matched: set[str] = set()
    completed, sinks = run_parallel(plan, make_sinks, matched)
    if selection.keyword is not None:
        for term in selection.keyword.terms:
            term.hits += term.text in matched  # what the workers matched, for the "matched no case" warning
    files = next((s for s in ci.unwrap(sinks) if isinstance(s, FileReports)), None)
    unwritten = files is not None and _unwritten(files)
    if not completed or files is None:
        return signals.exit_status()
    return EXIT_IO_ERROR if unwritten else ci.exit_status(
        _exit_status(files.stream.summary(), request.allow_unreproduced_crashes))
