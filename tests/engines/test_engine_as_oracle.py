"""An engine as the differential family's oracle (``--oracle litert``): agreement, and what it cannot translate.

Skipped when the litert extra is not installed.  A model LiteRT cannot
translate must end as a skip naming the operation, never as a
disagreement blamed on the driver under test.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import hand_add_float, hand_add_quant8
from vts.results import Verdict
from vts.spec.loader import load_file

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ai_edge_litert") is None,
                                reason="litert extra not installed (pip install 'nnvts[litert]')")


def _run_against_litert(document: dict) -> list:
    from nnvts.drivers.reference import create_device
    from vts.families.base import RunOptions
    from vts.families.differential.family import DifferentialFamily
    from vts.model.casemodel import parse_spec
    from vts.run.runner import Runner

    family = DifferentialFamily()
    runner = Runner(create_device(), RunOptions(oracle="litert", case_timeout=60))
    return [runner.run_case(family, case) for model in parse_spec(document)
            for case in family.model_cases(model, "<inline>")]


def test_the_reference_agrees_with_litert_on_hand_computed_adds():
    for result in _run_against_litert(hand_add_float()) + _run_against_litert(hand_add_quant8()):
        assert result.verdict is Verdict.PASSED, result.reason
        assert "random inputs matched the oracle 'litert'" in result.reason


def test_a_model_litert_cannot_translate_is_skipped_with_the_operation_named():
    document = load_file("generated_tests/roi_align_linear_map.json").document
    results = _run_against_litert(document)
    assert results
    for result in results:
        assert result.verdict is Verdict.SKIPPED, (result.name, result.verdict, result.reason)
        assert "the oracle 'litert' does not support the model (unsupported: ROI_ALIGN on " in result.reason \
            or "expect_failure" in result.reason, result.reason
