"""What a dynamic-output-shape execution must answer (the HAL suite's DynamicOutputShapeTest rules).

Two families run these executions: ``dynamic_output_shape`` over the older calls, and ``with_config`` over
AIDL v4's ``*WithConfig`` calls (Android 13's VTS reruns its DYNAMIC_SHAPE kind with ``useConfig``).  The
rules are one, so they live here and both judge with ``judge_dynamic``:

* UNSPECIFIED (buffers of the right size): NONE with one shape per output, each sufficient and equal to
  the golden's, and correct values;
* INSUFFICIENT (output 0 one byte short): OUTPUT_INSUFFICIENT_SIZE with one shape per output, output 0
  insufficient and every other sufficient, ranks right and every known dim right;
* a fenced execution needs fully specified outputs: INVALID_ARGUMENT in both.

A driver without dynamic-shape support may answer GENERAL_FAILURE, and the case is then skipped, as the
suite does, but only until an UNSPECIFIED execution of the same prepared model off the fenced path has
succeeded: the driver then has no excuse left, and GENERAL_FAILURE fails the case.
"""

from __future__ import annotations

from collections.abc import Sequence

from vts.families._kit.executions import Answer, Executor
from vts.families._kit.judge import judge_success
from vts.families._kit.per_example import Executed, Judgement
from vts.families.base import skipped
from vts.hal.enums import ErrorStatus, OperationType
from vts.model.casemodel import CaseExample, CaseModel, dtype_of, element_count

__all__ = ["MODES", "dynamic_shapes_apply", "judge_dynamic", "output_zero_bytes"]

#: The two modes of an example, UNSPECIFIED first so that support is known before INSUFFICIENT runs.
MODES = ("unspecified", "insufficient")
#: Operations whose outputs a dynamic-shape case cannot make unknown (the suite leaves their models out).
_NOT_APPLICABLE = {int(OperationType.RANK), int(OperationType.IF), int(OperationType.WHILE)}


def dynamic_shapes_apply(model: CaseModel) -> bool:
    """Whether the suite runs dynamic-shape executions of ``model`` (no RANK, IF or WHILE)."""
    return not model.operation_types() & _NOT_APPLICABLE


def output_zero_bytes(model: CaseModel, example_index: int) -> int:
    """The golden size in bytes of output 0: INSUFFICIENT is skipped when it is at most one byte (as the suite)."""
    first = model.main.operands[model.main.outputs[0]]
    golden = model.examples[example_index].outputs.get(0)
    return element_count(golden.dims) * dtype_of(first.type).itemsize if golden else 0


def judge_dynamic(model: CaseModel, example_index: int, executed: Executed, earlier: Sequence[Executed]) -> Judgement:
    """The problems of one dynamic-shape execution (``execution.mode`` names its mode), or a skip."""
    execution, answer, where = executed.execution, executed.answer, executed.where
    example = model.examples[example_index]
    fenced = execution.executor is Executor.FENCED
    if answer.status == ErrorStatus.GENERAL_FAILURE and not fenced:
        supported_by = next((e.where for e in earlier if e.execution.mode == "unspecified"
                             and e.execution.executor is not Executor.FENCED), None)
        if supported_by is None:
            return skipped(f"{where}: GENERAL_FAILURE (no dynamic output shape support)")
        expected = "OUTPUT_INSUFFICIENT_SIZE with the output shapes" if execution.mode == "insufficient" else "NONE"
        return [f"returned GENERAL_FAILURE, expected {expected}: the {supported_by} succeeded with every shape "
                "reported, so the driver supports dynamic output shapes"]
    if fenced:
        return ([] if answer.status == ErrorStatus.INVALID_ARGUMENT else
                [f"returned {answer.status.name}, expected INVALID_ARGUMENT (fenced execution needs fully "
                 "specified outputs)"])
    if execution.mode == "unspecified":
        problems = judge_success(model, example, executed.built, answer, execution.measure, "")
        if answer.ok and len(answer.output_shapes) != len(model.main.outputs):
            problems.append(f"{len(answer.output_shapes)} output shapes returned, expected {len(model.main.outputs)}")
        return problems
    return _insufficient_problems(model, example, answer)


def _insufficient_problems(model: CaseModel, example: CaseExample, answer: Answer) -> list[str]:
    if answer.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
        return [f"returned {answer.status.name}, expected OUTPUT_INSUFFICIENT_SIZE"]
    outputs = model.main.outputs
    if len(answer.output_shapes) != len(outputs):
        return [f"{len(answer.output_shapes)} output shapes with OUTPUT_INSUFFICIENT_SIZE, expected {len(outputs)}"]
    problems = []
    for position, shape in enumerate(answer.output_shapes):
        golden = example.outputs.get(position)
        if shape.is_sufficient == (position == 0):
            problems.append(f"output {position} reported {'sufficient' if shape.is_sufficient else 'insufficient'}")
        if golden is None:
            continue
        if len(shape.dimensions) != len(golden.dims):
            problems.append(f"output {position}: rank {len(shape.dimensions)}, expected {len(golden.dims)}")
        elif any(d and d != g for d, g in zip(shape.dimensions, golden.dims, strict=True)):
            problems.append(f"output {position}: dims {list(shape.dimensions)}, expected {list(golden.dims)}")
    return problems
