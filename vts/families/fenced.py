"""Fenced execution (the HAL suite's FencedComputeTest, GeneratedTestHarness.cpp EvaluatePreparedModel).

``execute_fenced`` with no wait fences, timing off and on.  On success the
driver returns either a sync fence or nothing (already done) and a callback.
When it returns a fence, the suite chains a second fenced execution waiting
on it, which must succeed too, and reads the second callback's status; the
outputs are then judged like any golden execution.  A model with a
zero-sized expected output, or one whose model dims are not all known,
must be refused (INVALID_ARGUMENT): a fenced request must fully specify
every output, and cannot describe a zero-sized one.

Chaining on a returned fence only ever hands a driver fences that are
already signalled (or its own), so a driver that starts without waiting
for ``wait_for`` passes it.  On each model's first example the family also
hands over fences of its own that signal later (NN HAL 1.3 IPreparedModel.hal
``executeFenced``, as the AOSP sample driver's SampleDriver.cpp keeps it: it
"waits for all waitFor fences"; "for each wait fence ... wait (no timeout)
and anything but signalled -> GENERAL_FAILURE"; the duration
``timeout_after_fence`` counts from when the fences signal):

* **waits**: the input pool holds garbage when the call is made; the real
  inputs are written only just before the fence signals (a window
  later, below).  The execution must not have finished (nor written an output)
  before the signal, and its outputs must be the golden's: a driver that
  does not wait reads inputs that are not there yet;
* **never signalled, then an error**: a fence that does not signal, with a
  1 ms ``timeout_after_fence``: a window later nothing may have run
  (no success, no output written; the timeout has not started); then the
  fence signals an error and the execution must fail (any status but NONE,
  through the call, the returned fence or the callback).

The golden executions above run while those fences pend (``OwnFenceChecks``), and they set how long the
fences pend: as long as the goldens took, at least ``SHORTEST_PENDING_S`` and at most ``PENDING_S``
(``signal_at``).  The goldens measure how soon this driver, on this model and on this machine, gets from a
call to its outputs; a driver that does not wait would have read the garbage inputs in that time.

Out of process the fences travel as eventfds (``vts.ipc.fences``), so the
driver host's driver waits on the harness's signal exactly as in process.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vts.families._kit.executions import Answer, Executor
from vts.families._kit.fenced_path import execute_fenced_twice, fenced_must_refuse, judge_golden
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families.base import Case, Outcome, RunOptions, failed
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, SyncFence
from vts.hal.types import NO_TIMING_INFO
from vts.ipc.clients import set_concurrency
from vts.model.casemodel import BuiltRequest, CaseModel, build_request

#: The longest a fence handed to the driver stays pending before the harness signals it (a driver that holds
#: the golden executions until the fences signal keeps them pending this long).
PENDING_S = 0.03
#: The shortest: a model's goldens may be over sooner, while a call still travels to the driver.
SHORTEST_PENDING_S = 0.005
#: The ``timeout_after_fence`` given with a fence that never signals (ns): the HAL counts it from the signal.
AFTER_FENCE_NS = 1_000_000
GARBAGE = 0x5A
SENTINEL = 0xA5


@register_family
class FencedFamily(PerExampleFamily):
    name = "fenced"
    description = "fenced execution with and without timing, chained on the returned fence"

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        """Out of process, a case with own-fence checks has the host serve ``OVERLAP_CALLS`` calls at once."""
        assert case.model is not None
        if case.example or fenced_must_refuse(self.case_model(case.model), 0):
            return super().run(case, device, options)
        previous = set_concurrency(device, OVERLAP_CALLS)
        try:
            return super().run(case, device, options)
        finally:
            if previous is not None:
                set_concurrency(device, previous)

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        return [Execution(Executor.FENCED, measure) for measure in (MeasureTiming.NO, MeasureTiming.YES)]

    def run_executions(self, model: CaseModel, example_index: int, prepared: PreparedModel,
                       options: RunOptions, label: str = "") -> Outcome:
        """On each model's first example, the fences of the harness's own that signal later come first.

        The golden executions run inside the checks' window rather than after it (``OwnFenceChecks``): the
        window is a wait, the goldens are work the case does anyway, and their end closes the window.  The
        outcome is the one the checks-then-goldens order gave: the own-fence checks' problems if they have
        any, else the goldens'.
        """
        if example_index != 0 or fenced_must_refuse(model, 0):
            return super().run_executions(model, example_index, prepared, options, label)
        checks = OwnFenceChecks(model, prepared, options)
        try:
            checks.launch()
            goldens = super().run_executions(model, example_index, prepared, options, label)
            problems = checks.finish()
        finally:
            checks.close()
        if problems:
            return failed(problems[0], tuple(problems))
        return goldens

    def execute(self, prepared: PreparedModel, built: BuiltRequest, execution: Execution,
                options: RunOptions) -> Answer:
        return execute_fenced_twice(prepared, built.request, execution.measure, options.case_timeout)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        return judge_golden(model, example_index, executed.built, executed.answer, Executor.FENCED,
                            executed.execution.measure, executed.where)


class _Launched:
    """``execute_fenced`` called on a thread of its own: a driver that waits may block the call itself."""

    def __init__(self, call: Callable[[], tuple[SyncFence | None, Any]]) -> None:
        self.result: tuple[SyncFence | None, Any] | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()

        def run() -> None:
            try:
                self.result = call()
            except BaseException as error:  # a verdict, never an escape: judged by the caller
                self.error = error
            finally:
                self._done.set()

        threading.Thread(target=run, daemon=True, name="nnvts-fenced-call").start()

    def returned(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    def finished_ok(self) -> bool:
        """Returned, and already complete with success (no fence, or its fence signalled without error)."""
        if not self._done.is_set() or self.result is None:
            return False
        fence, _callback = self.result
        return fence is None or (fence.signalled and fence.wait(0))

    def answer(self, timeout: float) -> Answer:
        """The execution's outcome once the call returned and its own fence (if any) signalled."""
        if not self.returned(timeout):
            return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO,
                          f"execute_fenced did not return within {timeout:g} s of its wait fence signalling")
        if isinstance(self.error, DriverError):
            return Answer(self.error.status, tuple(self.error.output_shapes), self.error.timing or NO_TIMING_INFO,
                          self.error.message)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        fence, callback = self.result
        if fence is not None and not fence.wait(timeout):
            return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO, "the returned fence signalled an error")
        if callback is None:
            return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO, "no callback returned on success")
        status, launched, _fenced = callback.get_execution_info()
        return Answer(ErrorStatus(status), (), launched)


