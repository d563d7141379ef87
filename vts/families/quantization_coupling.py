"""Quantization coupling (the HAL suite's QuantizationCouplingTest, catalogue §3.3 and §9.2).

A single-operation model with TENSOR_QUANT8_ASYMM operands gets a signed
twin (TENSOR_QUANT8_ASYMM_SIGNED, zero points and bytes shifted by -128).
A driver must treat both encodings alike: if it prepares the original it
must prepare the twin, if it refuses one it must refuse the other, and both
must give results within the usual ±1 of their own goldens.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families._kit.derived_models import is_coupled, signed_twin
from vts.families._kit.executions import Executor, execute, prepare_for_case
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.fenced import judge_golden
from vts.families.registry import register_family
from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import Device, PreparedModel
from vts.model.casemodel import CaseModel, build_request


@register_family
class QuantizationCouplingFamily(Family):
    name = "quantization_coupling"
    description = "QUANT8_ASYMM models and their QUANT8_ASYMM_SIGNED twins must behave alike"

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure or not is_coupled(model):
            return
        for index, example in enumerate(model.examples):
            yield Case(f"{self.name}/{model.case_name(example)}", self.name, model, index, spec_path)

    def _prepare(self, device: Device, model: CaseModel, options: RunOptions) -> PreparedModel | None:
        return prepare_for_case(device, model, options)[0]

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        original = case.model
        assert original is not None and case.example is not None
        twin = signed_twin(original)
        prepared = {"original": self._prepare(device, original, options), "signed twin": self._prepare(device, twin,
                                                                                                     options)}
        if prepared["original"] is None and prepared["signed twin"] is None:
            return skipped("neither the model nor its signed twin is supported")
        if (prepared["original"] is None) != (prepared["signed twin"] is None):
            refused = "original" if prepared["original"] is None else "signed twin"
            return failed(f"the {refused} was refused while the other encoding prepared: QUANT8_ASYMM and "
                          "QUANT8_ASYMM_SIGNED must be supported alike")
        for label, model in (("original", original), ("signed twin", twin)):
            example = model.examples[case.example]
            for executor in Executor:
                for measure in (MeasureTiming.NO, MeasureTiming.YES):
                    built = build_request(model, example, options.pool_kind, extensions=options.extensions)
                    try:
                        answer = execute(prepared[label], built.request, executor, measure)  # type: ignore[arg-type]
                        problems = judge_golden(model, case.example, built, answer, executor, measure,
                                                f"{label} {executor.value} execution (timing {measure.name})")
                    finally:
                        built.close()
                    if problems:
                        return failed(problems[0], tuple(problems))
        return passed()
