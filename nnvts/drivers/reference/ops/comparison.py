"""Broadcasting comparisons, logical ops, SELECT, MAXIMUM, MINIMUM and POW.

Shapes broadcast with the NNAPI rule (trailing dimensions aligned, size-1
dimensions stretched).  Quantized comparisons compare *real* values (Android
dequantizes both sides to float32 first, so inputs with different scales
compare correctly); quantized MAXIMUM, MINIMUM and SELECT requantize each
input to the output's scale and zero point with Android's ``requantize``
(float dequantization, double division, round half away from zero,
saturation) before choosing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import requantize_value
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
COMPARABLE = (T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, *QUANT8)
SELECTABLE = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, *QUANT8)


def broadcast(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NNAPI broadcasting (same as numpy's); incompatible shapes fail the execution."""
    try:
        return np.broadcast_arrays(a, b)
    except ValueError as error:
        raise op_failure(f"{ctx.name}: shapes {a.shape} and {b.shape} do not broadcast") from error


def _comparable(tensor: Tensor) -> np.ndarray:
    """Values as Android compares them: real float32 values for quant8, stored values otherwise."""
    if tensor.type in QUANT8:
        centered = tensor.value.astype(np.int32) - np.int32(tensor.zero_point)
        return centered.astype(np.float32) * np.float32(tensor.scale)
    return tensor.value


def _compare(ctx: OpContext, func: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> list[np.ndarray]:
    a, b = broadcast(ctx, _comparable(ctx.tensor(0)), _comparable(ctx.tensor(1)))
    return [func(a, b).astype(np.bool_)]


@register_op(Op.EQUAL, types=COMPARABLE)
def equal(ctx: OpContext) -> list[np.ndarray]:
    return _compare(ctx, np.equal)


@register_op(Op.NOT_EQUAL, types=COMPARABLE)
def not_equal(ctx: OpContext) -> list[np.ndarray]:
    return _compare(ctx, np.not_equal)


@register_op(Op.GREATER, types=COMPARABLE)
def greater(ctx: OpContext) -> list[np.ndarray]:
    return _compare(ctx, np.greater)


@register_op(Op.GREATER_EQUAL, types=COMPARABLE)
def greater_equal(ctx: OpContext) -> list[np.ndarray]:
    return _compare(ctx, np.greater_equal)


@register_op(Op.LESS, types=COMPARABLE)
def less(ctx: OpContext) -> list[np.ndarray]:
    return _compare(ctx, np.less)


@register_op(Op.LESS_EQUAL, types=COMPARABLE)
def less_equal(ctx: OpContext) -> list[np.ndarray]:
    return _compare(ctx, np.less_equal)


@register_op(Op.LOGICAL_AND, types=(T.TENSOR_BOOL8,))
def logical_and(ctx: OpContext) -> list[np.ndarray]:
    a, b = broadcast(ctx, ctx.array(0).astype(np.bool_), ctx.array(1).astype(np.bool_))
    return [np.logical_and(a, b)]


@register_op(Op.LOGICAL_OR, types=(T.TENSOR_BOOL8,))
def logical_or(ctx: OpContext) -> list[np.ndarray]:
    a, b = broadcast(ctx, ctx.array(0).astype(np.bool_), ctx.array(1).astype(np.bool_))
    return [np.logical_or(a, b)]


@register_op(Op.LOGICAL_NOT, types=(T.TENSOR_BOOL8,))
def logical_not(ctx: OpContext) -> list[np.ndarray]:
    return [np.logical_not(ctx.array(0).astype(np.bool_))]


def _to_output_quantization(ctx: OpContext, tensor: Tensor) -> np.ndarray:
    out = ctx.output()
    return requantize_value(tensor.value, tensor.scale, tensor.zero_point, out.scale, out.zero_point,
                            tensor.value.dtype)


def _choose(ctx: OpContext, func: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> list[np.ndarray]:
    a, b = ctx.tensor(0), ctx.tensor(1)
    if a.type in QUANT8:
        x, y = _to_output_quantization(ctx, a), _to_output_quantization(ctx, b)
    else:
        x, y = a.value, b.value
    x, y = broadcast(ctx, x, y)
    return [func(x, y).astype(ctx.output().dtype)]


@register_op(Op.MAXIMUM, types=SELECTABLE)
def maximum(ctx: OpContext) -> list[np.ndarray]:
    return _choose(ctx, np.maximum)


@register_op(Op.MINIMUM, types=SELECTABLE)
def minimum(ctx: OpContext) -> list[np.ndarray]:
    return _choose(ctx, np.minimum)


@register_op(Op.SELECT, types=SELECTABLE, key_input=1)
def select(ctx: OpContext) -> list[np.ndarray]:
    """mask ? a : b; Android requires the three shapes to be identical (no broadcasting)."""
    mask, a, b = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    if not mask.shape == a.shape == b.shape:
        raise op_failure(f"SELECT: shapes {mask.shape}, {a.shape}, {b.shape} differ")
    if a.type in QUANT8:
        x, y = _to_output_quantization(ctx, a), _to_output_quantization(ctx, b)
    else:
        x, y = a.value, b.value
    return [np.where(mask.value.astype(np.bool_), x, y).astype(ctx.output().dtype)]


@register_op(Op.POW, types=(T.TENSOR_FLOAT32, T.TENSOR_FLOAT16))
def pow_(ctx: OpContext) -> list[np.ndarray]:
    base, exponent = broadcast(ctx, ctx.array(0).astype(np.float32), ctx.array(1).astype(np.float32))
    with np.errstate(all="ignore"):
        return [np.power(base, exponent).astype(ctx.output().dtype)]
