"""Integer quantization arithmetic of the NNAPI CPU path (TFLite / gemmlowp).

Quantized goldens and the Android CPU implementation agree to ±1 only when
requantization is done the integer way: a real multiplier is encoded as a
Q31 fixed-point value and a power-of-two shift, applied with a
rounding-doubling high multiply and a rounding right shift.  A float-rounding
shortcut (``round(x * m)``) differs by one on a few elements per layer, and
the error compounds over a network, so every quantized operation in the
reference driver goes through these functions.

All functions are vectorised over numpy int64 arrays; they reproduce the C++
int32 semantics (truncating division, arithmetic shifts, saturation).
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """Encode ``real_multiplier`` as (Q31 multiplier, shift): real = m * 2**(shift - 31).

    TFLite ``QuantizeMultiplier``: frexp, round the fraction to 31 bits, and
    renormalise when rounding reaches 2**31.
    """
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    # C++ std::round: halves away from zero.
    q = int(math.copysign(math.floor(abs(fraction) * (1 << 31) + 0.5), fraction))
    if q == (1 << 31):
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def quantize_multiplier_smaller_than_one(real_multiplier: float) -> tuple[int, int]:
    """(multiplier, right shift) for 0 <= real < 1, as the HAL 1.0 kernels require."""
    if not 0.0 <= real_multiplier < 1.0:
        raise ValueError(f"multiplier {real_multiplier} not in [0, 1)")
    q, shift = quantize_multiplier(real_multiplier)
    return q, -shift


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32 values held in int64."""
    a = np.asarray(a, dtype=np.int64)
    b_arr = np.asarray(b, dtype=np.int64)
    product = a * b_arr
    nudge = np.where(product >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    total = product + nudge
    # C++ integer division truncates toward zero; numpy's // floors.
    quotient = np.where(total >= 0, total >> 31, -((-total) >> 31))
    overflow = (a == INT32_MIN) & (b_arr == INT32_MIN)
    return np.where(overflow, np.int64(INT32_MAX), quotient)


def rounding_divide_by_pot(x: np.ndarray, exponent: int | np.ndarray) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT``: x / 2**exponent, rounding half away from zero."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


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


def multiply_by_quantized_multiplier_smaller_than_one(x: np.ndarray, multiplier: int,
                                                      right_shift: int) -> np.ndarray:
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right_shift)


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
