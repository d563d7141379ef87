"""BATCH_MATMUL (feature level 6): one matrix product per batch slice, each side optionally adjointed.

OperationType.aidl: inputs of rank 2 to 4 and the same rank, the same batch
dimensions, ``[..., r_x, c_x] x [..., r_y, c_y]``; ``adj_x`` / ``adj_y``
transpose the last two dimensions of their side first (there are no complex
types, so the adjoint is the transpose).  Android's ``prepare`` refuses at
execution what does not multiply (a zero or mismatched inner dimension).

Floats accumulate in float64 and round once to the output type (within the
float criteria of any order of summation); TENSOR_INT32 wraps as C++ int32
arithmetic does.  TENSOR_QUANT8_ASYMM_SIGNED is TFLite's quantized
BatchMatMul as Android calls it: exact int32 sums of
``(x - x_zp) * (y - y_zp)``, then ``MultiplyByQuantizedMultiplier`` with the
multiplier ``double(float(s_x * s_y)) / s_out`` (GetQuantizedConvolutionMultiplier:
the product of the input scales is a float before it is widened), plus the
output zero point, clamped to int8 (no fused activation).
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import multiply_by_quantized_multiplier, quantized_range, wrap_int32
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op
from vts.hal.fixedpoint import quantize_multiplier

MATMUL_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)


def _sides(ctx: OpContext) -> tuple[np.ndarray, np.ndarray]:
    """The two operands' stored values, adjointed as asked, after Android's shape checks."""
    x, y = ctx.tensor(0).value, ctx.tensor(1).value
    if x.ndim != y.ndim:
        raise op_failure(f"{ctx.name}: input ranks {x.ndim} and {y.ndim} differ")
    if not 2 <= x.ndim <= 4:
        raise op_failure(f"{ctx.name}: input rank must be 2 to 4, got {x.ndim}")
    if x.shape[:-2] != y.shape[:-2]:
        raise op_failure(f"{ctx.name}: batch dimensions {list(x.shape[:-2])} and {list(y.shape[:-2])} differ")
    if 0 in x.shape[-2:] or 0 in y.shape[-2:]:
        raise op_failure(f"{ctx.name}: a matrix of shape {list(x.shape)} or {list(y.shape)} is empty")
    if bool(ctx.scalar(2)):
        x = np.swapaxes(x, -1, -2)
    if bool(ctx.scalar(3)):
        y = np.swapaxes(y, -1, -2)
    if x.shape[-1] != y.shape[-2]:
        raise op_failure(f"{ctx.name}: cannot multiply [{x.shape[-2]}, {x.shape[-1]}] by "
                         f"[{y.shape[-2]}, {y.shape[-1]}]")
    return x, y


def _quantized(ctx: OpContext, x: np.ndarray, y: np.ndarray, lhs: Tensor, rhs: Tensor) -> np.ndarray:
    out = ctx.output()
    acc = np.matmul(x.astype(np.int64) - lhs.zero_point, y.astype(np.int64) - rhs.zero_point)
    product = float(np.float32(lhs.scale) * np.float32(rhs.scale))
    multiplier, shift = quantize_multiplier(product / float(np.float32(out.scale)))
    scaled = multiply_by_quantized_multiplier(wrap_int32(acc), multiplier, shift) + out.zero_point
    low, high = quantized_range(out.dtype)
    return np.clip(scaled, low, high).astype(out.dtype)


@register_op(Op.BATCH_MATMUL, types=MATMUL_TYPES)
def batch_matmul(ctx: OpContext) -> list[np.ndarray]:
    lhs, rhs = ctx.tensor(0), ctx.tensor(1)
    x, y = _sides(ctx)
    out = ctx.output()
    if lhs.type == T.TENSOR_QUANT8_ASYMM_SIGNED:
        return [_quantized(ctx, x, y, lhs, rhs)]
    if lhs.type == T.TENSOR_INT32:
        return [wrap_int32(np.matmul(x.astype(np.int64), y.astype(np.int64))).astype(np.int32)]
    with np.errstate(all="ignore"):
        return [np.matmul(x.astype(np.float64), y.astype(np.float64)).astype(out.dtype)]
