"""Run extensions: the CI features as plug-ins of one small protocol, not code wired into the runner.

pytest's ``junitxml`` and ``rerunfailures`` hook themselves into the run; the
run loop never names them.  nnvts's CI features do the same through
``RunExtension``'s four hooks: a field for the reports' header, the runner
(re-runs, the crash-loop guard wrap its ``run_case``), the result sinks (the
baseline annotates each result, stored durations and flaky counts watch
them) and the exit status (``--fail-on new``, ``--fail-on-flaky``, lost
coverage).  ``vts.run.assemble`` applies the extensions a plan asks for, in
one place, whichever way the run goes (``-j`` workers install only the runner
hooks: the parent alone holds the sinks and decides the exit status).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from vts.report.baseline import Baseline, BaselineTally
from vts.results import CaseResult, Verdict
from vts.run.crashloop import CrashLoopPolicy


class RunExtension:
    """One feature's hooks into a run; each defaults to doing nothing."""

    def install(self, runner: Any) -> None:
        """Wrap the runner (every process that runs cases calls this)."""

    def wrap(self, sinks: list[Any]) -> list[Any]:
        """The sinks results go to, this extension's in front (the process that reports calls this)."""
        return sinks

    def exit_status(self, code: int) -> int:
        """Adjust a finished run's 0 or 1 (the process that reports calls this)."""
        return code


class Reruns(RunExtension):
    """``--reruns N``: an unexpectedly failing case runs again alone (vts/run/reruns.py)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def install(self, runner: Any) -> None:
        from vts.run.reruns import install_reruns

        install_reruns(runner, self.count)


class CrashGuard(RunExtension):
    """``--max-crashes``: a driver whose host keeps dying stops being run (vts/run/crashloop.py)."""

    def __init__(self, policy: CrashLoopPolicy | None) -> None:
        self.policy = policy

    def install(self, runner: Any) -> None:
        from vts.run.crashloop import install_crash_guard

        install_crash_guard(runner, self.policy)


class _ForwardingSink:
    """A sink in front of others: sees each result first, then hands it on; finishes them last."""

    def __init__(self, inner: list[Any]) -> None:
        self.inner = inner

    def add(self, result: CaseResult) -> None:
        for sink in self.inner:
            sink.add(result)

    def finish(self, interrupted: bool) -> None:
        for sink in self.inner:
            sink.finish(interrupted)


class BaselineGate(RunExtension):
    """``--baseline OLD``: each result annotated with its status against an earlier run; ``--fail-on new``
    and ``--fail-on-lost-coverage`` decide the exit status from the tally."""

    def __init__(self, baseline: Baseline, fail_on: str = "any", fail_on_lost_coverage: bool = False) -> None:
        self.baseline = baseline
        self.fail_on = fail_on
        self.fail_on_lost_coverage = fail_on_lost_coverage
        self.tally = BaselineTally()

    def wrap(self, sinks: list[Any]) -> list[Any]:
        return [_BaselineSink(self, sinks)]

    def exit_status(self, code: int) -> int:
        if code == 1 and self.fail_on == "new" and not self.tally.regression_count:
            code = 0
        if self.fail_on_lost_coverage and self.tally.lost_count:
            code = 1
        return code


class _BaselineSink(_ForwardingSink):
    def __init__(self, gate: BaselineGate, inner: list[Any]) -> None:
        super().__init__(inner)
        self.gate = gate

    def add(self, result: CaseResult) -> None:
        result = self.gate.baseline.annotate(result)
        self.gate.tally.add(result)
        super().add(result)

    def finish(self, interrupted: bool) -> None:
        if not any(_renders_baseline(s) for s in self.inner):
            _print_section(self.inner, self.gate.tally.lines(self.gate.baseline.path))
        super().finish(interrupted)


class DurationStore(RunExtension):
    """``--store-durations FILE``: every case's duration, written at the end for balanced shards."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.measured: dict[str, float] = {}

    def wrap(self, sinks: list[Any]) -> list[Any]:
        return [_DurationSink(self, sinks)]


class _DurationSink(_ForwardingSink):
    def __init__(self, store: DurationStore, inner: list[Any]) -> None:
        super().__init__(inner)
        self.store = store

    def add(self, result: CaseResult) -> None:
        self.store.measured[result.name] = result.duration
        super().add(result)

    def finish(self, interrupted: bool) -> None:
        try:
            if self.store.measured:
                from vts.run.durations import store_durations

                store_durations(self.store.path, self.store.measured)
        finally:
            super().finish(interrupted)


class FlakyGate(RunExtension):
    """``--fail-on-flaky``: a case that failed and then passed on a re-run fails the run."""

    def __init__(self) -> None:
        self.flaky = 0

    def wrap(self, sinks: list[Any]) -> list[Any]:
        return [_FlakySink(self, sinks)]

    def exit_status(self, code: int) -> int:
        return 1 if self.flaky else code


class _FlakySink(_ForwardingSink):
    def __init__(self, gate: FlakyGate, inner: list[Any]) -> None:
        super().__init__(inner)
        self.gate = gate

    def add(self, result: CaseResult) -> None:
        self.gate.flaky += result.verdict is Verdict.FLAKY
        super().add(result)


def wrap_sinks(extensions: Sequence[RunExtension], sinks: list[Any]) -> list[Any]:
    """The sinks with every extension's in front, the first extension outermost."""
    for extension in reversed(extensions):
        sinks = extension.wrap(sinks)
    return sinks


def exit_status(extensions: Sequence[RunExtension], code: int) -> int:
    """The run's 0 or 1 as the extensions decide it; other codes (interrupted, usage) pass through."""
    if code not in (0, 1):
        return code
    for extension in extensions:
        code = extension.exit_status(code)
    return code


def _renders_baseline(sink: Any) -> bool:
    """Whether a terminal report prints the baseline comparison itself (then ours would say it twice)."""
    return callable(getattr(sink, "print_baseline", None))


def _print_section(sinks: Sequence[Any], lines: list[str]) -> None:
    """Print through the terminal report's console when there is one (above its progress display)."""
    console = next((getattr(s, "console", None) for s in sinks if getattr(s, "console", None) is not None), None)
    for line in lines:
        if console is not None:
            console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr)
