"""NNAPI's integer requantization (TFLite / gemmlowp fixed point) as jax.numpy int64 arithmetic.

Quantized results of the NNAPI CPU path are defined by a Q31 multiplier and
a power-of-two shift applied with a rounding-doubling high multiply and a
rounding right shift; a float shortcut (``round(x * m)``) differs by one on
some elements.  These are the same steps as the reference driver's
``quant.py`` (which a driver may not import), written for traced JAX
arrays: int32 values held in int64 (the driver turns JAX's 64-bit types
on), C++ truncating division and arithmetic shifts reproduced exactly.
The encoding of a real multiplier happens at translation time, in Python.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from drivers.xla.backend import jax_module

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplier``: (Q31 multiplier, shift) with real = m * 2**(shift - 31)."""
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    q = int(math.copysign(math.floor(abs(fraction) * (1 << 31) + 0.5), fraction))
    if q == (1 << 31):
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def _jnp() -> Any:
    return jax_module().numpy


def srdhm(a: Any, b: Any) -> Any:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32 values held in int64."""
    jnp = _jnp()
    a = jnp.asarray(a, jnp.int64)
    b = jnp.asarray(b, jnp.int64)
    product = a * b
    nudge = jnp.where(product >= 0, jnp.int64(1 << 30), jnp.int64(1 - (1 << 30)))
    total = product + nudge
    quotient = jnp.where(total >= 0, total >> 31, -((-total) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return jnp.where(overflow, jnp.int64(INT32_MAX), quotient)


def rounding_divide_by_pot(x: Any, exponent: Any) -> Any:
    """gemmlowp ``RoundingDivideByPOT``: x / 2**exponent, halves away from zero."""
    jnp = _jnp()
    x = jnp.asarray(x, jnp.int64)
    exponent = jnp.asarray(exponent, jnp.int64)
    mask = (jnp.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(jnp.int64)
    return (x >> exponent) + (remainder > threshold).astype(jnp.int64)


def multiply_by_quantized_multiplier(x: Any, multiplier: Any, shift: Any) -> Any:
    """TFLite ``MultiplyByQuantizedMultiplier`` (multiplier/shift may be per-channel arrays)."""
    jnp = _jnp()
    shift = np.asarray(shift, np.int64)
    left = jnp.asarray(np.maximum(shift, 0))
    right = jnp.asarray(np.maximum(-shift, 0))
    x = jnp.asarray(x, jnp.int64) * (jnp.int64(1) << left)
    return rounding_divide_by_pot(srdhm(x, jnp.asarray(np.asarray(multiplier, np.int64))), right)


def round_half_away(value: float) -> int:
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def activation_range_quantized(activation: int, scale: float, zero_point: int, dtype: np.dtype) -> tuple[int, int]:
    """TFLite ``CalculateActivationRangeUint8``: NONE/RELU/RELU1/RELU6 bounds in the output's integers."""
    info = np.iinfo(dtype)
    qmin, qmax = int(info.min), int(info.max)

    def quantize(real: float) -> int:
        return zero_point + round_half_away(real / scale)

    if activation == 0:
        return qmin, qmax
    if activation == 1:
        return max(qmin, quantize(0.0)), qmax
    if activation == 2:
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    if activation == 3:
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    raise ValueError(f"unknown fused activation {activation}")
