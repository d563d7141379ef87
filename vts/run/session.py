"""One ``nnvts run``: a plan in, an exit status out (in process, out of process, or on ``-j`` workers).

``run_session`` is the one function that turns a ``RunPlan`` into what runs
it: it checks the plan, decides the CI filters, then runs the cases here
(the driver in process or in its host) or hands the plan to the ``-j``
scheduler; either way the same reports, extensions and exit rules apply.
"""

from __future__ import annotations

import datetime
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vts import __version__
from vts.bounds import shown
from vts.families.base import DeviceInfo
from vts.ipc.drivers import DriverNotFound
from vts.run import signals
from vts.run.assemble import StartedDriver, build_runner, preflight, start_driver
from vts.run.ci import CiInputError, CiRun, prepare_ci
from vts.run.extensions import RunExtension, exit_status, wrap_sinks
from vts.run.plan import RunPlan
from vts.run.runner import Selection, UnknownFamily, count_cases, iter_cases, version_of

if TYPE_CHECKING:
    from vts.hal.interfaces import Device
    from vts.report.files import FileReports
    from vts.report.terminal import TerminalReport


@dataclass
class RunOutcome:
    """How a run ended, and the selection it ran (its ``-k`` terms know what they matched)."""

    code: int
    selection: Selection


def run_session(plan: RunPlan, usage_error: Callable[[str], None]) -> RunOutcome:
    """Run ``plan``: 0 all passed, 1 any failure, 5 no case selected, 128 + signal when interrupted
    (2 goes through ``usage_error``).

    The driver runs in a host process of its own unless the plan runs it in
    process: a driver that crashes, hangs or exhausts memory then costs one
    case (CRASH / TIMEOUT), not the run.
    """
    from vts.ipc.process import HostStartError

    selection = plan.selection.build()
    driver: StartedDriver | None = None
    try:
        preflight(plan)
        ci = prepare_ci(plan.ci, selection, plan.expected_failures, plan.extension_allowlist)
        _sandbox_outputs(plan)
        if plan.isolation.jobs > 1:
            if not plan.isolation.in_process:
                # A driver that does not start (a program refusing its options in OPEN, a factory refusing an
                # option's value: an unknown execution provider) is a usage error as with -j 1, not every case
                # an error in every worker: started once here and stopped (0.1-0.3 s).
                start_driver(plan).close()
            return RunOutcome(_run_parallel(plan, ci, selection), selection)
        driver = start_driver(plan)
        _announce_sandbox(plan)
    except (DriverNotFound, UnknownFamily, HostStartError, CiInputError) as error:
        usage_error(str(error))
        return RunOutcome(2, selection)
    try:
        return RunOutcome(_run_here(plan, driver, ci, selection), selection)
    finally:
        driver.close()


def _sandbox_outputs(plan: RunPlan) -> None:
    """Before any driver starts: the result files are hidden from every sandbox (the stream made now, so that
    there is a file to mask), and the one line saying which sandbox is in force."""
    if plan.isolation.in_process:
        return
    from vts.ipc.sandbox import hide_outputs

    reports = plan.reports
    hide_outputs([reports.jsonl, reports.json, reports.junit, reports.html], create=[reports.jsonl])


def _announce_sandbox(plan: RunPlan) -> None:
    """The one line saying which sandbox runs the driver, once it has started (a usage error stays one line)."""
    if not plan.isolation.in_process:
        from vts.ipc.sandbox import announce

        announce()


def _run_here(plan: RunPlan, driver: StartedDriver, ci: CiRun, selection: Selection) -> int:
    """The cases in this process, one runner over the started driver."""
    device = driver.device
    info = DeviceInfo(name=getattr(device, "name", plan.driver.spec))
    header = report_header(plan, info.name, version_of(device), driver.isolation, _device_type(device))
    header.update(ci.header_fields())
    extensions = ci.extensions()
    options = plan.run_options()
    files, sinks = _sinks(plan, header, extensions,
                          lambda: count_cases(selection, info, options.extensions.for_parsing()), ci.expected_seconds)
    runner = build_runner(plan, driver, options)
    completed = runner.run(iter_cases(selection, info, options.extensions.for_parsing()), sinks)
    return _finish(plan, files, extensions, completed)


