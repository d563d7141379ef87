"""Where a run plan becomes a runner: the one module that starts a driver and builds a ``Runner``.

The run session, each ``-j`` worker, the pytest plugin and ``nnvts soak``
used to each build their runner, and each wired the CI features by hand.
They now all come here: ``preflight`` refuses a plan that cannot run
(before any process starts), ``start_driver`` loads the driver in process or
starts its host, and ``build_runner`` makes the runner and installs the
runner-side extensions the plan asks for (re-runs, the crash-loop guard).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vts.ipc.drivers import DriverNotFound, DriverRef
from vts.run.extensions import CrashGuard, Reruns, RunExtension
from vts.run.plan import RunPlan

if TYPE_CHECKING:
    from vts.families.base import RunOptions
    from vts.hal.interfaces import Device
    from vts.ipc.process import HostProcess
    from vts.run.runner import Runner


def check_driver(ref: DriverRef, in_process: bool = False) -> None:
    """A driver that cannot run is a usage error before any process starts (``DriverNotFound``).

    An unknown name or module, an option the driver does not accept, or a
    program asked to run in process.  It does not start the driver.
    """
    from vts.ipc.driver_options import check_options

    if ref.is_exec:
        if in_process:
            raise DriverNotFound(f"{ref} is a program: it cannot run in process (drop --in-process)")
        program = ref.argv[0]
        found = os.path.isfile(program) and os.access(program, os.X_OK) if os.sep in program else shutil.which(program)
        if not found:  # said before any worker starts: under -j N each worker would fail every case of its own
            raise DriverNotFound(f"driver {str(ref)!r} did not start: {program}: no executable file of that name")
        return
    ref.target  # noqa: B018 - resolves the name: an unknown driver fails here
    check_options(ref)


def preflight(plan: RunPlan) -> None:
    """Everything about ``plan`` that can be refused before it runs: families, the driver, the oracle."""
    from vts.run.runner import select_families

    select_families(list(plan.selection.families) if plan.selection.families else None)
    check_driver(plan.oracle)
    check_driver(plan.driver, plan.isolation.in_process)


@dataclass
class StartedDriver:
    """The device under test, and the host process it lives in (None when loaded in process)."""

    device: Device
    host: HostProcess | None = None

    @property
    def isolation(self) -> str:
        return "in_process" if self.host is None else "process"

    def close(self) -> None:
        """Stop the host, or close an in-process driver (whose failing ``close`` must not fail the run)."""
        if self.host is not None:
            self.host.stop()
        else:
            close = getattr(self.device, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()


def start_host(plan: RunPlan) -> HostProcess:
    """The driver's host process for ``plan``, not yet started."""
    from vts.ipc.process import HostProcess

    return HostProcess(plan.driver, memory_limit=plan.limits.memory_limit_bytes,
                       allow_network=plan.isolation.allow_network)


def start_driver(plan: RunPlan) -> StartedDriver:
    """Load the driver in process, or start its host (``HostStartError`` when it does not come up)."""
    if plan.isolation.in_process:
        return StartedDriver(plan.driver.load())
    host = start_host(plan)
    try:
        return StartedDriver(host.start(), host)
    except BaseException:
        host.stop()  # whatever of it did start (a program that said no HELLO) ends with the failure
        raise


def runner_extensions(plan: RunPlan) -> list[RunExtension]:
    """The extensions that wrap the runner, in the order they wrap it (re-runs inside the guard)."""
    return [Reruns(plan.ci.reruns), CrashGuard(plan.limits.crash_loop)]


def build_runner(plan: RunPlan, driver: StartedDriver, options: RunOptions | None = None, *,
                 rerun_crashes: bool = True) -> Runner:
    """The runner of ``plan`` over ``driver``, its runner-side extensions installed.

    ``options``: the plan's run options when the caller has made them already
    (they read the extension allowlist file: once per process is enough).
    """
    from vts.run.isolated import IsolatedRunner
    from vts.run.runner import Runner
    from vts.run.selection import ExpectationList

    expectations = ExpectationList.from_file(plan.expected_failures) if plan.expected_failures else None
    options = plan.run_options() if options is None else options
    runner: Runner = Runner(driver.device, options, expectations) if driver.host is None else IsolatedRunner(
        driver.device, options, expectations, host=driver.host, rerun_crashes=rerun_crashes)
    for extension in runner_extensions(plan):
        extension.install(runner)
    return runner
