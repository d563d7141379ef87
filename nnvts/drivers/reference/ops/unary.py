"""ABS, EXP, LOG, NEG, RSQRT, SQRT, SIN, FLOOR: element-wise math on one tensor (quant8 RSQRT: feature level 7).

Android's Elementwise.cpp evaluates every float function in float32 (float16
inputs are widened and the result rounded back); NaN/inf results of
out-of-domain inputs are returned as is.  ABS and NEG also take TENSOR_INT32
(ABS since HAL 1.3), with C++ two's-complement wrap for INT32_MIN.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import quantized_range, round_half_away
from nnvts.drivers.reference.tensor import OpContext
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
FLOAT_AND_INT = (*FLOAT, T.TENSOR_INT32)
#: RSQRT's quantized types (feature level 7).
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def _quantized_rsqrt(ctx: OpContext) -> np.ndarray:
    """Android's quant8 RSQRT (Elementwise.cpp ``makeQuantized``), every step in float32 as it is there.

    ``x = (q - zp_in) * s_in``, ``r = 1 / sqrt(x)``, then ``zp_out +
    round(r / s_out)`` (half away from zero) clamped to the type; a NaN (x < 0)
    or +inf (x = 0) lands on the type's maximum, as ``std::min(max, NaN)``
    gives ``max`` there.
    """
    x, out = ctx.tensor(0), ctx.output()
    low, high = quantized_range(out.dtype)
    with np.errstate(all="ignore"):
        real = (x.value.astype(np.int32) - np.int32(x.zero_point)).astype(np.float32) * np.float32(x.scale)
        result = np.float32(1.0) / np.sqrt(real)
        total = round_half_away(result / np.float32(out.scale)) + out.zero_point
    total = np.where(np.isnan(total), high, total)
    return np.clip(total, low, high).astype(out.dtype)


def _apply(ctx: OpContext, func: Callable[[np.ndarray], np.ndarray]) -> list[np.ndarray]:
    x = ctx.tensor(0)
    if x.type == T.TENSOR_INT32:
        return [func(x.value.astype(np.int32)).astype(np.int32)]
    with np.errstate(all="ignore"):
        return [func(x.value.astype(np.float32)).astype(ctx.output().dtype)]


@register_op(Op.ABS, types=FLOAT_AND_INT)
def abs_(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.abs)


@register_op(Op.NEG, types=FLOAT_AND_INT)
def neg(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.negative)


@register_op(Op.EXP, types=FLOAT)
def exp(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.exp)


@register_op(Op.LOG, types=FLOAT)
def log(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.log)


@register_op(Op.RSQRT, types=(*FLOAT, *QUANT8))
def rsqrt(ctx: OpContext) -> list[np.ndarray]:
    if ctx.tensor(0).type in QUANT8:
        return [_quantized_rsqrt(ctx)]
    return _apply(ctx, lambda v: np.float32(1) / np.sqrt(v))


@register_op(Op.SQRT, types=FLOAT)
def sqrt(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.sqrt)


@register_op(Op.SIN, types=FLOAT)
def sin(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.sin)


@register_op(Op.FLOOR, types=FLOAT)
def floor(ctx: OpContext) -> list[np.ndarray]:
    return _apply(ctx, np.floor)
