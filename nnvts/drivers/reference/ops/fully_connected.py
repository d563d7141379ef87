"""FULLY_CONNECTED: out[b, u] = sum_i in[b, i] * weights[u, i] + bias[u], with a fused activation.

Android's ``fully_connected::prepare``: the input (rank 2 to 4) is read as
[batch, input_size] rows where input_size is the weights' second dimension,
so its element count must be a multiple of input_size; the output is
[batch, units].  A zero batch is allowed (HAL 1.2 zero-sized tensors).

Floats compute in float32 (float16 widened); quantized inputs accumulate
(in - in_zp) * (w - w_zp) exactly (``exact_matmul``: float32 BLAS on
integers in chunks whose sums stay exact) plus the I32 bias, then
requantize like CONV_2D (TFLite's FullyConnected uses the same
GetQuantizedConvolutionMultipler rule).
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.conv import (
    CONV_TYPES,
    QUANT8,
    exact_matmul,
    filter_values,
    float_array,
    float_bias,
    float_finish,
    quant_finish,
    value_bound,
    zero_adjusted,
)
from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperationType as Op


def _rows(ctx: OpContext, input_: Tensor, weights: Tensor) -> tuple[int, int, int]:
    """(batch, input_size, units) after Android's shape checks."""
    if not 2 <= input_.value.ndim <= 4:
        raise op_failure(f"{ctx.name}: input rank must be 2 to 4, got {input_.value.ndim}")
    if weights.value.ndim != 2:
        raise op_failure(f"{ctx.name}: weights must be 2-D, got shape {list(weights.value.shape)}")
    units, input_size = weights.value.shape
    elements = input_.value.size
    batch = elements // input_size if input_size else 0
    if batch * input_size != elements:
        raise op_failure(f"{ctx.name}: {elements} input elements are not a multiple of input size {input_size}")
    return batch, input_size, units


def _check_bias(ctx: OpContext, bias: Tensor | None, units: int) -> None:
    if bias is None:
        return
    if bias.value.ndim != 1 or (units and bias.value.shape[0] and bias.value.shape[0] != units):
        raise op_failure(f"{ctx.name}: bias shape {list(bias.value.shape)} does not match {units} units")


@register_op(Op.FULLY_CONNECTED, types=CONV_TYPES)
def fully_connected(ctx: OpContext) -> list[np.ndarray]:
    input_, weights = ctx.tensor(0), ctx.tensor(1)
    bias = ctx.tensor(2) if ctx.has(2) else None
    activation = int(ctx.scalar(3))
    batch, input_size, units = _rows(ctx, input_, weights)
    _check_bias(ctx, bias, units)
    if input_.type in QUANT8:
        x = zero_adjusted(input_).reshape(batch, input_size)
        acc = exact_matmul(x, filter_values(weights), value_bound(input_) * value_bound(weights))
        return [quant_finish(ctx, acc, input_, weights, bias, activation)]
    acc = float_array(input_).reshape(batch, input_size) @ filter_values(weights).T
    return [float_finish(acc, float_bias(bias), activation, ctx.output())]
