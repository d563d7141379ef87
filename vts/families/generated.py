"""The generated (golden execution) family: every example of every model, executed and compared.

One case per (model, example), named ``SPEC.MODEL[.EXAMPLE]``.  Inside a
case the example runs on the synchronous and asynchronous paths, and every
answer is judged: status NONE, timing rules, shapes, then values.

The suite's GeneratedTest matrix is {timing NO, YES} x {SYNC, ASYNC, BURST}
(VTS GeneratedTestHarness.cpp): a driver must report no timing on any path when not
asked (EvaluatePreparedModel), and a path that is only ever asked for timing cannot show it
reports timing unasked.  Running all four (path, timing) pairs on every
example would double the family's cost, so the first example of each model
runs the full matrix (catching a path that answers timing unasked on the
first execution of the model) and every later example runs two executions
with the timing choices alternating by example index, so a multi-example
model also crosses both paths with both timings on different inputs.

Models marked ``expect_failure`` are judged the way the suite judges them
(VTS VtsHalNeuralnetworks.cpp ``validateFailure``): the support query must still answer NONE; the driver
may then mark the operation unsupported and refuse preparation, or prepare
it and fail the execution with a status other than NONE, no shapes and no
timing.  Claiming support and then refusing preparation fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from vts.families._kit.executions import Executor, timing_problems
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families.base import Case, CaseFailure, Outcome, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.model.casemodel import CaseModel

#: The full (executor, timing) matrix, run on the first example of each model.
FULL_MATRIX = ((Executor.SYNC, MeasureTiming.NO), (Executor.ASYNC, MeasureTiming.YES),
               (Executor.SYNC, MeasureTiming.YES), (Executor.ASYNC, MeasureTiming.NO))


def executions_for(example_index: int) -> tuple[tuple[Executor, MeasureTiming], ...]:
    """(executor, timing) pairs an example runs through (see the module docstring)."""
    if example_index == 0:
        return FULL_MATRIX
    return FULL_MATRIX[2:] if example_index % 2 else FULL_MATRIX[:2]


@register_family
class GeneratedFamily(PerExampleFamily):
    name = "generated"
    description = "golden execution of every model example (sync and async, with and without timing)"

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure:
            yield Case(model.case_name(), self.name, model, None, spec_path)
            return
        for index, example in enumerate(model.examples):
            yield Case(model.case_name(example), self.name, model, index, spec_path)

    def refused(self, model: CaseModel, why: str) -> Outcome:
        if model.expect_failure and not why.startswith("unsupported:"):
            return passed(f"refused as expected ({why})")
        # An operation the driver does not claim says nothing about whether it catches the
        # model's fault: a refusal for lack of support is a skip, never a pass.
        return skipped(why) if model.expect_failure else super().refused(model, why)

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        if model.expect_failure:
            return [Execution(Executor.SYNC)]
        return [Execution(executor, measure) for executor, measure in executions_for(example_index)]

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        if model.expect_failure:
            return self._expected_failure(executed)
        return super().judge(model, example_index, executed, earlier)

    def _expected_failure(self, executed: Executed) -> Outcome:
        answer = executed.answer
        if answer.ok:
            raise CaseFailure("the model must fail (expect_failure) but executed with status NONE")
        problems = timing_problems(answer, MeasureTiming.NO)
        if answer.output_shapes and answer.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            problems.append(f"{answer.status.name} returned with output shapes")
        if problems:
            return failed(problems[0], tuple(problems))
        return passed(f"failed as expected at execution ({answer.status.name})")
