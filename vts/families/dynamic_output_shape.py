"""Dynamic output shapes (the HAL suite's DynamicOutputShapeTest, 1.3 rules; GeneratedTestHarness.cpp).

Every main output of the model is declared with unknown dims; the driver
must report the real shapes.  Each example runs in two modes on the
synchronous, asynchronous and fenced paths, with and without timing:

* UNSPECIFIED (buffers of the right size): NONE with one shape per output,
  each sufficient and equal to the golden's, and correct values;
* INSUFFICIENT (output 0 one byte short): OUTPUT_INSUFFICIENT_SIZE with one
  shape per output, output 0 insufficient and every other sufficient, ranks
  right and every known dim right;
* fenced execution needs fully specified outputs: INVALID_ARGUMENT in both.

A driver without dynamic-shape support may answer GENERAL_FAILURE: the case
is then skipped, as the suite does.  But only until the case has shown the
driver *does* support them: once an UNSPECIFIED execution of the same
prepared model succeeded with every output shape reported, the driver has
no excuse left, and a GENERAL_FAILURE on any later execution (above all the
INSUFFICIENT mode, where the HAL requires OUTPUT_INSUFFICIENT_SIZE with the
shapes so the client can grow its buffers) fails the case.  The modes run
UNSPECIFIED first, so the support is always known before INSUFFICIENT.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vts.families._kit.derived_models import with_unknown_output_dims
from vts.families._kit.executions import Answer, Executor
from vts.families._kit.judge import judge_success
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families.base import Outcome, failed, skipped
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, MeasureTiming, OperationType
from vts.model.casemodel import CaseExample, CaseModel, dtype_of, element_count

_NOT_APPLICABLE = {int(OperationType.RANK), int(OperationType.IF), int(OperationType.WHILE)}
MODES = ("unspecified", "insufficient")


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


@register_family
class DynamicOutputShapeFamily(PerExampleFamily):
    name = "dynamic_output_shape"
    description = "outputs declared with unknown dims: shapes reported, too-small buffers refused with their shapes"

    def covers(self, model: CaseModel) -> bool:
        return not model.operation_types() & _NOT_APPLICABLE

    def case_model(self, model: CaseModel) -> CaseModel:
        return with_unknown_output_dims(model)

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        first = model.main.operands[model.main.outputs[0]]
        golden = model.examples[example_index].outputs.get(0)
        first_bytes = element_count(golden.dims) * dtype_of(first.type).itemsize if golden else 0
        for mode in MODES:
            if mode == "insufficient" and first_bytes <= 1:
                continue  # the suite skips INSUFFICIENT when output 0 holds at most one byte
            for executor in Executor:
                for measure in (MeasureTiming.NO, MeasureTiming.YES):
                    yield Execution(executor, measure, mode, 0 if mode == "insufficient" else None)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        execution, answer, where = executed.execution, executed.answer, executed.where
        example = model.examples[example_index]
        if answer.status == ErrorStatus.GENERAL_FAILURE and execution.executor is not Executor.FENCED:
            # The first UNSPECIFIED execution that passed off the fenced path showed dynamic-shape support.
            supported_by = next((e.where for e in earlier if e.execution.mode == "unspecified"
                                 and e.execution.executor is not Executor.FENCED), None)
            if supported_by is None:
                return skipped(f"{where}: GENERAL_FAILURE (no dynamic output shape support)")
            expected = "OUTPUT_INSUFFICIENT_SIZE with the output shapes" if execution.mode == "insufficient" else "NONE"
            return failed(f"{where}: returned GENERAL_FAILURE, expected {expected}: the {supported_by} succeeded "
                          "with every shape reported, so the driver supports dynamic output shapes")
        if execution.executor is Executor.FENCED:
            return ([] if answer.status == ErrorStatus.INVALID_ARGUMENT else
                    [f"returned {answer.status.name}, expected INVALID_ARGUMENT (fenced "
                     "execution needs fully specified outputs)"])
        if execution.mode == "unspecified":
            problems = judge_success(model, example, executed.built, answer, execution.measure, "")
            if answer.ok and len(answer.output_shapes) != len(model.main.outputs):
                problems.append(f"{len(answer.output_shapes)} output shapes returned, expected "
                                f"{len(model.main.outputs)}")
            return problems
        return _insufficient_problems(model, example, answer)

    def failure(self, executed: Executed, problems: list[str]) -> Outcome:
        return failed(f"{executed.where}: {problems[0].lstrip(': ')}", tuple(problems))
