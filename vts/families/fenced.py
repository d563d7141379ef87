"""Fenced execution (the HAL suite's FencedComputeTest, catalogue §2.4 and §3.3).

``execute_fenced`` with no wait fences, timing off and on.  On success the
driver returns either a sync fence or nothing (already done) and a callback.
When it returns a fence, the suite chains a second fenced execution waiting
on it, which must succeed too, and reads the second callback's status; the
outputs are then judged like any golden execution.  A model with a
zero-sized expected output, or one whose model dims are not all known,
must be refused (INVALID_ARGUMENT): a fenced request must fully specify
every output, and cannot describe a zero-sized one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vts.families._kit.executions import Answer, Executor
from vts.families._kit.judge import judge_success
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families.base import RunOptions
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, MeasureTiming, is_scalar_type
from vts.hal.errors import DriverError
from vts.hal.interfaces import PreparedModel
from vts.hal.types import NO_TIMING_INFO, Request
from vts.model.casemodel import BuiltRequest, CaseModel, element_count


def execute_fenced_twice(prepared: PreparedModel, request: Request, measure: MeasureTiming,
                         timeout: float) -> Answer:
    """The suite's fenced protocol: chain a second execution on a returned fence."""
    try:
        fence, callback = prepared.execute_fenced(request, [], measure)
        if fence is not None:
            fence, callback = prepared.execute_fenced(request, [fence], measure)
            if fence is not None and not fence.wait(timeout):
                return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO, "the sync fence signalled an error")
        if callback is None:
            return Answer(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING_INFO, "no callback returned on success")
        status, launched, _fenced = callback.get_execution_info()
        return Answer(ErrorStatus(status), (), launched)
    except DriverError as error:
        return Answer(error.status, error.output_shapes, error.timing or NO_TIMING_INFO, error.message)


def has_zero_sized_output(model: CaseModel, example_index: int) -> bool:
    return any(element_count(d.dims) == 0 for d in model.examples[example_index].outputs.values())


def fenced_must_refuse(model: CaseModel, example_index: int) -> bool:
    """A fenced request must fully specify every output and cannot describe a zero-sized one."""
    return has_zero_sized_output(model, example_index) or has_unspecified_output(model)


def refusal_problems(answer: Answer, where: str) -> list[str]:
    if answer.status == ErrorStatus.INVALID_ARGUMENT:
        return []
    return [f"{where} returned {answer.status.name}; an output that is zero-sized or not fully specified must "
            "be refused with INVALID_ARGUMENT"]


def judge_golden(model: CaseModel, example_index: int, built: BuiltRequest, answer: Answer, executor: Executor,
                 measure: MeasureTiming, where: str) -> list[str]:
    """Judge a golden execution on any path; the fenced path must refuse outputs it cannot describe."""
    if executor is Executor.FENCED and fenced_must_refuse(model, example_index):
        return refusal_problems(answer, where)
    return judge_success(model, model.examples[example_index], built, answer, measure, where)


def has_unspecified_output(model: CaseModel) -> bool:
    """An output whose model dims are not all known: a fenced request cannot describe it."""
    for index in model.main.outputs:
        operand = model.main.operands[index]
        if isinstance(operand.type, int) and is_scalar_type(operand.type):
            continue
        if not operand.dims or 0 in operand.dims:
            return True
    return False


@register_family
class FencedFamily(PerExampleFamily):
    name = "fenced"
    description = "fenced execution with and without timing, chained on the returned fence"

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        return [Execution(Executor.FENCED, measure) for measure in (MeasureTiming.NO, MeasureTiming.YES)]

    def execute(self, prepared: PreparedModel, built: BuiltRequest, execution: Execution,
                options: RunOptions) -> Answer:
        return execute_fenced_twice(prepared, built.request, execution.measure, options.case_timeout)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        return judge_golden(model, example_index, executed.built, executed.answer, Executor.FENCED,
                            executed.execution.measure, executed.where)
