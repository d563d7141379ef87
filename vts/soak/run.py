"""One ``nnvts soak``: select cases, start one driver host, soak it, print and write the report."""

from __future__ import annotations

import datetime
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vts import __version__
from vts.soak.loop import SoakConfig, run_soak

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef

#: The family a soak repeats unless --family says otherwise.
DEFAULT_FAMILY = "generated"


@dataclass
class SoakRequest:
    driver: DriverRef
    spec_paths: Sequence[str]
    config: SoakConfig
    keyword: str | None = None
    families: Sequence[str] = ()
    json_path: str | None = None
    pool_kind: str = "ashmem"
    memory_limit_mib: int = 4096
    argv: Sequence[str] = field(default_factory=list)


def soak_plan(request: SoakRequest) -> Any:
    """The soak as a run plan: one driver host, no re-runs, no crash-loop guard (a soak watches the one host)."""
    from vts.run.crashloop import CrashLoopPolicy
    from vts.run.plan import Limits, RunPlan, SelectionPlan

    return RunPlan(
        driver=request.driver,
        selection=SelectionPlan(tuple(request.spec_paths), tuple(request.families) or (DEFAULT_FAMILY,),
                                request.keyword),
        limits=Limits(case_timeout=request.config.call_timeout, memory_limit_mib=request.memory_limit_mib,
                      crash_loop=CrashLoopPolicy(0)),
        pool_kind=request.pool_kind, send_ahead=False)


def build_workloads(plan: Any, host: Any) -> list[Any]:
    """Golden workloads for generated cases, case workloads (through the isolated runner) for the rest."""
    from vts.run.assemble import StartedDriver, build_runner
    from vts.run.runner import iter_cases
    from vts.soak.workloads import CaseWorkload, GoldenWorkload

    options = plan.run_options()
    runner = None
    workloads: list[Any] = []
    for family, case in iter_cases(plan.selection.build(), None, options.extensions.for_parsing()):
        if family.name == DEFAULT_FAMILY:
            if case.example is not None:  # expect_failure models have no golden to repeat
                workloads.append(GoldenWorkload(case, options))
            continue
        if runner is None:
            runner = build_runner(plan, StartedDriver(host.device, host), options, rerun_crashes=False)
        workloads.append(CaseWorkload(family, case, runner))
    return workloads


def soak_session(request: SoakRequest, usage_error: Callable[[str], None],
                 echo: Callable[[str], None] = print) -> int:
    """Run the soak; 0 passed, 1 failed, 5 nothing selected, 130/143/129 interrupted (2: ``usage_error``)."""
    from vts.ipc.drivers import DriverNotFound
    from vts.ipc.process import HostStartError
    from vts.run import signals
    from vts.run.assemble import start_host
    from vts.run.runner import UnknownFamily, select_families
    from vts.run.selection import SelectionError
    from vts.soak.report import print_summary, report_dict, write_json
    from vts.spec.errors import SpecError

    try:
        ref = request.driver
        if not ref.is_exec:
            ref.target  # noqa: B018 - an unknown driver is a usage error before a process starts
        select_families(list(request.families) or [DEFAULT_FAMILY])
    except (DriverNotFound, UnknownFamily) as error:
        usage_error(str(error))
        return 2
    plan = soak_plan(request)
    host = start_host(plan)
    try:
        host.start()
    except HostStartError as error:
        usage_error(str(error))
        return 2
    try:
        try:
            workloads = build_workloads(plan, host)
        except (SpecError, SelectionError, UnknownFamily) as error:
            usage_error(str(error))
            return 2
        if not workloads:
            echo("nnvts soak: no case selected")
            return 5
        pid = host.driver_pid()  # the driver itself, inside its namespace when contained
        assert pid is not None
        starts = host.starts
        version = _version(host)

        def call_deadline(seconds: float | None) -> None:
            import time

            connection = host.device.connection if host.alive() else None
            if connection is not None:
                connection.deadline = None if seconds is None else time.monotonic() + seconds

        with signals.interrupt_on_signals():  # SIGTERM / SIGHUP end the soak like Ctrl-C: report kept
            report = run_soak(lambda: host.device, pid, workloads, request.config, call_deadline)
        if host.starts != starts and report.lost is None:
            report.lost = "the driver process was lost and restarted during the soak"
            report.failures.insert(0, report.lost)
    finally:
        host.stop()
    print_summary(report, str(request.driver), echo)
    if request.json_path:
        write_json(request.json_path, report_dict(report, _header(request, version, pid)))
    if report.interrupted:
        return signals.exit_status()
    return 0 if report.passed else 1


def _version(host: Any) -> str:
    try:
        return str(host.device.get_version_string())
    except Exception as error:
        return f"<error: {error}>"


def _header(request: SoakRequest, version: str, pid: int) -> dict[str, Any]:
    return {"driver": {"ref": str(request.driver), "version": version, "pid": pid,
                       "options": dict(request.driver.options)},
            "nnvts_version": __version__,
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(), "argv": list(request.argv)}
