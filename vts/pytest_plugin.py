"""pytest plugin: every nnvts case a pytest item, so pytest's tools (``-k``, ``-x``, ``--lf``, xdist) apply.

Usage (the plugin is registered through the ``pytest11`` entry point)::

    pytest --nnvts-specs generated_tests --nnvts-driver reference -n auto

With ``--nnvts-specs`` and no positional arguments, pytest collects the
spec paths instead of its usual test paths; every spec file is a pytest
file whose items are its cases (``generated_tests/add_binary.json::
add_binary.relu``), and the device-level cases (discovery, capabilities,
caching, ...) hang under the first spec path (``...::nnvts-device::
discovery/...``).  Positional arguments still narrow the run
(``pytest --nnvts-specs generated_tests "generated_tests/add_binary.json"``).
Without ``--nnvts-specs`` the plugin does nothing, so the project's own
test suite in the same environment is unaffected.

Verdicts map onto pytest outcomes: passed and flaky pass, skipped is a
skip with its reason, xfail (``--nnvts-expected-failures``) is xfailed,
and every failing verdict (failed, crash, timeout, error, xpass, ...) is a
failure whose message starts with the verdict and the nnvts reason.  The
verdict is also a user property (``nnvts_verdict``) in pytest's JUnit XML.

Each pytest process (each xdist worker) starts one isolated driver host on
its first case and stops it at the end of the session.  Collection keeps
only names; a case is built from its spec file when it runs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from vts.results import CaseResult
    from vts.run.caseindex import CaseIndex

DEVICE_NODE = "nnvts-device"
_PLUGIN = "nnvts-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nnvts", "nnvts conformance cases as pytest items")
    group.addoption("--nnvts-specs", action="append", default=[], metavar="PATH",
                    help="Spec file or directory whose cases become pytest items (repeatable); enables the plugin.")
    group.addoption("--nnvts-driver", default="reference", metavar="DRIVER",
                    help="Driver: an installed name, module:attr, or exec:COMMAND (default: reference).")
    group.addoption("--nnvts-driver-option", action="append", default=[], metavar="KEY=VALUE",
                    help="An option of the driver (repeatable), as nnvts run --driver-option.")
    group.addoption("--nnvts-family", action="append", default=[], metavar="NAME",
                    help="Test family (repeatable). Default: every default family, as nnvts run.")
    group.addoption("--nnvts-expected-failures", metavar="FILE",
                    help="Case-name globs expected to fail: xfailed, or a failure when they pass. An entry "
                         "matching no collected case is a usage error.")
    group.addoption("--nnvts-timeout", default=60.0, metavar="SECONDS",
                    help="Seconds a case may take before it is a timeout (default 60).")
    group.addoption("--nnvts-memory-limit", default=4096, metavar="MIB",
                    help="Address-space limit of the driver process in MiB (0: none; default 4096).")
    group.addoption("--nnvts-reruns", default=0, metavar="N",
                    help="Re-run an unexpectedly failing case up to N times on a fresh driver host (as nnvts run "
                         "--reruns): pass after fail is the verdict flaky, a pytest pass.")
    group.addoption("--nnvts-max-crashes", default=10, metavar="N",
                    help="Crash loop (as nnvts run --max-crashes): once the driver host has died in N cases in a "
                         "row, the remaining cases fail as crash_loop without running (0: never; default 10).")
    group.addoption("--nnvts-in-process", action="store_true",
                    help="Load the driver into the pytest process (a crash then ends the session).")
    group.addoption("--nnvts-jsonl", metavar="PATH",
                    help="Write the nnvts results stream (one JSON line per case, as nnvts run --jsonl); with "
                         "xdist the controller writes it. Feeds nnvts report, merge, --baseline, --last-failed.")
    group.addoption("--nnvts-json", metavar="PATH", help="Write the nnvts JSON report at the end of the session.")
    group.addoption("--nnvts-html", metavar="PATH", help="Write the nnvts HTML report at the end of the session.")


def pytest_configure(config: pytest.Config) -> None:
    specs = config.getoption("nnvts_specs")
    if not specs:
        return
    from vts.run.runner import UnknownFamily, select_families

    try:
        select_families(config.getoption("nnvts_family") or None)
    except UnknownFamily as error:
        raise pytest.UsageError(f"--nnvts-family: {error}") from None
    check_options(config)
    check_driver(config.getoption("nnvts_driver"), config.getoption("nnvts_driver_option"))
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = list(specs)  # the spec paths replace testpaths / the current directory
    plugin = NnvtsSession(config, specs)
    config.pluginmanager.register(plugin, _PLUGIN)
    if not hasattr(config, "workerinput"):  # xdist workers: the controller has checked already
        plugin.check_expectations()


def check_options(config: pytest.Config) -> None:
    """Each option checked as ``nnvts run`` checks its twin (``vts.run.option_checks``, the same code and words):
    numbers in range and finite, lists regular UTF-8 files read without blocking (a FIFO is refused, never
    waited on), reports writable and never an input.  The checked values replace the given ones."""
    from vts.run import option_checks as check

    def checked(flag: str, convert: Any, value: Any) -> Any:
        try:
            return convert(value)
        except check.OptionValueError as error:
            raise pytest.UsageError(f"{flag}: {error}") from None

    numbers = {"timeout": lambda v: check.finite_float(v, 0, check.MAX_TIMEOUT, low_open=True),
               "memory_limit": lambda v: check.bounded_int(v, 0, check.MAX_MEMORY_MIB),
               "reruns": lambda v: check.bounded_int(v, 0, check.MAX_RERUNS),
               "max_crashes": lambda v: check.bounded_int(v, 0, check.MAX_CRASHES)}
    for name, convert in numbers.items():
        dest = f"nnvts_{name}"
        setattr(config.option, dest, checked("--" + dest.replace("_", "-"), convert, config.getoption(dest)))
    expected = config.getoption("nnvts_expected_failures")
    if expected:
        checked("--nnvts-expected-failures", check.read_input_file, expected)
    outputs = {f"--nnvts-{kind}": config.getoption(f"nnvts_{kind}") for kind in ("jsonl", "json", "html")}
    for flag, path in outputs.items():
        if path:
            checked(flag, check.output_file, path)
    checked("nnvts", lambda _: check.check_outputs_spare_inputs(outputs, [expected] if expected else [], "session"),
            None)


def check_driver(spec: str, options: list[str] | tuple[str, ...] = ()) -> None:
    """A usage error, once, at session start, for a driver that cannot be found or configured.

    Without it a misspelt ``--nnvts-driver`` collected every case (thousands)
    and failed each one trying to start the driver.  The check resolves the
    name (entry point or ``module:attr``) and finds the module or program; it
    does not start the driver.  Driver options are checked against what the
    driver accepts (which imports a Python driver's module, only when given).
    """
    import importlib.util
    import shlex
    import shutil

    from vts.ipc.drivers import DriverNotFound
    from vts.run.assemble import check_driver as check_configured

    try:
        ref = driver_ref(spec, options)
        if ref.is_exec:
            program = shlex.split(ref.command)[0]
            if shutil.which(program) is None and not os.access(program, os.X_OK):
                raise DriverNotFound(f"exec driver program {program!r} not found or not executable")
            return
        module = ref.target.partition(":")[0]
        if importlib.util.find_spec(module) is None:
            raise DriverNotFound(f"cannot import driver module {module!r} (on PYTHONPATH? installed?)")
        if ref.options:
            check_configured(ref)
    except (DriverNotFound, ImportError, ValueError) as error:
        raise pytest.UsageError(f"--nnvts-driver {spec}: {error}") from None


def driver_ref(spec: str, options: list[str] | tuple[str, ...] = ()) -> Any:
    """The driver reference of ``--nnvts-driver`` with its ``--nnvts-driver-option`` values."""
    from vts.ipc.driver_options import parse_driver_option
    from vts.run.plan import driver_ref as with_options

    return with_options(spec, [parse_driver_option(text) for text in options])


class NnvtsSession:
    """Per pytest process: the case index, and one driver host started on the first case."""

    def __init__(self, config: pytest.Config, specs: list[str]) -> None:
        self.config = config
        self.specs = specs
        self.roots = [Path(os.path.abspath(p)) for p in specs]  # as pytest names paths (symlinks kept)
        self._index: CaseIndex | None = None
        self._runner: Any = None
        self._host: Any = None
        self._start_error: str | None = None
        self._reports: Any = None  # nnvts report files, written by the controller (or the only process)

    # -- nnvts reports ----------------------------------------------------------------

    def pytest_sessionstart(self) -> None:
        option = self.config.getoption
        wanted = option("nnvts_jsonl"), option("nnvts_json"), option("nnvts_html")
        if hasattr(self.config, "workerinput") or not any(wanted):
            return
        import datetime
        import platform

        from vts import __version__
        from vts.report.files import FileReports

        driver = option("nnvts_driver")
        header = {"driver": {"ref": driver, "name": driver, "version": "",
                             "isolation": "in_process" if option("nnvts_in_process") else "process",
                             "options": dict(self.plan().driver.options)},
                  "nnvts_version": __version__, "runner": "pytest",
                  "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                  "host": platform.node(), "argv": list(self.config.invocation_params.args)}
        jsonl, json_path, html_path = wanted
        self._reports = FileReports(header, jsonl, json_path, None, html_path)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        result = getattr(item, "nnvts_result", None)
        if call.when == "call" and result is not None:
            report.nnvts_result = result  # travels with the report to the xdist controller
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "nnvts_result", None)
        if self._reports is not None and data is not None and report.when == "call":
            from vts.results import CaseResult

            self._reports.add(CaseResult.from_json(data))

    # -- collection -------------------------------------------------------------------

    @property
    def index(self) -> CaseIndex:
        if self._index is None:
            from vts.model.extensions import default_registry
            from vts.run.caseindex import CaseIndex

            families = self.config.getoption("nnvts_family") or None
            self._index = CaseIndex(families, default_registry().for_parsing())
        return self._index

    def spec_path(self, path: Path) -> str | None:
        """The path of a spec file as nnvts names it (under the spec path given), or None."""
        from vts.spec.loader import is_spec_name

        if not is_spec_name(path.name):
            return None
        for given, root in zip(self.specs, self.roots, strict=True):
            if path == root:
                return given
            if root in path.parents:
                return os.path.join(given, os.path.relpath(path, root))
        return None

    def check_expectations(self) -> None:
        path = self.config.getoption("nnvts_expected_failures")
        if not path:
            return
        from vts.run.ci import unmatched_message
        from vts.run.selection import ExpectationList
        from vts.spec.errors import SpecError
        from vts.spec.loader import iter_spec_paths

        try:
            expectations = ExpectationList.from_file(path)
        except (OSError, UnicodeDecodeError) as error:
            raise pytest.UsageError(f"--nnvts-expected-failures {path}: {error}") from None
        names = [ref.name for ref in self.index.device_refs()]
        try:
            for spec in iter_spec_paths(self.specs):
                names += [ref.name for ref in self.index.file_refs(spec)]
        except SpecError as error:
            raise pytest.UsageError(str(error)) from None
        unmatched = expectations.unmatched_among(names)
        if unmatched:
            raise pytest.UsageError(f"{path}: {unmatched_message(unmatched)}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if path == self.roots[0]:
            return SpecRoot.from_parent(parent, path=path)
        return None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        spec = self.spec_path(file_path)
        if spec is None:
            return None
        return SpecFile.from_parent(parent, path=file_path, spec=spec, with_device=file_path == self.roots[0])

    # -- running ----------------------------------------------------------------------

    def run(self, spec: str | None, name: str) -> CaseResult:
        family, case = self.index.case(spec, name)
        return self.runner().run_case(family, case)

    def runner(self) -> Any:
        if self._start_error is not None:
            raise DriverUnavailable(self._start_error)
        if self._runner is None:
            try:
                self._runner = self._start()
            except Exception as error:
                self._start_error = f"{type(error).__name__}: {error}"
                raise DriverUnavailable(self._start_error) from None
        return self._runner

    def _start(self) -> Any:
        """The runner of this pytest process, assembled from the session's plan as ``nnvts run``'s is."""
        from vts.run.assemble import build_runner, start_driver

        plan = self.plan()
        driver = start_driver(plan)
        self._host = driver.host
        return build_runner(plan, driver)

    def plan(self) -> Any:
        """The run plan of the pytest options (the cases are pytest's: its selection names the specs only)."""
        from vts.run.ci import CiOptions
        from vts.run.crashloop import CrashLoopPolicy
        from vts.run.plan import Isolation, Limits, RunPlan, SelectionPlan

        option = self.config.getoption
        return RunPlan(
            driver=driver_ref(option("nnvts_driver"), option("nnvts_driver_option")),
            selection=SelectionPlan(tuple(self.specs), tuple(option("nnvts_family")) or None),
            isolation=Isolation(in_process=option("nnvts_in_process")),
            limits=Limits(case_timeout=option("nnvts_timeout"), memory_limit_mib=option("nnvts_memory_limit"),
                          crash_loop=CrashLoopPolicy(option("nnvts_max_crashes"))),
            ci=CiOptions(reruns=option("nnvts_reruns")),
            expected_failures=option("nnvts_expected_failures"), send_ahead=False)

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        if self._reports is not None:
            self._reports.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
            self._reports = None
        if self._host is not None:
            self._host.stop()
            self._host = None
        elif self._runner is not None:
            close = getattr(self._runner.device, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):  # a driver failing to close must not fail the session
                    close()
        self._runner = None


class DriverUnavailable(Exception):
    """The driver did not start in this pytest process: every case fails with why."""


class CaseFailed(Exception):
    """A failing nnvts verdict, shown as verdict, reason and detail (no Python traceback)."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(f"{result.verdict.value}: {result.reason}")
        self.result = result

    def describe(self) -> str:
        return "\n".join([f"{self.result.verdict.value}: {self.result.reason}", *self.result.details])


def _session(config: pytest.Config) -> NnvtsSession:
    plugin = config.pluginmanager.get_plugin(_PLUGIN)
    assert isinstance(plugin, NnvtsSession)
    return plugin


class SpecRoot(pytest.Dir):
    """The first spec directory: the device-level cases first, then its files as any directory."""

    def collect(self) -> Any:
        yield DeviceCases.from_parent(self, name=DEVICE_NODE)
        yield from super().collect()


class DeviceCases(pytest.Collector):
    def collect(self) -> Any:
        for ref in _session(self.config).index.device_refs():
            yield CaseItem.from_parent(self, name=ref.name, spec=None, family=ref.family)


class SpecFile(pytest.File):
    def __init__(self, *, spec: str, with_device: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.with_device = with_device

    def collect(self) -> Any:
        from vts.spec.errors import SpecError

        session = _session(self.config)
        if self.with_device:  # the first spec path is a file: the device-level cases hang here
            yield DeviceCases.from_parent(self, name=DEVICE_NODE)
        try:
            refs = session.index.file_refs(self.spec)
        except SpecError as error:
            raise self.CollectError(str(error)) from None
        for ref in refs:
            yield CaseItem.from_parent(self, name=ref.name, spec=self.spec, family=ref.family)


class CaseItem(pytest.Item):
    """One nnvts case; it is built and run when pytest runs the item."""

    def __init__(self, *, spec: str | None, family: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.family = family

    def runtest(self) -> None:
        from vts.results import Verdict

        result = _session(self.config).run(self.spec, self.name)
        self.user_properties.append(("nnvts_verdict", result.verdict.value))
        self.nnvts_result = result.to_json()
        if result.verdict.is_failure:
            raise CaseFailed(result)
        if result.verdict is Verdict.SKIPPED:
            pytest.skip(result.reason)
        if result.verdict is Verdict.XFAIL:
            pytest.xfail(result.reason)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.describe()
        if isinstance(excinfo.value, DriverUnavailable):
            return f"error: the driver did not start: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"nnvts {self.family} case {self.name}"
