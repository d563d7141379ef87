"""One ``nnvts run``: load the driver, stream cases through the runner, report, decide the exit code."""

from __future__ import annotations

import contextlib
import datetime
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vts import __version__
from vts.extensions import default_registry
from vts.families.base import DeviceInfo, RunOptions
from vts.run.drivers import DriverNotFound, DriverRef
from vts.run.runner import Runner, Selection, UnknownFamily, iter_cases, select_families
from vts.run.selection import ExpectationList


@dataclass
class RunRequest:
    driver: str
    selection: Selection
    json_path: str | None = None
    junit_path: str | None = None
    jsonl_path: str | None = None
    case_timeout: float = 60.0
    pool_kind: str = "ashmem"
    expected_failures: str | None = None
    extension_allowlist: str | None = None
    verbose: bool = False
    argv: Sequence[str] = field(default_factory=list)


def run_session(request: RunRequest, usage_error: Callable[[str], None]) -> int:
    """Run and return the exit status: 0 all passed, 1 any failure (2 goes through ``usage_error``)."""
    from vts.report.files import FileReports
    from vts.report.terminal import TerminalReport

    try:
        ref = DriverRef(request.driver)
        device = ref.load()
        select_families(request.selection.families)
    except (DriverNotFound, UnknownFamily) as error:
        usage_error(str(error))
        return 2
    info = DeviceInfo(name=getattr(device, "name", request.driver))
    header = {
        "driver": {"ref": request.driver, "name": info.name, "version": _safe(device.get_version_string)},
        "nnvts_version": __version__,
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "argv": list(request.argv),
    }
    expectations = ExpectationList.from_file(request.expected_failures) if request.expected_failures else None
    extensions = default_registry(request.extension_allowlist)
    options = RunOptions(pool_kind=request.pool_kind, case_timeout=request.case_timeout, extensions=extensions)
    files = FileReports(header, request.jsonl_path, request.json_path, request.junit_path)
    terminal = TerminalReport(verbose=request.verbose)
    runner = Runner(device, options, expectations)
    completed = runner.run(iter_cases(request.selection, info, extensions.for_parsing()), [files, terminal])
    with contextlib.suppress(Exception):
        device.close()
    if not completed:
        return 130
    summary = files.stream.summary()
    failing = sum(summary.get(v, 0) for v in ("failed", "error", "crash", "timeout", "xpass"))
    return 1 if failing else 0


def _safe(call: Callable[[], str]) -> str:
    try:
        return str(call())
    except Exception as error:
        return f"<error: {error}>"
