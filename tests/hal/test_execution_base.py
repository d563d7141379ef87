"""The base ``Execution`` (AIDL v4 IExecution): one execution at a time, and a fenced execution is over once
its fence has signalled, so the next one is never refused after the client waited for it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import CompletedFencedCallback, Execution, FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.types import NO_TIMING_INFO, ExecutionResult, Request


class _LiveFences(PreparedModel):
    """Fenced executions that stay in flight until the test signals their fence (a device's real queue)."""

    def __init__(self) -> None:
        self.fences: list[SyncFence] = []

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        return ExecutionResult((), NO_TIMING_INFO)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        self.fences.append(SyncFence())
        return self.fences[-1], CompletedFencedCallback(NO_TIMING_INFO, NO_TIMING_INFO)


def _refused(call) -> None:
    with pytest.raises(DriverError) as raised:
        call()
    assert raised.value.status == ErrorStatus.INVALID_ARGUMENT


def test_a_fenced_execution_holds_the_execution_until_its_fence_signals_then_the_next_runs_at_once():
    prepared = _LiveFences()
    execution = Execution(prepared, Request([], [], []))
    fence, _ = execution.execute_fenced([])
    _refused(execution.execute)
    _refused(lambda: execution.execute_fenced([]))
    fence.signal()  # the client saw the fence: the execution is over, and the very next call must run
    execution.execute()
    second, _ = execution.execute_fenced([])
    _refused(execution.execute)
    second.signal(ok=False)  # over, in error: over all the same
    third, _ = execution.execute_fenced([])
    assert [f is third for f in prepared.fences] == [False, False, True]


def test_two_callers_finding_the_fence_signalled_do_not_both_run():
    execution = Execution(_LiveFences(), Request([], [], []))
    fence, _ = execution.execute_fenced([])
    fence.signal()
    held, _ = execution.execute_fenced([])  # took the mark over
    _refused(execution.execute)
    assert held is not None and not held.signalled
