"""Accuracy criteria: the bounds of spec-format.md, exactly at their edges."""

from __future__ import annotations

import numpy as np
import pytest

from vts.hal.enums import OperandType as T
from vts.model.compare import FLOAT16, FLOAT32, Criteria, Tolerance, ToleranceError, compare_output, criteria_for


def test_float32_bound_is_atol_plus_5_ulp_relative():
    expected = np.array([1.0, 100.0], dtype=np.float32)
    bound = 1e-5 + 5 * 2.0**-23 * 100.0
    inside = compare_output("x", expected, expected + np.array([0.9e-5, bound * 0.99]), FLOAT32)
    outside = compare_output("x", expected, expected + np.array([0.0, bound * 1.01]), FLOAT32)
    assert inside.passed
    assert not outside.passed and outside.bad_count == 1 and outside.worst_index == (1,)


def test_relaxed_float32_uses_fp16_bound():
    assert criteria_for(T.TENSOR_FLOAT32, reduced_precision=True) == FLOAT16
    assert criteria_for(T.TENSOR_FLOAT32) == FLOAT32


def test_quantized_within_one_and_model_override():
    expected = np.array([10, 20], dtype=np.uint8)
    assert compare_output("q", expected, np.array([11, 19], dtype=np.uint8), criteria_for(T.TENSOR_QUANT8_ASYMM)).passed
    off_by_two = np.array([12, 20], dtype=np.uint8)
    assert not compare_output("q", expected, off_by_two, criteria_for(T.TENSOR_QUANT8_ASYMM)).passed
    widened = criteria_for(T.TENSOR_QUANT8_ASYMM, tolerance=Tolerance(quant=3))
    assert compare_output("q", expected, off_by_two, widened).passed


def test_bool_is_exact():
    expected = np.array([True, False])
    result = compare_output("b", expected, np.array([True, True]), criteria_for(T.TENSOR_BOOL8))
    assert not result.passed and result.worst_index == (1,)


def test_non_finite_fails_unless_golden_matches():
    expected = np.array([np.inf, 1.0], dtype=np.float32)
    assert compare_output("f", expected, np.array([np.inf, 1.0], dtype=np.float32), FLOAT32).passed
    nan = compare_output("f", expected, np.array([np.inf, np.nan], dtype=np.float32), FLOAT32)
    assert not nan.passed and nan.worst_index == (1,)


def test_failure_description_names_operand_count_index_and_values():
    result = compare_output("out", np.array([[1.0, 2.0]], dtype=np.float32),
                            np.array([[1.0, 2.5]], dtype=np.float32), FLOAT32)
    text = result.describe()
    assert text.startswith("out: 1/2 elements out of tolerance; worst at [0, 1]: expected 2.0, got 2.5")


def test_size_mismatch_is_reported():
    result = compare_output("out", np.zeros(3, np.float32), np.zeros(2, np.float32), FLOAT32)
    assert not result.passed and "2 elements returned, 3 expected" in result.describe()


def test_a_tolerance_mapping_is_typed_or_refused() -> None:
    assert Tolerance.from_mapping({"atol": 1e-4, "rtol": 1e-4}) == Tolerance(atol=1e-4, rtol=1e-4)
    with pytest.raises(ToleranceError) as info:
        Tolerance.from_mapping({"qaunt": 3})
    assert info.value.key == "qaunt" and "unknown tolerance key 'qaunt'" in info.value.message
    for bad in ({"quant": "3"}, {"atol": float("nan")}, {"rtol": -1.0}, {"quant": True}):
        with pytest.raises(ToleranceError):
            Tolerance.from_mapping(bad)


def test_atol_or_rtol_override_every_non_boolean_type_and_keep_the_other_default() -> None:
    assert criteria_for(T.TENSOR_FLOAT32, tolerance=Tolerance(atol=1e-3)) == Criteria(atol=1e-3, rtol=FLOAT32.rtol)
    assert criteria_for(T.TENSOR_QUANT8_ASYMM, tolerance=Tolerance(quant=3, rtol=0.5)) == Criteria(atol=3, rtol=0.5)
    assert criteria_for(T.TENSOR_BOOL8, tolerance=Tolerance(atol=1.0)).exact
