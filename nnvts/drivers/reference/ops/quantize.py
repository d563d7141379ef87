"""QUANTIZE, DEQUANTIZE and CAST: conversions between operand types.

QUANTIZE divides by the output scale in float32, rounds half away from zero
(C ``round``), adds the zero point and saturates, as Android's Quantize.cpp
does.  DEQUANTIZE computes scale * (q - zero_point) in float32 (per-channel
scales along ``channelDim`` for TENSOR_QUANT8_SYMM_PER_CHANNEL) and rounds
to float16 when asked.  CAST converts stored values, ignoring quantization:
float to integer truncates toward zero, anything to uint8 saturates to
[0, 255] first, and same-type casts copy (HAL 1.3 identity casts).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import quantized_range, round_half_away
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op
from vts.hal.types import Operand

FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
DEQUANTIZABLE = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                 T.TENSOR_QUANT8_ASYMM_SIGNED)
CASTABLE = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)
IDENTITY_CASTS = (T.TENSOR_BOOL8, T.TENSOR_INT32, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM,
                  T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM)


@register_op(Op.QUANTIZE, types=FLOAT)
def quantize(ctx: OpContext) -> list[np.ndarray]:
    out = ctx.output()
    if out.type not in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        raise op_failure("QUANTIZE: output must be TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED")
    with np.errstate(all="ignore"):
        scaled = ctx.array(0).astype(np.float32) / np.float32(out.scale)
        shifted = np.float32(out.zero_point) + round_half_away(scaled).astype(np.float32)
    qmin, qmax = quantized_range(out.dtype)
    return [np.clip(np.nan_to_num(shifted, nan=qmax), qmin, qmax).astype(out.dtype)]


@register_op(Op.DEQUANTIZE, types=DEQUANTIZABLE)
def dequantize(ctx: OpContext) -> list[np.ndarray]:
    x = ctx.tensor(0)
    if x.rank > 4:
        raise op_failure(f"DEQUANTIZE: input rank {x.rank} exceeds 4")
    centered = (x.value.astype(np.int32) - np.int32(x.zero_point)).astype(np.float32)
    if x.channel_quant is not None:
        shape = [1] * x.rank
        shape[x.channel_quant.channel_dim] = -1
        scale = np.asarray(x.channel_quant.scales, dtype=np.float32).reshape(shape)
    else:
        scale = np.float32(x.scale)
    return [(scale * centered).astype(ctx.output().dtype)]


def _cast_supported(inputs: Sequence[Operand], outputs: Sequence[Operand]) -> bool:
    source, target = inputs[0].type, outputs[0].type
    return (source in CASTABLE and target in CASTABLE) or (source == target and source in IDENTITY_CASTS)


@register_op(Op.CAST, types=CASTABLE + IDENTITY_CASTS, supports=_cast_supported)
def cast(ctx: OpContext) -> list[np.ndarray]:
    x, out = ctx.tensor(0), ctx.output()
    if x.type == out.type:
        return [x.value.copy()]
    if x.type not in CASTABLE or out.type not in CASTABLE:
        raise op_failure("CAST: unsupported combination of operand types")
    values = x.value
    if out.type == T.TENSOR_QUANT8_ASYMM:
        values = np.clip(values, 0, 255)
    if out.dtype.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(out.dtype)
        values = np.clip(np.trunc(np.nan_to_num(values.astype(np.float64))), info.min, info.max)
    return [values.astype(out.dtype)]
