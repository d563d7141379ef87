"""The generated family passes the reference driver and catches each broken driver."""

from __future__ import annotations

import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken
from vts.results import Verdict


@pytest.mark.parametrize("document", [hand_add_float(), hand_add_quant8()], ids=["float", "quant8"])
def test_reference_driver_passes(run_generated, document):
    results = run_generated(document, create_device())
    assert [r.verdict for r in results] == [Verdict.PASSED], [r.reason for r in results]


def test_float_off_by_1e_4_is_caught(run_generated):
    (result,) = run_generated(hand_add_float(), broken.float_off_by_1e_4())
    assert result.verdict is Verdict.FAILED
    assert "out: 4/4 elements out of tolerance" in result.reason
    assert "expected 1.75" in result.reason


def test_float_fault_does_not_touch_quant_outputs(run_generated):
    (result,) = run_generated(hand_add_quant8(), broken.float_off_by_1e_4())
    assert result.verdict is Verdict.PASSED


def test_quant_off_by_2_is_caught(run_generated):
    (result,) = run_generated(hand_add_quant8(), broken.quant_off_by_2())
    assert result.verdict is Verdict.FAILED
    assert "elements out of tolerance" in result.reason


def test_wrong_status_is_caught(run_generated):
    (result,) = run_generated(hand_add_float(), broken.wrong_status())
    assert result.verdict is Verdict.FAILED
    assert "GENERAL_FAILURE" in result.reason


def test_unexpected_exception_is_a_failed_case_not_a_crash_of_the_run(run_generated):
    results = run_generated(hand_add_float(), broken.raises_unexpected())
    assert [r.verdict for r in results] == [Verdict.FAILED]
    assert "driver raised RuntimeError: injected driver bug" in results[0].reason


def test_hanging_driver_times_out_and_the_run_continues():
    from vts.families.base import RunOptions
    from vts.families.generated import GeneratedFamily
    from vts.model.casemodel import parse_spec
    from vts.run.runner import Runner

    family = GeneratedFamily()
    (model,) = parse_spec(hand_add_float())
    (case,) = family.model_cases(model, "<inline>")
    hung = Runner(broken.hangs(), RunOptions(case_timeout=0.5)).run_case(family, case)
    assert hung.verdict is Verdict.TIMEOUT and "0.5 s" in hung.reason
    assert Runner(create_device(), RunOptions()).run_case(family, case).verdict is Verdict.PASSED
