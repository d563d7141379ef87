"""The reference speaks AIDL v4 unless told ``hal=1.3``: each is judged by its own version's rules, and passes."""

from __future__ import annotations

import json
import os

import pytest

from nnvts.drivers.reference import create_device
from vts.families.base import RunOptions
from vts.families.burst import BurstFamily
from vts.families.validation import ValidationFamily
from vts.hal.enums import HalVersion
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.runner import Runner

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests", "add_binary.json")


def _model():
    with open(SPEC, encoding="utf-8") as file:
        return next(iter(parse_spec(json.load(file))))


def test_the_reference_speaks_aidl_v4_unless_told():
    assert create_device().hal_version is HalVersion.FL8
    assert create_device(hal="1.3").hal_version is HalVersion.V1_3
    with pytest.raises(ValueError, match="not an interface version"):
        create_device(hal="aidl-v5")


@pytest.mark.parametrize("hal", ["1.3", "aidl-v4"])
def test_consumer_count_mutations_are_judged_by_hidl_and_skipped_under_aidl(hal):
    family, model = ValidationFamily(), _model()
    cases = [c for c in family.model_cases(model, SPEC) if ".operand_consumers_" in c.name][:3]
    assert cases
    runner = Runner(create_device(hal=hal), RunOptions())
    outcomes = [runner.run_case(family, case) for case in cases]
    if hal == "1.3":
        assert {o.verdict for o in outcomes} == {Verdict.PASSED}
    else:
        assert {o.verdict for o in outcomes} == {Verdict.SKIPPED}
        assert outcomes[0].reason.startswith("not a rule of AIDL v4: AIDL has no numberOfConsumers")


@pytest.mark.parametrize("hal", ["1.3", "aidl-v4"])
def test_burst_validation_passes_under_both_and_names_what_aidl_lacks(hal):
    family, model = BurstFamily(), _model()
    case = next(c for c in family.model_cases(model, SPEC) if c.config["kind"] == "validation")
    outcome = Runner(create_device(hal=hal), RunOptions()).run_case(family, case)
    assert outcome.verdict is Verdict.PASSED, outcome.reason
    assert ("token -1" in outcome.reason) is (hal != "1.3")


@pytest.mark.parametrize("hal", ["1.3", "aidl-v4"])
def test_an_extra_output_of_an_extension_operation_is_judged_by_hidl_and_skipped_under_aidl(hal):
    """Only HIDL's numberOfConsumers makes it invalid for a driver that does not know the extension: the
    template (declaring none) passed it under 1.3 and was failed for accepting it under AIDL v4."""
    from nnvts.drivers.template import create_device as template
    from vts.model.extensions import default_registry

    spec = os.path.join(os.path.dirname(SPEC), "fibonacci.json")
    with open(spec, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "constant_n_add")
    family = ValidationFamily()
    cases = {c.name.rsplit(".", 1)[-1]: c for c in family.model_cases(model, spec)
             if ".add_operation_output_" in c.name}
    device = template()
    device.hal_version = HalVersion.parse("1.3") if hal == "1.3" else HalVersion.FL8
    runner = Runner(device, RunOptions(extensions=default_registry()))
    extension, builtin = (runner.run_case(family, cases[f"add_operation_output_{k}"]) for k in (0, 1))
    assert builtin.verdict is Verdict.PASSED  # ADD's signature is nnvts's to judge under either
    if hal == "1.3":
        assert extension.verdict is Verdict.PASSED, extension.reason
    else:
        assert extension.verdict is Verdict.SKIPPED
        assert extension.reason.startswith("not a rule of AIDL v4: an extension operation's signature")