def _before_signal_problems(launched: _Launched, built: BuiltRequest, what: str) -> list[str]:
    problems = []
    if launched.finished_ok():
        problems.append(f"{what}: execute_fenced completed with NONE before its wait fence signalled (a driver "
                        "must wait for every wait-for fence before it starts)")
    if built.output_pool.read(0, built.output_pool.size) != bytes([SENTINEL]) * built.output_pool.size:
        problems.append(f"{what}: outputs were written before the wait fence signalled")
    return problems


class _OwnFenceCheck:
    """One execution on a fence of the harness's own: launched, looked at before the signal, then judged."""

    what = ""

    def __init__(self, model: CaseModel, prepared: PreparedModel, options: RunOptions) -> None:
        self.model, self.prepared, self.options = model, prepared, options
        self.built = build_request(model, model.examples[0], options.pool_kind, extensions=options.extensions)
        self.fence = SyncFence()
        self.launched: _Launched | None = None

    def launch(self) -> None:
        raise NotImplementedError

    def before_signal(self) -> list[str]:
        assert self.launched is not None
        return _before_signal_problems(self.launched, self.built, self.what)

    def signal(self) -> None:
        raise NotImplementedError

    def judge(self) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        self.built.close()


class _WaitsForTheFence(_OwnFenceCheck):
    """Inputs written only just before the wait fence signals: a driver that does not wait reads garbage."""

    what = "fenced execution waiting on a fence that signals later"

    def launch(self) -> None:
        built = self.built
        self.inputs = built.input_pool.read(0, built.input_pool.size)
        built.input_pool.write(0, bytes([GARBAGE]) * built.input_pool.size)
        built.output_pool.write(0, bytes([SENTINEL]) * built.output_pool.size)
        self.launched = _Launched(lambda: self.prepared.execute_fenced(built.request, [self.fence], MeasureTiming.NO))

    def signal(self) -> None:
        self.built.input_pool.write(0, self.inputs)
        self.fence.signal()

    def judge(self) -> list[str]:
        assert self.launched is not None
        answer = self.launched.answer(self.options.case_timeout)
        return judge_golden(self.model, 0, self.built, answer, Executor.FENCED, MeasureTiming.NO,
                            f"{self.what} (inputs written just before the signal)")


class _NeverSignalledThenError(_OwnFenceCheck):
    """A fence that does not signal (1 ms timeout_after_fence): nothing may run; then it signals an error."""

    what = "fenced execution on a fence that has not signalled, timeout_after_fence 1 ms"

    def launch(self) -> None:
        built = self.built
        built.output_pool.write(0, bytes([SENTINEL]) * built.output_pool.size)
        self.launched = _Launched(lambda: self.prepared.execute_fenced(built.request, [self.fence], MeasureTiming.NO,
                                                                       None, None, AFTER_FENCE_NS))

    def signal(self) -> None:
        self.fence.signal(ok=False)

    def judge(self) -> list[str]:
        assert self.launched is not None
        answer = self.launched.answer(self.options.case_timeout)
        if answer.ok:
            return [f"{self.what}: the fence then signalled an error, and the execution succeeded; the HAL "
                    "requires a failure (GENERAL_FAILURE) when a wait fence is not signalled successfully"]
        if answer.message.startswith("execute_fenced did not return"):
            return [f"{self.what}: the fence then signalled an error: {answer.message}"]
        return []


