"""Infinite-loop timeout (the HAL suite's InfiniteLoopTimeoutTest, GeneratedTestHarness.cpp).

A model marked expect_failure whose first operation is a WHILE that never
ends is executed with a 1 ms loop timeout on the synchronous, asynchronous
and fenced paths, with and without timing: the driver must abort the loop
and report MISSED_DEADLINE_TRANSIENT or MISSED_DEADLINE_PERSISTENT.  A
GENERAL_FAILURE skips the case (the suite's rule for non-fully-specified
modes is evaluated first); anything else fails.

Beyond the suite, the loop timeout must actually be honoured: the HAL's
``loopTimeoutDuration`` bounds how long the driver may run the loop before
it aborts, so each execution's wall time (call to answer, fence signalled
for the fenced path) must stay within the requested timeout plus
``LOOP_TIMEOUT_SLACK_S`` (500 ms, room for scheduling, IPC and the
driver's own checks on a loaded machine).  A driver that ignores the
requested timeout and stops at its own 2 s default (the HAL's
``LoopTimeoutDurationNs`` default) answers the right status 2 s late and
fails here.  This is a functional bound of the contract, four times wider
than the requested timeout is long, not a performance threshold.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from vts.families._kit.executions import Answer, execute
from vts.families._kit.loop_abort import LOOP_TIMEOUT_NS, loop_abort_judgement
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families.base import Case, RunOptions
from vts.families.registry import register_family
from vts.hal.enums import OperationType
from vts.hal.interfaces import PreparedModel
from vts.model.casemodel import BuiltRequest, CaseModel


@register_family
class InfiniteLoopFamily(PerExampleFamily):
    name = "infinite_loop_timeout"
    description = "a WHILE loop that never ends must be stopped by the loop timeout"

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        ops = model.main.operations
        if model.expect_failure and ops and ops[0].type == OperationType.WHILE:
            yield Case(f"{self.name}/{model.case_name()}", self.name, model, 0, spec_path)

    def execute(self, prepared: PreparedModel, built: BuiltRequest, execution: Execution,
                options: RunOptions) -> Answer:
        return execute(prepared, built.request, execution.executor, execution.measure,
                       loop_timeout=LOOP_TIMEOUT_NS, timeout=options.case_timeout)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        return loop_abort_judgement(executed)
