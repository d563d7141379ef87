"""RNN and SVDF: single-step recurrent cells over float tensors.

Android's CPU path computes both in float32; TENSOR_FLOAT16 models are widened
to float32, computed, and rounded back once at the end (``SVDF::Eval`` does
exactly that; ``RNNStep<_Float16>`` accumulates in half precision, whose
result agrees with the float32 one within the fp16 tolerance the goldens are
checked with).  The activation helpers here are shared with the LSTM cell and
the sequence operations.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

FLOAT_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)

# TfLiteFusedActivation / ActivationFn codes used by the recurrent operations.
ACT_NONE, ACT_RELU, ACT_RELU1, ACT_RELU6, ACT_TANH, ACT_SIGN_BIT, ACT_SIGMOID = range(7)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """float32 logistic, as tflite's ``ApplySigmoidToVector``."""
    with np.errstate(over="ignore"):
        return (np.float32(1.0) / (np.float32(1.0) + np.exp(-x))).astype(np.float32)


def apply_activation(x: np.ndarray, code: int, name: str) -> np.ndarray:
    """Apply an RNN/LSTM activation code (NONE, RELU, RELU1, RELU6, TANH, SIGN_BIT, SIGMOID).

    LSTM and RNN take the TfLite activation enum rather than the 0..3 FuseCode:
    LSTM models normally ask for TANH (4).
    """
    if code == ACT_NONE:
        return x
    if code == ACT_RELU:
        return np.maximum(x, np.float32(0.0))
    if code == ACT_RELU1:
        return np.clip(x, np.float32(-1.0), np.float32(1.0))
    if code == ACT_RELU6:
        return np.clip(x, np.float32(0.0), np.float32(6.0))
    if code == ACT_TANH:
        return np.tanh(x)
    if code == ACT_SIGN_BIT:
        return np.signbit(x).astype(x.dtype)
    if code == ACT_SIGMOID:
        return sigmoid(x)
    raise op_failure(f"{name}: unsupported activation {code}")


def float_input(ctx: OpContext, index: int) -> np.ndarray:
    """Input ``index`` widened to float32 (the Android CPU path's compute type)."""
    return np.asarray(ctx.array(index), dtype=np.float32)


def optional_float_input(ctx: OpContext, index: int) -> np.ndarray | None:
    """An optional tensor input as float32, or None when omitted (no value, or no elements)."""
    if not ctx.has(index) or ctx.array(index).size == 0:
        return None
    return float_input(ctx, index)


def expect_shape(ctx: OpContext, what: str, array: np.ndarray | None, shape: tuple[int, ...]) -> None:
    """Android's ``NN_CHECK_EQ`` on dimensions: a mismatch fails the execution."""
    if array is not None and tuple(array.shape) != tuple(shape):
        raise op_failure(f"{ctx.name}: {what} has shape {list(array.shape)}, expected {list(shape)}")


def rnn_step(x: np.ndarray, hidden: np.ndarray, weights: np.ndarray, recurrent: np.ndarray, bias: np.ndarray,
             activation: int, name: str, aux: np.ndarray | None = None,
             aux_weights: np.ndarray | None = None) -> np.ndarray:
    """One basic RNN step: act(x·Wᵀ + aux·Waᵀ + h·Rᵀ + b), all [batch, units] float32."""
    total = x @ weights.T + bias
    if aux is not None and aux_weights is not None:
        total = total + aux @ aux_weights.T
    total = total + hidden @ recurrent.T
    return apply_activation(total.astype(np.float32), activation, name)


@register_op(Op.RNN, types=FLOAT_TYPES)
def rnn(ctx: OpContext) -> list[np.ndarray]:
    """RNN: inputs x [batch, in], W [units, in], R [units, units], b [units], h [batch, units], act."""
    x, weights, recurrent = float_input(ctx, 0), float_input(ctx, 1), float_input(ctx, 2)
    bias, hidden = float_input(ctx, 3), float_input(ctx, 4)
    if x.ndim != 2 or weights.ndim != 2:
        raise op_failure(f"{ctx.name}: input and weights must be 2-D")
    batch, units = x.shape[0], weights.shape[0]
    expect_shape(ctx, "weights", weights, (units, x.shape[1]))
    expect_shape(ctx, "recurrent weights", recurrent, (units, units))
    expect_shape(ctx, "bias", bias, (units,))
    expect_shape(ctx, "hidden state", hidden, (batch, units))
    output = rnn_step(x, hidden, weights, recurrent, bias, int(ctx.scalar(5)), ctx.name)
    dtype = ctx.output(1).dtype
    return [output.astype(ctx.output(0).dtype), output.astype(dtype)]


@register_op(Op.SVDF, types=FLOAT_TYPES)
def svdf(ctx: OpContext) -> list[np.ndarray]:
    """SVDF: a rank-decomposed time convolution over a per-filter memory of past activations.

    State is [batch, filters·memory]: each filter keeps its last ``memory``
    feature activations.  The newest activation goes in the last slot, the
    weighted sum over time (weights_time) is reduced over ``rank`` filters
    per unit, and the state is shifted left by one for the next step
    (``SVDF::EvalFloat32``).
    """
    x, features, time_weights = float_input(ctx, 0), float_input(ctx, 1), float_input(ctx, 2)
    bias, state = optional_float_input(ctx, 3), float_input(ctx, 4)
    rank, activation = int(ctx.scalar(5)), int(ctx.scalar(6))
    if x.ndim != 2 or features.ndim != 2 or time_weights.ndim != 2:
        raise op_failure(f"{ctx.name}: input, weights_feature and weights_time must be 2-D")
    batch, filters, memory = x.shape[0], features.shape[0], time_weights.shape[1]
    if rank <= 0 or filters % rank:
        raise op_failure(f"{ctx.name}: {filters} filters are not a multiple of rank {rank}")
    units = filters // rank
    expect_shape(ctx, "weights_feature", features, (filters, x.shape[1]))
    expect_shape(ctx, "weights_time", time_weights, (filters, memory))
    expect_shape(ctx, "bias", bias, (units,))
    expect_shape(ctx, "state", state, (batch, filters * memory))
    window = state.reshape(batch, filters, memory).copy()
    window[:, :, -1] = x @ features.T
    per_filter = np.einsum("bfm,fm->bf", window, time_weights, dtype=np.float32)
    output = per_filter.reshape(batch, units, rank).sum(axis=2, dtype=np.float32)
    if bias is not None:
        output = output + bias
    output = apply_activation(output.astype(np.float32), activation, ctx.name)
    shifted = np.zeros_like(window)
    shifted[:, :, :-1] = window[:, :, 1:]
    return [shifted.reshape(batch, filters * memory).astype(ctx.output(0).dtype),
            output.astype(ctx.output(1).dtype)]