#: Calls the driver host serves at once while the own-fence checks wait: both checks' calls (a driver may block
#: in ``execute_fenced`` until its fence signals) and the golden executions beside them.
OVERLAP_CALLS = 3


def signal_at(launched_at: float, goldens_over_at: float | None) -> float:
    """When the own fences signal: once the goldens are over, within [SHORTEST_PENDING_S, PENDING_S] of the launch.

    ``goldens_over_at`` is None while the goldens still run (a driver may hold them until the signal).
    """
    latest = launched_at + PENDING_S
    if goldens_over_at is None:
        return latest
    return min(latest, max(launched_at + SHORTEST_PENDING_S, goldens_over_at))


class OwnFenceChecks:
    """Both own-fence checks in flight together, so a model waits ``PENDING_S`` once, not once per check.

    ``launch`` starts both executions and a signaller thread; the caller runs the golden executions, then
    calls ``finish``.  The signaller waits until the goldens are over (``signal_at``: at least
    ``SHORTEST_PENDING_S``, at most ``PENDING_S`` from the launch), looks at both checks, then signals every
    fence.  Work that the driver holds up until the fences signal (a host or a driver serving one call at
    a time, a driver holding a lock across a fence wait) resumes at ``PENDING_S`` instead of deadlocking
    the case.

    Why the goldens' time: a driver that does not wait starts a check's execution when the call reaches
    it, before the goldens, which were called after.  By the time the goldens are over, it has had as
    long as it needed for two whole executions of this model to read the garbage inputs.  That holds for
    a driver that returns from ``execute_fenced`` at once and does the work later, which a wait that
    ended when both calls had returned missed, and it scales with the machine's load as the driver does.
    A fixed wait longer than the goldens costs the case that much idle time and catches nothing more,
    unless a driver starts work later than it finishes a whole execution.

    Every fence is signalled before any answer is awaited: a driver blocked in the first execution's wait
    would otherwise never see the second fence signal.

    Out of process the host is asked (``SET_CONCURRENCY``) to serve ``OVERLAP_CALLS`` calls at once while
    the checks are in flight, so the golden executions are not queued behind the two waiting calls; the
    setting is restored when the case ends (``FencedFamily.run``).  A driver that does not know the
    message serves them after the signal, as before.
    """

    def __init__(self, model: CaseModel, prepared: PreparedModel, options: RunOptions) -> None:
        self.model, self.prepared, self.options = model, prepared, options
        self.checks: list[_OwnFenceCheck] = []
        self.observed: list[str] = []
        self._signaller: threading.Thread | None = None
        self._observe_error: BaseException | None = None
        self._finished = False
        self._goldens_over = threading.Event()

    def launch(self) -> None:
        for kind in (_WaitsForTheFence, _NeverSignalledThenError):
            self.checks.append(kind(self.model, self.prepared, self.options))
            self.checks[-1].launch()
        self._signaller = threading.Thread(target=self._observe_then_signal, args=(time.monotonic(),),
                                           daemon=True, name="nnvts-fence-signaller")
        self._signaller.start()

    def _observe_then_signal(self, launched_at: float) -> None:
        try:
            over = self._goldens_over.wait(max(0.0, launched_at + PENDING_S - time.monotonic()))
            time.sleep(max(0.0, signal_at(launched_at, time.monotonic() if over else None) - time.monotonic()))
            self.observed = [problem for check in self.checks for problem in check.before_signal()]
        except BaseException as error:  # re-raised by ``finish`` on the case's thread, as when it ran there
            self._observe_error = error
        finally:
            for check in self.checks:
                check.signal()

    def finish(self) -> list[str]:
        """Every problem: those seen before the signal, then each check's judgement (call after the goldens)."""
        self._finished = True
        self._goldens_over.set()
        if self._signaller is not None:
            self._signaller.join()
        if self._observe_error is not None:
            raise self._observe_error
        problems = list(self.observed)
        for check in self.checks:
            problems += check.judge()
        return problems

    def close(self) -> None:
        """Release the checks' pools once their executions are over, whatever the caller's work did.

        When the golden executions ended the case early (an exception), the checks' calls may still be
        running: their fences are signalled (by the signaller, or here if it never started) and their
        answers awaited, as ``finish`` would, before the pools they write into are closed.
        """
        self._goldens_over.set()
        if self._signaller is not None:
            self._signaller.join()
        else:
            for check in self.checks:
                check.signal()
        if not self._finished:
            for check in self.checks:
                with contextlib.suppress(Exception):
                    check.judge()
        for check in self.checks:
            check.close()

