"""Quantization coupling (the HAL suite's QuantizationCouplingTest, GeneratedTestHarness.cpp).

A single-operation model with TENSOR_QUANT8_ASYMM operands gets a signed
twin (TENSOR_QUANT8_ASYMM_SIGNED, zero points and bytes shifted by -128).
A driver must treat both encodings alike: if it prepares the original it
must prepare the twin, if it refuses one it must refuse the other, and both
must give results within the usual ±1 of their own goldens.
"""

from __future__ import annotations

from collections.abc import Sequence

from vts.families._kit.derived_models import is_coupled, signed_twin
from vts.families._kit.executions import prepare_for_case
from vts.families._kit.fenced_path import judge_golden
from vts.families._kit.per_example import Executed, Judgement, PerExampleFamily
from vts.families.base import Case, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.interfaces import Device
from vts.model.casemodel import CaseModel
from vts.results import Verdict


@register_family
class QuantizationCouplingFamily(PerExampleFamily):
    name = "quantization_coupling"
    description = "QUANT8_ASYMM models and their QUANT8_ASYMM_SIGNED twins must behave alike"

    def covers(self, model: CaseModel) -> bool:
        return is_coupled(model)

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        original = case.model
        assert original is not None and case.example is not None
        twin = signed_twin(original)
        models = {"original": original, "signed twin": twin}
        prepared = {label: prepare_for_case(device, model, options)[0] for label, model in models.items()}
        if prepared["original"] is None and prepared["signed twin"] is None:
            return skipped("neither the model nor its signed twin is supported")
        if (prepared["original"] is None) != (prepared["signed twin"] is None):
            refused = "original" if prepared["original"] is None else "signed twin"
            return failed(f"the {refused} was refused while the other encoding prepared: QUANT8_ASYMM and "
                          "QUANT8_ASYMM_SIGNED must be supported alike")
        for label, model in models.items():
            outcome = self.run_executions(model, case.example, prepared[label], options, label)  # type: ignore[arg-type]
            if outcome.verdict is not Verdict.PASSED:
                return outcome
        return passed()

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        execution = executed.execution
        return judge_golden(model, example_index, executed.built, executed.answer, execution.executor,
                            execution.measure, executed.where)
