"""The integer requantization helpers against a scalar model of the C++ int32 semantics.

The scalar functions below are written from the gemmlowp definitions with
Python integers (exact), independently of the vectorised numpy versions.
"""

from __future__ import annotations

import numpy as np
import pytest

from nnvts.drivers.reference import quant

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def c_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def test_high_mul_and_shift_match_scalar_model():
    rng = np.random.default_rng(1234)
    a = rng.integers(INT32_MIN, INT32_MAX, 2000, dtype=np.int64)
    b = rng.integers(INT32_MIN, INT32_MAX, 2000, dtype=np.int64)
    a[:3] = [INT32_MIN, INT32_MIN, -1]
    b[:3] = [INT32_MIN, 5, INT32_MIN]
    got = quant.saturating_rounding_doubling_high_mul(a, b)
    assert got.tolist() == [srdhm(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    for exponent in (0, 1, 5, 17, 31):
        values = rng.integers(INT32_MIN, INT32_MAX, 500, dtype=np.int64)
        assert quant.rounding_divide_by_pot(values, exponent).tolist() == [rdbpot(int(v), exponent) for v in values]


@pytest.mark.parametrize("real", [0.5, 0.25, 0.0123, 1.0, 3.7, 1e-6, 0.999999999])
def test_quantize_multiplier_represents_the_real_value(real):
    multiplier, shift = quant.quantize_multiplier(real)
    assert 2**30 <= multiplier < 2**31
    assert abs(multiplier * 2.0 ** (shift - 31) - real) <= real * 2**-30


def test_requantization_rounding_is_gemmlowp_not_float():
    """x * 0.5: the doubling high multiply rounds exact halves upward (-1.5 -> -1), the
    rounding shift rounds them away from zero; a float round() would give -2 for -1.5."""
    multiplier, shift = quant.quantize_multiplier(0.5)
    got = quant.multiply_by_quantized_multiplier(np.array([3, -3, 5, -5]), multiplier, shift)
    assert got.tolist() == [2, -1, 3, -2]
    multiplier, shift = quant.quantize_multiplier(0.25)  # right shift of 1 after the high multiply
    got = quant.multiply_by_quantized_multiplier(np.array([6, -6, 2, -2]), multiplier, shift)
    assert got.tolist() == [2, -2, 1, -1]  # the final shift rounds -1.5 away from zero


def test_activation_range_quantized_relu6():
    # scale 0.05, zero point 10: 0 -> 10, 6 -> 10 + 120 = 130
    assert quant.activation_range_quantized(3, 0.05, 10, np.uint8) == (10, 130)
    assert quant.activation_range_quantized(2, 0.05, 10, np.uint8) == (0, 30)
