"""SOFTMAX and LOG_SOFTMAX along an axis (default the last one) with a beta scale.

Float types compute exp((x - max) * beta) in float32.  Quantized SOFTMAX
follows the integer kernel Android runs (TFLite's uint8 softmax, also used
for int8): input differences to the row maximum are scaled by
beta * input_scale into Q5.26, differences below ``diff_min`` contribute
nothing, exponentials come from gemmlowp's fixed-point
``exp_on_negative_values``, are summed in Q12.19 and divided with a
fixed-point reciprocal.  The output quantization is fixed by the NNAPI
header: scale 1/256 with zero point 0 (uint8) or -128 (int8).
"""

from __future__ import annotations

import functools

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    calculate_input_radius,
    count_leading_zeros32,
    exp_on_negative_values,
    one_over_one_plus_x_for_x_in_0_1,
    quantize_multiplier_greater_than_one,
    quantized_range,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_int32,
)
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


def _axis(ctx: OpContext, index: int) -> int:
    rank = ctx.tensor(0).rank
    axis = int(ctx.scalar(index, -1))
    if not -rank <= axis < rank:
        raise op_failure(f"{ctx.name}: axis {axis} out of range for rank {rank}")
    return axis % rank


def _beta(ctx: OpContext) -> np.float32:
    beta = np.float32(ctx.scalar(1))
    if not beta > 0:
        raise op_failure(f"{ctx.name}: beta must be positive, got {beta}")
    return beta


def _softmax_quant(ctx: OpContext, beta: np.float32, axis: int) -> np.ndarray:
    x, out = ctx.tensor(0), ctx.output()
    unsigned = x.type == T.TENSOR_QUANT8_ASYMM
    if np.float32(out.scale) != np.float32(1.0 / 256) or out.zero_point != (0 if unsigned else -128):
        raise op_failure(f"{ctx.name}: quantized output must have scale 1/256 and zero point "
                         f"{0 if unsigned else -128}")
    qmin, qmax = quantized_range(x.value.dtype)
    if x.value.size == 0:
        return x.value.copy()
    exp_table, term_table, first_counted = _exp_tables(float(beta), float(np.float32(x.scale)))
    values = x.value.astype(np.int64)
    index = values - values.max(axis=axis, keepdims=True) + _DIFF_SPAN
    counted = index >= first_counted
    exps, terms = exp_table[index], term_table[index]
    sum_of_exps = wrap_int32(terms.sum(axis=axis, keepdims=True)) & 0xFFFFFFFF
    headroom_plus_one = count_leading_zeros32(sum_of_exps)
    num_bits_over_unit = _ACCUMULATION_INTEGER_BITS - headroom_plus_one
    shifted_sum_minus_one = wrap_int32(((sum_of_exps << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31))
    shifted_scale = one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
    result = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted_scale, exps),
                                    num_bits_over_unit + 31 - 8)
    if not unsigned:
        result = result - 128
    result = np.where(counted, np.clip(result, qmin, qmax), qmin)
    return result.astype(x.value.dtype)


# Differences to the row maximum of 8-bit values lie in [-255, 0]: index = difference + 255.
_DIFF_SPAN = 255


@functools.lru_cache(maxsize=256)
def _exp_tables(beta: float, input_scale: float) -> tuple[np.ndarray, np.ndarray, int]:
    """exp of every possible difference to the row maximum in Q0.31, its Q12.19 summand, the first index counted.

    Everything the kernel computes per element before the division depends
    only on that difference (at most 256 values), so it is tabulated once per
    (beta, input scale) with the very same fixed-point steps.  Differences
    below ``diff_min`` are not counted: their summand is 0 (their output is
    forced to the minimum by the caller).
    """
    real_multiplier = min(beta * input_scale * (1 << (31 - _SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    multiplier, left_shift = quantize_multiplier_greater_than_one(real_multiplier)
    diff_min = -calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, left_shift)
    diff = np.arange(-_DIFF_SPAN, 1, dtype=np.int64)
    counted = diff >= diff_min
    rescaled = saturating_rounding_doubling_high_mul(np.maximum(diff, diff_min) * (1 << left_shift), multiplier)
    exps = exp_on_negative_values(rescaled, _SCALED_DIFF_INTEGER_BITS)
    # Accumulate in Q12.19 with int32 wrap-around, as the kernel's FixedPoint addition does.
    terms = np.where(counted, rounding_divide_by_pot(exps, _ACCUMULATION_INTEGER_BITS), 0)
    exps.flags.writeable = False
    terms.flags.writeable = False
    return exps, terms, max(0, diff_min + _DIFF_SPAN)


@register_op(Op.SOFTMAX, types=FLOAT + QUANT8)
def softmax(ctx: OpContext) -> list[np.ndarray]:
    x = ctx.tensor(0)
    if x.rank > 4:
        raise op_failure(f"SOFTMAX: input rank {x.rank} exceeds 4")
    beta = _beta(ctx)
    axis = _axis(ctx, 2)
    if x.type in QUANT8:
        return [_softmax_quant(ctx, beta, axis)]
    values = x.value.astype(np.float32)
    if values.size == 0:
        return [values.astype(ctx.output().dtype)]
    exps = np.exp((values - values.max(axis=axis, keepdims=True)) * beta)
    return [(exps / exps.sum(axis=axis, keepdims=True)).astype(ctx.output().dtype)]


@register_op(Op.LOG_SOFTMAX, types=FLOAT)
def log_softmax(ctx: OpContext) -> list[np.ndarray]:
    """(x - max) * beta - log(sum(exp((x - max) * beta))); Android sums exp computed in double."""
    x = ctx.tensor(0)
    beta = np.float32(ctx.scalar(1))
    axis = _axis(ctx, 2)
    values = x.value.astype(np.float32)
    if values.size == 0:
        return [values.astype(ctx.output().dtype)]
    shifted = (values - values.max(axis=axis, keepdims=True)) * beta
    log_sum = np.log(np.exp(shifted.astype(np.float64)).sum(axis=axis, keepdims=True))
    return [(shifted - log_sum).astype(ctx.output().dtype)]

