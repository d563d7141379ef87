"""The validation family on PACK: removing one of its packed tensors leaves a valid PACK, so the AIDL suite (and
nnvts) does not expect it refused; removing the axis does."""

from __future__ import annotations

import json
import os

from nnvts.drivers.reference import create_device
from vts.families.base import RunOptions
from vts.families.validation import ValidationFamily
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.runner import Runner

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests", "pack_basic.json")


def _removal_cases():
    with open(SPEC, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "axis0")
    family = ValidationFamily()
    return family, [c for c in family.model_cases(model, SPEC) if "remove_operation_input" in c.name]


def test_pack_removals_of_a_packed_tensor_are_not_mutations():
    family, cases = _removal_cases()
    assert [c.name.rsplit(".", 1)[1] for c in cases] == ["remove_operation_input_0_0"]
    assert Runner(create_device(), RunOptions()).run_case(family, cases[0]).verdict is Verdict.PASSED
