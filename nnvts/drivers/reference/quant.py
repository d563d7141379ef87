"""Integer quantization arithmetic of the NNAPI CPU path (TFLite / gemmlowp).

Quantized goldens and the Android CPU implementation agree to ±1 only when
requantization is done the integer way: a real multiplier is encoded as a
Q31 fixed-point value and a power-of-two shift, applied with a
rounding-doubling high multiply and a rounding right shift.  A float-rounding
shortcut (``round(x * m)``) differs by one on a few elements per layer, and
the error compounds over a network, so every quantized operation in the
reference driver goes through these functions.

All functions are vectorised over numpy int64 arrays; they reproduce the C++
int32 semantics (truncating division, arithmetic shifts, saturation).  The
primitives (the multiplier's encoding, the high multiply, the rounding
shift) are ``vts.hal.fixedpoint``'s, shared with the XLA driver.
"""

from __future__ import annotations

import math

import numpy as np

from vts.hal.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int | np.ndarray,
                                     shift: int | np.ndarray) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplier``: x * m * 2**(shift - 31) with integer rounding.

    ``multiplier`` and ``shift`` may be arrays (per-channel requantization).
    """
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.asarray(x, dtype=np.int64) * (np.int64(1) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


def quantized_range(dtype: np.dtype | str) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def activation_range_quantized(activation: int, scale: float, zero_point: int,
                               dtype: np.dtype | str) -> tuple[int, int]:
    """Clamp bounds of a fused activation in the output's quantized domain.

    TFLite ``CalculateActivationRangeUint8``: the real bounds 0, ±1, 6 are
    quantized with round-to-nearest and intersected with the type's range.
    """
    qmin, qmax = quantized_range(dtype)

    def quantize(real: float) -> int:
        return zero_point + int(round_half_away(real / scale))

    if activation == 0:
        return qmin, qmax
    if activation == 1:
        return max(qmin, quantize(0.0)), qmax
    if activation == 2:
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    if activation == 3:
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    raise ValueError(f"unknown fused activation {activation}")


def activation_range_float(activation: int) -> tuple[float, float]:
    if activation == 0:
        return -math.inf, math.inf
    if activation == 1:
        return 0.0, math.inf
    if activation == 2:
        return -1.0, 1.0
    if activation == 3:
        return 0.0, 6.0
    raise ValueError(f"unknown fused activation {activation}")


def round_half_away(x: float | np.ndarray) -> np.ndarray:
    """C's ``round``: halves go away from zero (numpy's ``round`` goes to even)."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def dequantize(values: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (values.astype(np.float64) - zero_point) * scale


def quantize(real: np.ndarray, scale: float, zero_point: int, dtype: np.dtype | str) -> np.ndarray:
    """Float to stored integers with round-half-away and saturation (NNAPI QUANTIZE)."""
    qmin, qmax = quantized_range(dtype)
    q = round_half_away(np.asarray(real, dtype=np.float64) / scale) + zero_point
    return np.clip(q, qmin, qmax).astype(dtype)


# ---------------------------------------------------------------------------
# gemmlowp fixed-point transcendental functions (int32 raw values held in int64).
#
# TFLite's quantized LOGISTIC, TANH and SOFTMAX kernels, which Android's CPU
# path runs, evaluate exp/logistic/tanh in Q(m).(31-m) fixed point with
# gemmlowp's polynomial + barrel-shifter + Newton-Raphson recipe.  Goldens are
# bit-compatible with that recipe only, so it is reproduced step by step.
# ---------------------------------------------------------------------------


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Two's-complement int32 wrap-around (plain C++ int32 ``+``/``-``)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingMultiplyByPOT``: saturating left shift or rounding right shift."""
    x = np.asarray(x, dtype=np.int64)
    if exponent > 0:
        return np.clip(x * (1 << exponent), INT32_MIN, INT32_MAX)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return x


