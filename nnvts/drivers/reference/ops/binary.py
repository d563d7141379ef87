"""ADD, SUB, MUL, DIV: broadcasting binary arithmetic with a fused activation.

Float types compute in float32 (float16 is widened and rounded back, as the
Android CPU path does); quantized types follow TFLite's integer kernels:
ADD/SUB rescale both inputs to a common 2**20 fixed-point domain before
summing, MUL requantizes the integer product once.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    activation_range_float,
    activation_range_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

ARITHMETIC_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                    T.TENSOR_INT32)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def _float_result(ctx: OpContext, result: np.ndarray) -> np.ndarray:
    low, high = activation_range_float(int(ctx.scalar(2)))
    result = np.clip(result, low, high)
    return result.astype(ctx.output().dtype)


def _float_operands(a: Tensor, b: Tensor) -> tuple[np.ndarray, np.ndarray]:
    return a.value.astype(np.float32), b.value.astype(np.float32)


def _int32_activation_check(ctx: OpContext) -> None:
    if int(ctx.scalar(2)) != 0:
        raise op_failure(f"{ctx.name}: TENSOR_INT32 requires fused activation NONE")


def _clamp_quantized(ctx: OpContext, raw: np.ndarray) -> np.ndarray:
    out = ctx.output()
    low, high = activation_range_quantized(int(ctx.scalar(2)), out.scale, out.zero_point, out.dtype)
    return np.clip(raw, low, high).astype(out.dtype)


def _quant_add_sub(ctx: OpContext, sign: int) -> np.ndarray:
    """TFLite quantized ADD/SUB: inputs scaled into a 2**20 domain, summed, requantized."""
    a, b = ctx.tensor(0), ctx.tensor(1)
    out = ctx.output()
    left_shift = 20
    twice_max_input_scale = 2.0 * max(a.scale, b.scale)
    m1, s1 = quantize_multiplier(a.scale / twice_max_input_scale)
    m2, s2 = quantize_multiplier(b.scale / twice_max_input_scale)
    mo, so = quantize_multiplier(twice_max_input_scale / ((1 << left_shift) * out.scale))
    x1 = (a.value.astype(np.int64) - a.zero_point) * (1 << left_shift)
    x2 = (b.value.astype(np.int64) - b.zero_point) * (1 << left_shift)
    scaled1 = multiply_by_quantized_multiplier(x1, m1, s1)
    scaled2 = multiply_by_quantized_multiplier(x2, m2, s2)
    total = scaled1 + sign * scaled2
    raw = multiply_by_quantized_multiplier(total, mo, so) + out.zero_point
    return _clamp_quantized(ctx, raw)


def _binary(ctx: OpContext, sign: int) -> np.ndarray:
    a, b = ctx.tensor(0), ctx.tensor(1)
    if a.type in QUANT8:
        return _quant_add_sub(ctx, sign)
    if a.type == T.TENSOR_INT32:
        _int32_activation_check(ctx)
        result = a.value.astype(np.int64) + sign * b.value.astype(np.int64)
        return result.astype(np.int32)
    x, y = _float_operands(a, b)
    return _float_result(ctx, x + y if sign > 0 else x - y)


@register_op(Op.ADD, types=ARITHMETIC_TYPES)
def add(ctx: OpContext) -> list[np.ndarray]:
    return [_binary(ctx, +1)]


@register_op(Op.SUB, types=ARITHMETIC_TYPES)
def sub(ctx: OpContext) -> list[np.ndarray]:
    return [_binary(ctx, -1)]


@register_op(Op.MUL, types=ARITHMETIC_TYPES)
def mul(ctx: OpContext) -> list[np.ndarray]:
    a, b = ctx.tensor(0), ctx.tensor(1)
    if a.type in QUANT8:
        out = ctx.output()
        multiplier, shift = quantize_multiplier(a.scale * b.scale / out.scale)
        product = (a.value.astype(np.int64) - a.zero_point) * (b.value.astype(np.int64) - b.zero_point)
        raw = multiply_by_quantized_multiplier(product, multiplier, shift) + out.zero_point
        return [_clamp_quantized(ctx, raw)]
    if a.type == T.TENSOR_INT32:
        _int32_activation_check(ctx)
        return [(a.value.astype(np.int64) * b.value.astype(np.int64)).astype(np.int32)]
    x, y = _float_operands(a, b)
    return [_float_result(ctx, x * y)]


@register_op(Op.DIV, types=(T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32))
def div(ctx: OpContext) -> list[np.ndarray]:
    a, b = ctx.tensor(0), ctx.tensor(1)
    if a.type == T.TENSOR_INT32:
        _int32_activation_check(ctx)
        x, y = np.broadcast_arrays(a.value.astype(np.int64), b.value.astype(np.int64))
        safe = np.where(y == 0, 1, y)
        # NNAPI integer DIV rounds toward negative infinity (floor division).
        return [np.where(y == 0, 0, np.floor_divide(x, safe)).astype(np.int32)]
    x, y = _float_operands(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return [_float_result(ctx, x / y)]
