"""The fenced path's own rules, for every family that executes fenced.

The suite's fenced protocol (VTS GeneratedTestHarness.cpp EvaluatePreparedModel,
Executor::FENCED: chain a second execution on a returned sync fence and read the
second callback's status) and the request a fenced execution cannot describe
(a zero-sized output, or one whose model dims are not all known: it must be
refused with INVALID_ARGUMENT).  In the kit because ``fenced``, ``concurrency``,
``memory_domain`` and ``quantization_coupling`` all run the fenced path and must
judge it by the same rule.
"""

from __future__ import annotations

from vts.families._kit.executions import Answer, Executor
from vts.families._kit.judge import judge_success
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
