"""RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU: element-wise activations.

Float types compute in float32 (float16 widened and rounded back, as the
Android CPU path does).  Quantized types follow the TFLite integer kernels
Android runs: RELU* clamp the stored values (the output reuses the input's
quantization), LOGISTIC and TANH rescale the input into Q4.27 and evaluate
gemmlowp's fixed-point logistic/tanh into the fixed output quantization the
NNAPI header prescribes (LOGISTIC 1/256, zero point 0 / -128; TANH 1/128,
zero point 128 / 0), HARD_SWISH uses TFLite's int16 fixed-point recipe and
PRELU requantizes the positive and negative branches separately.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    activation_range_quantized,
    calculate_input_radius,
    fixed_point_logistic,
    fixed_point_tanh,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantize_multiplier_greater_than_one,
    quantized_range,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
ACTIVATION_TYPES = FLOAT + QUANT8

# Integer bits of the fixed-point input to LOGISTIC/TANH (TFLite kInputIntegerBits).
_INPUT_INTEGER_BITS = 4


def _float_input(tensor: Tensor) -> np.ndarray:
    return tensor.value.astype(np.float32)


def _check_rank(ctx: OpContext, limit: int = 4) -> None:
    if ctx.tensor(0).rank > limit:
        raise op_failure(f"{ctx.name}: input rank {ctx.tensor(0).rank} exceeds {limit}")


def _check_same_quantization(ctx: OpContext) -> None:
    """Quantized RELU* keep the input's scale and zero point (Android prepares the output from the input)."""
    x, out = ctx.tensor(0), ctx.output()
    if np.float32(out.scale) != np.float32(x.scale) or out.zero_point != x.zero_point:
        raise op_failure(f"{ctx.name}: quantized output must reuse the input scale and zero point")


def _relu(ctx: OpContext, code: int, low: float, high: float) -> list[np.ndarray]:
    _check_rank(ctx)
    x = ctx.tensor(0)
    if x.type in QUANT8:
        _check_same_quantization(ctx)
        qmin, qmax = activation_range_quantized(code, x.scale, x.zero_point, x.value.dtype)
        return [np.clip(x.value, qmin, qmax).astype(x.value.dtype)]
    return [np.clip(_float_input(x), low, high).astype(ctx.output().dtype)]


@register_op(Op.RELU, types=ACTIVATION_TYPES)
def relu(ctx: OpContext) -> list[np.ndarray]:
    return _relu(ctx, 1, 0.0, np.inf)


@register_op(Op.RELU1, types=ACTIVATION_TYPES)
def relu1(ctx: OpContext) -> list[np.ndarray]:
    return _relu(ctx, 2, -1.0, 1.0)


@register_op(Op.RELU6, types=ACTIVATION_TYPES)
def relu6(ctx: OpContext) -> list[np.ndarray]:
    return _relu(ctx, 3, 0.0, 6.0)


def _check_fixed_output(ctx: OpContext, scale: float, unsigned_zero_point: int, signed_zero_point: int) -> None:
    x, out = ctx.tensor(0), ctx.output()
    zero_point = unsigned_zero_point if x.type == T.TENSOR_QUANT8_ASYMM else signed_zero_point
    if np.float32(out.scale) != np.float32(scale) or out.zero_point != zero_point:
        raise op_failure(f"{ctx.name}: quantized output must have scale {scale} and zero point {zero_point}")