def _sinks(plan: RunPlan, header: dict[str, Any], extensions: list[RunExtension],
           count: Callable[[], Any], expected_seconds: float | None = None) -> tuple[FileReports, list[Any]]:
    """The file reports and the terminal, behind the extensions' sinks; the terminal counts ``count()``
    (``expected_seconds``: the stored durations of the cases, for an ETA from the start)."""
    from vts.report.files import FileReports

    reports = plan.reports
    files = FileReports(header, reports.jsonl, reports.json, reports.junit, reports.html)
    terminal = _terminal(plan, files, expected_seconds)
    terminal.count_total(count)  # names only
    return files, wrap_sinks(extensions, [terminal.before_reports(reports.renders), files, terminal])


def _finish(plan: RunPlan, files: FileReports | None, extensions: list[RunExtension], completed: bool) -> int:
    """The exit status of a run whose sinks have finished."""
    unwritten = files is not None and _unwritten(files)
    for why in files.tampered if files is not None else ():
        print(f"nnvts: error: results tampered: {why}; the reports are rendered from the harness's own record",
              file=sys.stderr, flush=True)
        unwritten = True
    if not completed or files is None:
        return signals.exit_status()
    return EXIT_IO_ERROR if unwritten else exit_status(
        extensions, _exit_status(files.stream.summary(), plan.allow_unreproduced_crashes))


#: Exit status of a run some report of which could not be written (a full disk): its results are incomplete.
EXIT_IO_ERROR = 2


def _unwritten(files: FileReports) -> bool:
    """Name each report that could not be written, one line each on stderr; whether there was any."""
    from vts.report.files import describe_failure

    for path, error in files.failures:
        print(f"nnvts: {shown(describe_failure(path, error))}; the run's results are incomplete", file=sys.stderr,
              flush=True)
    return bool(files.failures)


def _terminal(plan: RunPlan, files: FileReports, expected_seconds: float | None = None) -> TerminalReport:
    from vts.report.terminal import TerminalReport

    reports = plan.reports
    return TerminalReport(verbose=reports.verbose, quiet=reports.quiet, progress_interval=reports.progress_interval,
                          report_paths=lambda: files.written, workers=plan.isolation.jobs,
                          expected_seconds=expected_seconds)


def _device_type(device: Device) -> str:
    """The device type's name for the report header; a failing call must not fail the run."""
    try:
        device_type = device.get_type()
        return str(getattr(device_type, "name", device_type))
    except Exception:
        return ""


def report_header(plan: RunPlan, name: str, version: str, isolation: str, device_type: str = "") -> dict[str, Any]:
    """The reports' header: the driver as configured (with its options), the selection, where and when."""
    return {
        "driver": {"ref": plan.driver.spec, "name": name, "version": version, "isolation": isolation,
                   "sandbox": _sandbox_label(isolation), "type": device_type, "options": dict(plan.driver.options)},
        "selection": plan.selection.header(),
        "nnvts_version": __version__,
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "argv": list(plan.reports.argv),
    }


def _sandbox_label(isolation: str) -> str:
    """Which sandbox ran the driver, for the header: ``bwrap 0.8.0``, ``nnvts``, ``none``."""
    if isolation == "in_process":
        return "none (in process)"
    from vts.ipc import contain
    from vts.ipc.sandbox import probe

    return "none" if contain.disabled() else probe().label()


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


def _run_parallel(plan: RunPlan, ci: CiRun, selection: Selection) -> int:
    """The cases on ``plan.isolation.jobs`` workers; the reports open once the first names its driver."""
    from vts.run.parallel import JobScheduler, WorkerContext
    from vts.spec.loader import checked_digests

    context = WorkerContext(plan, case_filter=ci.case_filter, checked_specs=tuple(checked_digests()))
    extensions = ci.extensions()
    opened: list[FileReports] = []

    def make_sinks(driver: dict[str, object]) -> list[object]:
        _announce_sandbox(plan)
        header = report_header(plan, str(driver["name"]), str(driver["version"]), plan.isolation.label,
                               str(driver.get("type") or ""))
        header["jobs"] = plan.isolation.jobs
        header.update(ci.header_fields())
        info = DeviceInfo(name=str(driver["name"]))
        files, sinks = _sinks(plan, header, extensions,
                              lambda: count_cases(selection, info, plan.run_options().extensions.for_parsing()),
                              ci.expected_seconds)
        opened.append(files)
        return sinks

    scheduler = JobScheduler(context, make_sinks)
    completed = scheduler.run()
    if selection.keyword is not None:
        for term in selection.keyword.terms:
            term.hits += term.text in scheduler.matched  # what the workers matched, for the "matched no case" warning
    return _finish(plan, opened[0] if opened else None, extensions, completed)
