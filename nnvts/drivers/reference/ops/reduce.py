"""MEAN, REDUCE_{ALL,ANY,MAX,MIN,PROD,SUM}, ARGMAX, ARGMIN, TOPK_V2.

Axes may be negative and may repeat (Android resolves and deduplicates
them); an axis out of range fails the execution.  A reduction that would
leave a rank-0 tensor reports shape ``[1]``, as Android does (regression
tests b/155508675).

Numerics, following Android's CPU path:

* Float16 is widened to float32, reduced, and rounded back.
* MEAN of quantized tensors ignores the quantization entirely: Android runs
  ``tflite::reference_ops::Mean<T, int32>`` on the stored values, i.e. an
  int32 sum divided by the element count with C++ truncation toward zero
  (the output reuses the input's scale and zero point).
* REDUCE_MAX/MIN of quantized tensors compare stored values (same
  quantization in and out).  Empty reductions yield the identity element
  Android starts from (lowest/highest value, 0, 1, true, false).
* ARGMAX/ARGMIN return the first index of the extreme value.
* TOPK_V2 sorts (value, index) pairs descending, so equal values come out
  with the larger index first (Android's ``nth_element`` + ``sort`` + ``reverse``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.ops.reshape import GENERIC_TYPES, MOVE_TYPES, at_least_1d, int_vector, resolve_axis
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
MAX_MIN_TYPES = (*FLOATS, *QUANT8)


def _axes(ctx: OpContext, rank: int) -> tuple[int, ...]:
    """Input 1 (1-D TENSOR_INT32) resolved to sorted unique non-negative axes."""
    return tuple(sorted({resolve_axis(ctx, a, rank) for a in int_vector(ctx, 1)}))


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> list[int]:
    if keep_dims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


def _finish(ctx: OpContext, result: np.ndarray, shape: list[int]) -> np.ndarray:
    # A float16 output computed in float32 saturates to +-inf past 65504, as IEEE rounding (and a float16
    # accumulator) gives: the expected result, not a fault, so numpy's cast warning stays out of quiet runs.
    with np.errstate(over="ignore"):
        return at_least_1d(np.asarray(result).reshape(shape)).astype(ctx.output().dtype)


# --- MEAN ---------------------------------------------------------------------------------------


def _quantized_mean(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """int32 sum of stored values / element count, truncated toward zero (C++ integer division)."""
    total = values.astype(np.int64).sum(axis=axes)
    count = int(np.prod([values.shape[a] for a in axes], dtype=np.int64))
    if count == 0:
        return np.zeros_like(total)
    return np.where(total < 0, -((-total) // count), total // count)


@register_op(Op.MEAN, types=MOVE_TYPES)
def mean(ctx: OpContext) -> list[np.ndarray]:
    """Input 2 is an INT32 keep_dims flag (> 0 keeps reduced dimensions as 1)."""
    tensor = ctx.tensor(0)
    axes = _axes(ctx, tensor.rank)
    shape = _reduced_shape(tensor.shape, axes, int(ctx.scalar(2)) > 0)
    if tensor.type in QUANT8:
        return [_finish(ctx, _quantized_mean(tensor.value, axes), shape)]
    values = tensor.value.astype(np.float32)
    count = np.float32(np.prod([values.shape[a] for a in axes]))
    with np.errstate(invalid="ignore", divide="ignore"):
        result = values.sum(axis=axes, dtype=np.float32) / count
    return [_finish(ctx, result, shape)]


# --- REDUCE_* -----------------------------------------------------------------------------------


def _reduce(ctx: OpContext, reducer: Callable[..., np.ndarray], initial: Callable[[np.dtype], object]) -> np.ndarray:
    """Common REDUCE_* body: input 2 is a BOOL keep_dims; float16 is reduced in float32."""
    tensor = ctx.tensor(0)
    axes = _axes(ctx, tensor.rank)
    shape = _reduced_shape(tensor.shape, axes, bool(ctx.scalar(2)))
    values = tensor.value.astype(np.float32) if tensor.type == T.TENSOR_FLOAT16 else tensor.value
    result = reducer(values, axis=axes, initial=initial(tensor.value.dtype))
    return _finish(ctx, result, shape)


def _lowest(dtype: np.dtype) -> object:
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> object:
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


@register_op(Op.REDUCE_MAX, types=MAX_MIN_TYPES)
def reduce_max(ctx: OpContext) -> list[np.ndarray]:
    return [_reduce(ctx, np.max, _lowest)]


@register_op(Op.REDUCE_MIN, types=MAX_MIN_TYPES)
def reduce_min(ctx: OpContext) -> list[np.ndarray]:
    return [_reduce(ctx, np.min, _highest)]


@register_op(Op.REDUCE_SUM, types=FLOATS)
def reduce_sum(ctx: OpContext) -> list[np.ndarray]:
    return [_reduce(ctx, np.sum, lambda _: 0)]


@register_op(Op.REDUCE_PROD, types=FLOATS)
def reduce_prod(ctx: OpContext) -> list[np.ndarray]:
    return [_reduce(ctx, np.prod, lambda _: 1)]


@register_op(Op.REDUCE_ALL, types=(T.TENSOR_BOOL8,))
def reduce_all(ctx: OpContext) -> list[np.ndarray]:
    return [_reduce(ctx, np.logical_and.reduce, lambda _: True)]


@register_op(Op.REDUCE_ANY, types=(T.TENSOR_BOOL8,))
def reduce_any(ctx: OpContext) -> list[np.ndarray]:
    return [_reduce(ctx, np.logical_or.reduce, lambda _: False)]


# --- ARGMAX, ARGMIN, TOPK_V2 --------------------------------------------------------------------


def _arg_extreme(ctx: OpContext, pick: Callable[..., np.ndarray]) -> np.ndarray:
    """Index of the first extreme value along the INT32 axis (input 1); output drops that axis."""
    data = ctx.array(0)
    axis = resolve_axis(ctx, int(ctx.scalar(1)), data.ndim)
    if data.shape[axis] == 0:
        raise op_failure(f"{ctx.name}: cannot reduce an empty axis {axis}")
    return at_least_1d(pick(data, axis=axis).astype(np.int32))


@register_op(Op.ARGMAX, types=GENERIC_TYPES)
def argmax(ctx: OpContext) -> list[np.ndarray]:
    return [_arg_extreme(ctx, np.argmax)]


@register_op(Op.ARGMIN, types=GENERIC_TYPES)
def argmin(ctx: OpContext) -> list[np.ndarray]:
    return [_arg_extreme(ctx, np.argmin)]


@register_op(Op.TOPK_V2, types=GENERIC_TYPES)
def topk_v2(ctx: OpContext) -> list[np.ndarray]:
    """The k largest entries of the last dimension, largest first; ties: larger index first."""
    data = ctx.array(0)
    k = int(ctx.scalar(1))
    if data.ndim == 0 or not 0 < k <= data.shape[-1]:
        raise op_failure(f"{ctx.name}: k = {k} must be in [1, {data.shape[-1] if data.ndim else 0}]")
    # A stable ascending sort keeps equal values in index order; reversing it gives
    # descending (value, index) pairs, i.e. Android's order.
    order = np.argsort(data, axis=-1, kind="stable")[..., ::-1][..., :k]
    values = np.take_along_axis(data, order, axis=-1)
    return [np.ascontiguousarray(values), order.astype(np.int32)]
