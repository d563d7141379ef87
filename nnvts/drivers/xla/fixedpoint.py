"""NNAPI's integer requantization (TFLite / gemmlowp fixed point) as jax.numpy int64 arithmetic.

Quantized results of the NNAPI CPU path are defined by a Q31 multiplier and
a power-of-two shift applied with a rounding-doubling high multiply and a
rounding right shift; a float shortcut (``round(x * m)``) differs by one on
some elements.  The primitives are ``vts.hal.fixedpoint``'s, the reference driver's
too, traced as JAX arrays: int32 values held in int64 (the driver turns
JAX's 64-bit types on).
The encoding of a real multiplier happens at translation time, in Python.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnvts.drivers.xla.backend import jax_module
from vts.hal.fixedpoint import rounding_divide_by_pot as shared_rounding_divide_by_pot
from vts.hal.fixedpoint import saturating_rounding_doubling_high_mul


def _jnp() -> Any:
    return jax_module().numpy


def srdhm(a: Any, b: Any) -> Any:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on traced int64 arrays."""
    return saturating_rounding_doubling_high_mul(a, b, _jnp())


def rounding_divide_by_pot(x: Any, exponent: Any) -> Any:
    """gemmlowp ``RoundingDivideByPOT`` on traced int64 arrays."""
    return shared_rounding_divide_by_pot(x, exponent, _jnp())


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
