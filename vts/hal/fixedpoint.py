"""NNAPI's integer requantization (TFLite / gemmlowp fixed point), once, for any array library.

Quantized results of NNAPI are defined by a Q31 multiplier and a
power-of-two shift, applied with a rounding-doubling high multiply and a
rounding right shift; a float shortcut (``round(x * m)``) differs by one on
some elements.  The primitives take the array namespace as ``xp`` (numpy by
default; ``jax.numpy`` for a driver that traces them into a computation):
int32 values are held in int64, and C++'s truncating division and
arithmetic shifts are reproduced exactly.  The reference and XLA drivers
both compute through these, so their quantized results cannot drift apart.
"""

from __future__ import annotations

import math
from typing import Any

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


def saturating_rounding_doubling_high_mul(a: Any, b: Any, xp: Any = np) -> Any:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32 values held in int64."""
    a = xp.asarray(a, dtype=xp.int64)
    b = xp.asarray(b, dtype=xp.int64)
    product = a * b
    nudge = xp.where(product >= 0, xp.int64(1 << 30), xp.int64(1 - (1 << 30)))
    total = product + nudge
    # C++ integer division truncates toward zero; a right shift floors.
    quotient = xp.where(total >= 0, total >> 31, -((-total) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return xp.where(overflow, xp.int64(INT32_MAX), quotient)


def rounding_divide_by_pot(x: Any, exponent: Any, xp: Any = np) -> Any:
    """gemmlowp ``RoundingDivideByPOT``: x / 2**exponent, rounding half away from zero."""
    x = xp.asarray(x, dtype=xp.int64)
    exponent = xp.asarray(exponent, dtype=xp.int64)
    mask = (xp.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(xp.int64)
    return (x >> exponent) + (remainder > threshold).astype(xp.int64)
