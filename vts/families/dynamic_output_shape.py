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

The rules live in ``vts.families._kit.dynamic_shapes``: the ``with_config`` family judges the same
executions made through AIDL v4's config calls by them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from vts.families._kit.derived_models import with_unknown_output_dims
from vts.families._kit.dynamic_shapes import MODES, dynamic_shapes_apply, judge_dynamic, output_zero_bytes
from vts.families._kit.executions import Executor
from vts.families._kit.per_example import Executed, Execution, Judgement, PerExampleFamily
from vts.families.base import Outcome, failed
from vts.families.registry import register_family
from vts.hal.enums import MeasureTiming
from vts.model.casemodel import CaseModel


@register_family
class DynamicOutputShapeFamily(PerExampleFamily):
    name = "dynamic_output_shape"
    description = "outputs declared with unknown dims: shapes reported, too-small buffers refused with their shapes"

    def covers(self, model: CaseModel) -> bool:
        return dynamic_shapes_apply(model)

    def case_model(self, model: CaseModel) -> CaseModel:
        return with_unknown_output_dims(model)

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        first_bytes = output_zero_bytes(model, example_index)
        for mode in MODES:
            if mode == "insufficient" and first_bytes <= 1:
                continue  # the suite skips INSUFFICIENT when output 0 holds at most one byte
            for executor in Executor:
                for measure in (MeasureTiming.NO, MeasureTiming.YES):
                    yield Execution(executor, measure, mode, 0 if mode == "insufficient" else None)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        return judge_dynamic(model, example_index, executed, earlier)

    def failure(self, executed: Executed, problems: list[str]) -> Outcome:
        return failed(f"{executed.where}: {problems[0].lstrip(': ')}", tuple(problems))