def rounding_half_sum(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """gemmlowp ``RoundingHalfSum`` for int32: (a + b + sign) / 2, truncating toward zero."""
    total = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    total = total + np.where(total >= 0, 1, -1)
    return np.where(total >= 0, total // 2, -((-total) // 2))


def count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of uint32 values (32 for zero)."""
    x = np.asarray(x, dtype=np.int64)
    _, exponent = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 32, 32 - exponent).astype(np.int64)


def _exp_on_interval_minus_quarter_to_zero(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0) in Q0.31: Taylor series around -1/8."""
    constant_term = 1895147668  # exp(-1/8)
    one_third = 715827883
    x = a + (1 << 28)  # a + 1/8
    x2 = saturating_rounding_doubling_high_mul(x, x)
    x3 = saturating_rounding_doubling_high_mul(x2, x)
    x4 = saturating_rounding_doubling_high_mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x4_over_4 + x3, one_third) + x2, 1)
    return wrap_int32(constant_term + saturating_rounding_doubling_high_mul(constant_term, wrap_int32(x + poly)))


# (exponent, Q0.31 value of exp(-2**exponent)) for gemmlowp's barrel shifter.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp ``exp_on_negative_values``: Q(integer_bits) input <= 0 -> Q0.31 exp(a)."""
    a = np.asarray(a, dtype=np.int64)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_quarter = (a & (one_quarter - 1)) - one_quarter
    result = _exp_on_interval_minus_quarter_to_zero(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_quarter, integer_bits))
    remainder = a_mod_quarter_minus_quarter - a
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = 1 << (fractional_bits + exponent)
            result = np.where(remainder & bit, saturating_rounding_doubling_high_mul(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal_half_denominator(a: np.ndarray) -> np.ndarray:
    """Q2.29 approximation of 1 / ((1 + a) / 2) for a in [0, 1) (three Newton-Raphson steps)."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = wrap_int32(1515870810 + saturating_rounding_doubling_high_mul(half_denominator, -1010580540))
    for _ in range(3):
        half_denominator_times_x = saturating_rounding_doubling_high_mul(half_denominator, x)
        one_minus = wrap_int32((1 << 29) - half_denominator_times_x)
        x = wrap_int32(x + saturating_rounding_multiply_by_pot(saturating_rounding_doubling_high_mul(x, one_minus), 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1`` (Q0.31 in and out)."""
    return saturating_rounding_multiply_by_pot(_newton_reciprocal_half_denominator(a), 1)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp ``one_minus_x_over_one_plus_x_for_x_in_0_1`` (Q0.31 in and out)."""
    return saturating_rounding_multiply_by_pot(wrap_int32(_newton_reciprocal_half_denominator(a) - (1 << 29)), 2)


def fixed_point_logistic(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp ``logistic``: Q(integer_bits) input -> Q0.31 result."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    magnitude = np.where(positive, a, -a)
    if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-magnitude, integer_bits))
    if_negative = INT32_MAX - if_positive
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, if_negative))


def fixed_point_tanh(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp ``tanh``: Q(integer_bits) input -> Q0.31 result."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    non_positive = np.where(negative, a, -a)
    # exp(2 * n): same raw value read with one more integer bit.
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(non_positive, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, -t, t))


def quantize_multiplier_greater_than_one(real_multiplier: float) -> tuple[int, int]:
    """(multiplier, left shift) for real > 1 (Android ``QuantizeMultiplierGreaterThanOne``)."""
    if not real_multiplier > 1.0:
        raise ValueError(f"multiplier {real_multiplier} not greater than one")
    return quantize_multiplier(real_multiplier)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int) -> int:
    """Largest |input| whose rescaled value still fits Q(input_integer_bits) (TFLite ``CalculateInputRadius``)."""
    max_input_rescaled = (1.0 * ((1 << input_integer_bits) - 1) * (1 << (31 - input_integer_bits))
                          / (1 << input_left_shift))
    return math.floor(max_input_rescaled)


def inv_sqrt_quantized_multiplier_exp(values: np.ndarray, reverse_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite ``GetInvSqrtQuantizedMultiplierExp``: 1/sqrt(v) as (Q0.31 multiplier, shift), vectorised.

    ``reverse_shift`` -1 returns the shift as a left shift (<= 0), the form
    ``MultiplyByQuantizedMultiplierSmallerThanOneExp`` expects.
    """
    values = np.asarray(values, dtype=np.int64)
    small = values <= 1  # 0 and 1 map to (INT32_MAX, 0), as TFLite does
    x_in = np.where(small, 1 << 28, values)
    shift = np.full(values.shape, 11, dtype=np.int64)
    while np.any(x_in >= (1 << 29)):
        big = x_in >= (1 << 29)
        x_in = np.where(big, x_in // 4, x_in)
        shift = shift + big
    left_shift_bit_pairs = (count_leading_zeros32(x_in) - 1) // 2 - 1
    shift = shift - left_shift_bit_pairs
    x_in = x_in << (2 * left_shift_bit_pairs)
    half_input = rounding_divide_by_pot(x_in >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(values.shape, 1 << 28, dtype=np.int64)  # 1.0 in Q3.28
    for _ in range(5):
        x_cubed = saturating_rounding_multiply_by_pot(
            saturating_rounding_doubling_high_mul(saturating_rounding_doubling_high_mul(x, x), x), 6)
        x = saturating_rounding_multiply_by_pot(
            wrap_int32(saturating_rounding_doubling_high_mul(half_three, x)
                       - saturating_rounding_doubling_high_mul(half_input, x_cubed)), 3)
    multiplier = saturating_rounding_doubling_high_mul(x, 1518500250)  # * sqrt(2) / 2
    negative = shift < 0
    multiplier = np.where(negative, wrap_int32(multiplier << np.where(negative, -shift, 0)), multiplier)
    shift = np.where(negative, 0, shift) * reverse_shift
    return np.where(small, INT32_MAX, multiplier), np.where(small, 0, shift)


def requantize_value(values: np.ndarray, scale: float, zero_point: int, new_scale: float, new_zero_point: int,
                     dtype: np.dtype | str) -> np.ndarray:
    """Android ``requantize``: dequantize in float, requantize in double with round-half-away and saturation."""
    real = ((np.asarray(values, dtype=np.int64) - zero_point).astype(np.float32) * np.float32(scale))
    ret = real.astype(np.float64) / float(np.float32(new_scale)) + new_zero_point
    qmin, qmax = quantized_range(dtype)
    return np.clip(round_half_away(ret), qmin, qmax).astype(dtype)


# Above this magnitude the float64 estimate of x * multiplier is no longer within 2**-20 of the exact value.
_FLOAT_REQUANT_LIMIT = 2.0**30


def multiply_by_quantized_multiplier_float(x: np.ndarray, multiplier: int | np.ndarray,
                                           shift: int | np.ndarray) -> np.ndarray:
    """``multiply_by_quantized_multiplier`` bit for bit, as float64 integers, several times faster.

    For whole layers of accumulators (``x``: integers held in any int or float
    dtype; ``multiplier``/``shift`` scalars or per-channel arrays broadcasting
    against ``x``).  The fixed-point result is round(round(x*m/2**31) / 2**e)
    with two roundings; one float64 product x * m * 2**(shift-31) rounded once
    gives the same integer unless it lies within 0.5/2**e of a half-integer
    (the only place the first rounding can move it across).  Those few
    elements (about 2**-e of them) are recomputed with the integer kernel, as
    is everything when |x * real| is too large for the float bound to hold.
    """
    x = np.asarray(x)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    real = multiplier.astype(np.float64) * np.exp2(shift.astype(np.float64) - 31.0)
    scaled = x.astype(np.float64, copy=False) * real
    if scaled.size == 0:
        return scaled
    if not np.abs(scaled).max() < _FLOAT_REQUANT_LIMIT:
        return multiply_by_quantized_multiplier(x.astype(np.int64), multiplier, shift).astype(np.float64)
    rounded = np.rint(scaled)
    right_shift = np.maximum(-shift, 0).astype(np.float64)
    # Distance from a half-integer below which the double rounding may differ (plus float error margin).
    margin = np.where(right_shift > 0, 0.5 * np.exp2(-right_shift), 0.0) + 2.0**-20
    np.subtract(scaled, rounded, out=scaled)
    np.abs(scaled, out=scaled)
    near = scaled >= 0.5 - margin
    if near.any():
        index = np.nonzero(near)
        exact_x = x[index].astype(np.int64)
        m = np.broadcast_to(multiplier, x.shape)[index] if multiplier.ndim else multiplier
        s = np.broadcast_to(shift, x.shape)[index] if shift.ndim else shift
        rounded[index] = multiply_by_quantized_multiplier(exact_x, m, s)
    return rounded
