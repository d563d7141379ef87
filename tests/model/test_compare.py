"""Accuracy criteria: the bounds of checkResults (TestHarness.cpp; docs/driver-guide.md), exactly at their edges."""

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


def _edge_values(rng: np.random.Generator, size: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """A golden and an answer mixing exact matches, errors at and around the bound, and (floats) non-finite
    values on either side, -0.0 and magnitudes whose bound overflows."""
    if dtype.kind == "b":
        expected = rng.integers(0, 2, size).astype(bool)
        actual = expected ^ (rng.random(size) < 0.01)
        return expected, actual
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        expected = rng.integers(info.min, int(info.max) + 1, size, dtype=dtype)
        step = rng.choice([0, 0, 0, 1, -1, 2], size)
        actual = np.clip(expected.astype(np.int64) + step, info.min, info.max).astype(dtype)
        return expected, actual
    expected = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4, size)).astype(dtype)
    bound = 1e-5 + 5 * 2.0**-23 * np.abs(expected.astype(np.float64))
    scale = rng.choice([0.0, 0.5, 1.0, 1.0000001, 2.0], size)
    actual = (expected.astype(np.float64) + scale * bound * rng.choice([-1.0, 1.0], size)).astype(dtype)
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, np.finfo(dtype).max], dtype=dtype)
    for target in (expected, actual):
        spots = rng.random(size) < 0.002
        target[spots] = rng.choice(specials, int(spots.sum()))
    return expected, actual


@pytest.mark.parametrize("block", [3, 64, 65536])
def test_the_blockwise_pass_never_passes_what_the_located_comparison_fails(monkeypatch, block: int) -> None:
    """``compare_output`` decides a passing output in blocks and leaves every other to the located comparison:
    its verdict must be the located comparison's on every output, over edge values and several blocks."""
    import vts.model.compare as compare

    monkeypatch.setattr(compare, "_BLOCK", block)
    rng = np.random.default_rng(block)
    kinds = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.uint8), np.dtype(np.int8),
             np.dtype(np.int32), np.dtype(bool)]
    criteria = [FLOAT32, FLOAT16, criteria_for(T.TENSOR_QUANT8_ASYMM), criteria_for(T.TENSOR_BOOL8),
                Criteria(atol=0.0, rtol=1e300)]
    agreed = {True: 0, False: 0}
    for trial in range(300):
        dtype = kinds[trial % len(kinds)]
        expected, actual = _edge_values(rng, int(rng.integers(1, 400)), dtype)
        if trial % 3 == 0:
            actual = expected.copy()  # mostly the passing outputs the blockwise pass exists for
        for chosen in criteria:
            fast = compare_output("x", expected, actual, chosen)
            located = compare._located_comparison("x", expected, actual, chosen)
            assert repr(fast) == repr(located), (dtype, chosen, expected, actual)  # repr: NaN fields
            agreed[fast.passed] += 1
    assert agreed[True] > 100 and agreed[False] > 100  # both verdicts were exercised


def test_an_infinite_golden_is_judged_by_the_located_comparison() -> None:
    """An infinite golden has an infinite bound, which any finite answer is "within": only the located
    comparison knows that a non-finite golden needs the same value back."""
    expected = np.array([1.0, np.inf], dtype=np.float32)
    result = compare_output("f", expected, np.array([1.0, 3.0], dtype=np.float32), FLOAT32)
    assert not result.passed and result.worst_index == (1,)
    assert not compare_output("f", np.array([np.nan]), np.array([np.nan]), Criteria(0, 0, exact=True)).passed


def test_an_error_in_the_last_partial_block_is_found(monkeypatch) -> None:
    import vts.model.compare as compare

    monkeypatch.setattr(compare, "_BLOCK", 4)
    expected = np.arange(10, dtype=np.float32)
    actual = expected.copy()
    actual[9] += 1.0
    result = compare_output("f", expected, actual, FLOAT32)
    assert not result.passed and result.bad_count == 1 and result.worst_index == (9,)