def _q4_input(x: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centered input rescaled to Q4.27, plus the masks of inputs beyond the representable radius.

    Android: multiplier = scale * 2**27 (must exceed 1), radius =
    CalculateInputRadius(4, left_shift); inputs at or past the radius saturate.
    """
    multiplier, left_shift = quantize_multiplier_greater_than_one(float(np.float32(x.scale)) * (1 << 27))
    radius = calculate_input_radius(_INPUT_INTEGER_BITS, left_shift)
    centered = x.value.astype(np.int64) - x.zero_point
    low, high = centered <= -radius, centered >= radius
    clipped = np.clip(centered, -radius, radius)
    rescaled = saturating_rounding_doubling_high_mul(clipped * (1 << left_shift), multiplier)
    return rescaled, low, high


@register_op(Op.LOGISTIC, types=ACTIVATION_TYPES)
def logistic(ctx: OpContext) -> list[np.ndarray]:
    _check_rank(ctx)
    x = ctx.tensor(0)
    if x.type not in QUANT8:
        values = _float_input(x)
        with np.errstate(over="ignore"):
            return [(np.float32(1) / (np.float32(1) + np.exp(-values))).astype(ctx.output().dtype)]
    _check_fixed_output(ctx, 1.0 / 256, 0, -128)
    rescaled, low, high = _q4_input(x)
    q0 = fixed_point_logistic(rescaled, _INPUT_INTEGER_BITS)
    out = rounding_divide_by_pot(q0, 23)  # Q0.31 -> Q23.8
    qmin, qmax = quantized_range(x.value.dtype)
    # uint8: a rounded-up 256 becomes 255; int8: shift to the -128 zero point.
    unsigned = x.type == T.TENSOR_QUANT8_ASYMM
    out = np.where(out == 256, 255, out) if unsigned else np.clip(out - 128, qmin, qmax)
    out = np.where(low, qmin, np.where(high, qmax, out))
    return [out.astype(x.value.dtype)]


@register_op(Op.TANH, types=ACTIVATION_TYPES)
def tanh(ctx: OpContext) -> list[np.ndarray]:
    _check_rank(ctx)
    x = ctx.tensor(0)
    if x.type not in QUANT8:
        return [np.tanh(_float_input(x)).astype(ctx.output().dtype)]
    _check_fixed_output(ctx, 1.0 / 128, 128, 0)
    rescaled, low, high = _q4_input(x)
    q0 = fixed_point_tanh(rescaled, _INPUT_INTEGER_BITS)
    out = rounding_divide_by_pot(q0, 24)  # Q0.31 -> Q24.7
    qmin, qmax = quantized_range(x.value.dtype)
    if x.type == T.TENSOR_QUANT8_ASYMM:
        out = out + 128
        out = np.where(out == 256, 255, out)
    else:
        out = np.clip(out, qmin, qmax)
    out = np.where(low, qmin, np.where(high, qmax, out))
    return [out.astype(x.value.dtype)]


@register_op(Op.ELU, types=FLOAT)
def elu(ctx: OpContext) -> list[np.ndarray]:
    """max(0, x) + min(0, alpha * (exp(x) - 1)), as Android's Elu.cpp writes it."""
    values = _float_input(ctx.tensor(0))
    alpha = np.float32(ctx.scalar(1))
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.maximum(np.float32(0), values) + np.minimum(np.float32(0), alpha * (np.exp(values) - 1))
    return [result.astype(ctx.output().dtype)]


def _down_scale_to_int16(multiplier: int) -> int:
    """Android's ``DownScaleInt32ToInt16Multiplier``: Q0.31 -> Q0.15 with rounding and saturation."""
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1
    return (multiplier + (1 << 15)) >> 16


def _int16_rounding_doubling_high_mul(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """gemmlowp int16 ``SaturatingRoundingDoublingHighMul``."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    product = a * b
    total = product + np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    quotient = np.where(total >= 0, total >> 15, -((-total) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, quotient)


def _int16_doubling_high_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite int16 ``SaturatingDoublingHighMul`` (no rounding nudge; cancels the bias above)."""
    product = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    quotient = np.where(product >= 0, product >> 15, -((-product) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, quotient)


def _int16_saturating_left_shift(x: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.int64) * (1 << amount), -32768, 32767)


def _hard_swish_quant(ctx: OpContext) -> np.ndarray:
    """TFLite reference HardSwish on quant8, with the multipliers Android's Activation.cpp derives."""
    x, out = ctx.tensor(0), ctx.output()
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(x.scale)
    reluish_scale = np.float32(3.0 / 32768.0)
    out_multiplier32, out_exponent = quantize_multiplier(float(hires_input_scale / np.float32(out.scale)))
    if out_exponent > 0:
        raise op_failure("HARD_SWISH: input scale / output scale must not exceed 128")
    out_multiplier = _down_scale_to_int16(out_multiplier32)
    reluish_multiplier32, reluish_exponent = quantize_multiplier(float(hires_input_scale / reluish_scale))
    reluish_multiplier = _down_scale_to_int16(reluish_multiplier32)

    hires = (x.value.astype(np.int64) - x.zero_point) * (1 << 7)
    preshift_output = _int16_rounding_doubling_high_mul(hires, out_multiplier)
    reluish = hires
    if reluish_exponent > 0:
        reluish = _int16_saturating_left_shift(reluish, reluish_exponent - 1)
    reluish = _int16_rounding_doubling_high_mul(reluish, reluish_multiplier)
    if reluish_exponent > 0:
        reluish = _int16_saturating_left_shift(reluish, 1)
    if reluish_exponent < 0:
        reluish = rounding_divide_by_pot(reluish, -reluish_exponent)
    reluish = (reluish + (1 << 15)) >> 1  # [-1, 1] -> [0, 1] in Q0.15
    result = rounding_divide_by_pot(_int16_doubling_high_mul(reluish, preshift_output), -out_exponent)
    qmin, qmax = quantized_range(x.value.dtype)
    return np.clip(result + out.zero_point, qmin, qmax).astype(x.value.dtype)


@register_op(Op.HARD_SWISH, types=ACTIVATION_TYPES)
def hard_swish(ctx: OpContext) -> list[np.ndarray]:
    x = ctx.tensor(0)
    if x.type in QUANT8:
        return [_hard_swish_quant(ctx)]
    values = _float_input(x)
    result = values * np.minimum(np.float32(6), np.maximum(np.float32(0), values + np.float32(3))) / np.float32(6)
    return [result.astype(ctx.output().dtype)]


def _broadcast(ctx: OpContext, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        return np.broadcast_arrays(a, b)
    except ValueError as error:
        raise op_failure(f"{ctx.name}: shapes {a.shape} and {b.shape} do not broadcast") from error


@register_op(Op.PRELU, types=ACTIVATION_TYPES)
def prelu(ctx: OpContext) -> list[np.ndarray]:
    """x >= 0 ? x : alpha * x with alpha broadcast against x (NNAPI broadcasting rules)."""
    x, alpha = ctx.tensor(0), ctx.tensor(1)
    if x.type not in QUANT8:
        values, slopes = _broadcast(ctx, _float_input(x), _float_input(alpha))
        return [np.where(values >= 0, values, values * slopes).astype(ctx.output().dtype)]
    out = ctx.output()
    # Android: the positive ratio is a float division, the product scale a float product used as double.
    m_pos, s_pos = quantize_multiplier(float(np.float32(x.scale) / np.float32(out.scale)))
    product_scale = float(np.float32(x.scale) * np.float32(alpha.scale))
    m_neg, s_neg = quantize_multiplier(product_scale / float(np.float32(out.scale)))
    centered, slopes = _broadcast(ctx, x.value.astype(np.int64) - x.zero_point,
                                  alpha.value.astype(np.int64) - alpha.zero_point)
    positive = multiply_by_quantized_multiplier(centered, m_pos, s_pos)
    negative = multiply_by_quantized_multiplier(centered * slopes, m_neg, s_neg)
    qmin, qmax = quantized_range(x.value.dtype)
    result = np.where(centered >= 0, positive, negative) + out.zero_point
    return [np.clip(result, qmin, qmax).astype(x.value.dtype)]
