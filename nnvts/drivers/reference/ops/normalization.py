"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION.

Float types compute in float32 (float16 widened and rounded back).
Quantized L2_NORMALIZATION follows the integer kernels Android runs: the sum
of squared centered inputs gives a fixed-point 1/sqrt multiplier
(TFLite ``GetInvSqrtQuantizedMultiplierExp``) applied to 128 * input, into
the fixed output quantization 1/128 with zero point 128 (uint8) or 0 (int8).
The int8 kernel on the last axis folds the 128 into the shift instead
(TFLite ``reference_integer_ops::L2Normalization``), which rounds slightly
differently, so both forms are kept.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    inv_sqrt_quantized_multiplier_exp,
    multiply_by_quantized_multiplier,
    quantized_range,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

_L2_EPSILON = np.float32(1e-6)


def _axis(ctx: OpContext, index: int) -> int:
    rank = ctx.tensor(0).rank
    if rank > 4:
        raise op_failure(f"{ctx.name}: input rank {rank} exceeds 4")
    axis = int(ctx.scalar(index, -1))
    if not -rank <= axis < rank:
        raise op_failure(f"{ctx.name}: axis {axis} out of range for rank {rank}")
    return axis % rank


def _l2_quant(ctx: OpContext, axis: int) -> np.ndarray:
    x, out = ctx.tensor(0), ctx.output()
    unsigned = x.type == T.TENSOR_QUANT8_ASYMM
    zero_point = 128 if unsigned else 0
    if np.float32(out.scale) != np.float32(1.0 / 128) or out.zero_point != zero_point:
        raise op_failure(f"L2_NORMALIZATION: quantized output must have scale 1/128 and zero point {zero_point}")
    centered = x.value.astype(np.int64) - x.zero_point
    squares = (centered * centered).sum(axis=axis, keepdims=True)
    multiplier, shift = inv_sqrt_quantized_multiplier_exp(squares, -1)
    if not unsigned and axis == x.rank - 1:
        scaled = multiply_by_quantized_multiplier(centered, multiplier, shift + 7)
    else:
        scaled = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(centered * 128, multiplier), -shift)
    qmin, qmax = quantized_range(x.value.dtype)
    return np.clip(scaled + zero_point, qmin, qmax).astype(x.value.dtype)


@register_op(Op.L2_NORMALIZATION, types=FLOAT + QUANT8)
def l2_normalization(ctx: OpContext) -> list[np.ndarray]:
    """x / max(sqrt(sum(x**2)), 1e-6) along the axis (default -1, input 1 since HAL 1.2)."""
    axis = _axis(ctx, 1)
    x = ctx.tensor(0)
    if x.type in QUANT8:
        return [_l2_quant(ctx, axis)]
    values = x.value.astype(np.float32)
    norm = np.maximum(np.sqrt((values * values).sum(axis=axis, keepdims=True)), _L2_EPSILON)
    return [(values / norm).astype(ctx.output().dtype)]


@register_op(Op.LOCAL_RESPONSE_NORMALIZATION, types=FLOAT)
def local_response_normalization(ctx: OpContext) -> list[np.ndarray]:
    """x / (bias + alpha * sum of squares within +-radius along the axis) ** beta."""
    axis = _axis(ctx, 5)
    radius = int(ctx.scalar(1))
    if radius < 0:
        raise op_failure(f"LOCAL_RESPONSE_NORMALIZATION: negative radius {radius}")
    bias, alpha, beta = (np.float32(ctx.scalar(i)) for i in (2, 3, 4))
    values = np.moveaxis(ctx.tensor(0).value.astype(np.float32), axis, -1)
    depth = values.shape[-1]
    squares = np.concatenate([np.zeros((*values.shape[:-1], 1), np.float32), values * values], axis=-1)
    prefix = np.cumsum(squares, axis=-1, dtype=np.float64)
    index = np.arange(depth)
    window = prefix[..., np.minimum(index + radius + 1, depth)] - prefix[..., np.maximum(index - radius, 0)]
    result = values * np.power(bias + alpha * window.astype(np.float32), -beta)
    return [np.moveaxis(result, -1, axis).astype(ctx.output().dtype)]


@register_op(Op.INSTANCE_NORMALIZATION, types=FLOAT)
def instance_normalization(ctx: OpContext) -> list[np.ndarray]:
    """(x - mean) * gamma / sqrt(var + epsilon) + beta over each (batch, channel) plane.

    Input 4 selects the layout (true = NCHW); the statistics run over the two
    spatial axes of that layout, so no transpose is needed.
    """
    x = ctx.tensor(0)
    if x.rank != 4:
        raise op_failure(f"INSTANCE_NORMALIZATION: input must be 4-D, got rank {x.rank}")
    gamma, beta, epsilon = (np.float32(ctx.scalar(i)) for i in (1, 2, 3))
    spatial = (2, 3) if bool(ctx.scalar(4, False)) else (1, 2)
    values = x.value.astype(np.float32)
    if values.size == 0:
        return [values.astype(ctx.output().dtype)]
    mean = values.mean(axis=spatial, keepdims=True, dtype=np.float32)
    variance = np.square(values - mean).mean(axis=spatial, keepdims=True, dtype=np.float32)
    sigma = np.sqrt(variance + epsilon)
    return [((values - mean) * gamma / sigma + beta).astype(ctx.output().dtype)]
