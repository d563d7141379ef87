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
