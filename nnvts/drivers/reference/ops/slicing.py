"""PAD, PAD_V2, SLICE, STRIDED_SLICE, GATHER, CHANNEL_SHUFFLE.

Values are only moved, never rescaled: the HAL requires quantized outputs to
reuse the input's scale and zero point.  Padding a quantized tensor writes
the zero point (the stored value of real 0.0, Android's ``outShape.offset``)
for PAD, and PAD_V2's INT32 pad value taken as a stored value.

Index rules are Android's (``padPrepare``, ``stridedSlicePrepare``, the
``Slice``, ``Gather`` and ``ChannelShuffle`` validators): values out of range
fail the execution with GENERAL_FAILURE.  That is also how the V1_2
``strided_slice_invalid`` models, which shrink an axis whose slice is not
one element long or walked with a negative stride, fail at execution as VTS
expects.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.ops.reshape import GENERIC_TYPES, MOVE_TYPES, at_least_1d, int_vector, resolve_axis
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


# --- PAD, PAD_V2 --------------------------------------------------------------------------------


def _paddings(ctx: OpContext, rank: int) -> list[tuple[int, int]]:
    """Input 1: a [rank, 2] tensor of non-negative (before, after) counts."""
    pads = ctx.array(1)
    if pads.shape != (rank, 2):
        raise op_failure(f"{ctx.name}: paddings shape {list(pads.shape)} must be [{rank}, 2]")
    if (pads < 0).any():
        raise op_failure(f"{ctx.name}: negative paddings {pads.tolist()}")
    return [(int(a), int(b)) for a, b in pads]


def _pad(ctx: OpContext, value: int | float) -> list[np.ndarray]:
    data = ctx.array(0)
    pads = _paddings(ctx, data.ndim)
    fill = np.array(value).astype(data.dtype)  # INT32 pad values keep their low byte, as Android reads them
    return [np.pad(data, pads, mode="constant", constant_values=fill)]


@register_op(Op.PAD, types=MOVE_TYPES)
def pad(ctx: OpContext) -> list[np.ndarray]:
    """Pads with real 0.0: 0 for floats, the zero point for quantized tensors."""
    tensor = ctx.tensor(0)
    return _pad(ctx, ctx.output().zero_point if tensor.type in QUANT8 else 0)


@register_op(Op.PAD_V2, types=MOVE_TYPES)
def pad_v2(ctx: OpContext) -> list[np.ndarray]:
    """Pads with input 2: FLOAT32/FLOAT16 real value, or INT32 stored value for quantized tensors."""
    return _pad(ctx, ctx.scalar(2))


# --- SLICE, STRIDED_SLICE -----------------------------------------------------------------------


@register_op(Op.SLICE, types=GENERIC_TYPES)
def slice_(ctx: OpContext) -> list[np.ndarray]:
    """``size[i] == -1`` means "to the end"; begin/size must stay inside the input (Android ``Slice``)."""
    data = ctx.array(0)
    if data.ndim == 0:
        raise op_failure(f"{ctx.name}: input must have rank >= 1")
    begin = int_vector(ctx, 1, data.ndim)
    size = int_vector(ctx, 2, data.ndim)
    index = []
    for dim, start, count in zip(data.shape, begin, size, strict=True):
        count = dim - start if count == -1 else count
        if start < 0 or count < 0 or start + count > dim:
            raise op_failure(f"{ctx.name}: slice begin {begin} size {size} outside shape {list(data.shape)}")
        index.append(slice(start, start + count))
    return [np.ascontiguousarray(data[tuple(index)])]


def _clamped_index(index: int, dim: int, positive_stride: bool) -> int:
    """TFLite ``ClampedIndex``: Python-style negative indices, clamped to the walkable range."""
    if dim == 0:
        return 0 if positive_stride else -1
    if positive_stride:
        return dim if index >= dim else max(index, -dim) % dim
    return -1 if index < -dim else min(index, dim - 1) % dim


def _strided_axis(ctx: OpContext, axis: int, dim: int, begin: int, end: int, stride: int,
                  masks: tuple[int, int, int]) -> np.ndarray:
    """The input indices one axis walks (Android ``stridedSlicePrepare``); shrunk axes must yield one."""
    begin_mask, end_mask, shrink_mask = masks
    if stride == 0:
        raise op_failure(f"{ctx.name}: stride of axis {axis} is 0")
    positive = stride > 0
    start = (0 if positive else dim - 1) if begin_mask & (1 << axis) else _clamped_index(begin, dim, positive)
    stop = (dim if positive else -1) if end_mask & (1 << axis) else _clamped_index(end, dim, positive)
    indices = np.arange(start, stop, stride)
    # Android: a shrunk axis is an index, not a range -- positive stride and exactly one element.
    if shrink_mask & (1 << axis) and (stride < 0 or len(indices) != 1):
        raise op_failure(f"{ctx.name}: shrunk axis {axis} must select one element with a positive stride")
    return indices


@register_op(Op.STRIDED_SLICE, types=MOVE_TYPES)
def strided_slice(ctx: OpContext) -> list[np.ndarray]:
    data = ctx.array(0)
    rank = data.ndim
    begin, end, strides = (int_vector(ctx, i, rank) for i in (1, 2, 3))
    masks = (int(ctx.scalar(4)), int(ctx.scalar(5)), int(ctx.scalar(6)))
    axes = [_strided_axis(ctx, i, data.shape[i], begin[i], end[i], strides[i], masks) for i in range(rank)]
    result = data[np.ix_(*axes)] if rank else data
    kept = [d for i, d in enumerate(result.shape) if not masks[2] & (1 << i)]
    return [at_least_1d(result.reshape(kept))]


# --- GATHER, CHANNEL_SHUFFLE --------------------------------------------------------------------


@register_op(Op.GATHER, types=GENERIC_TYPES)
def gather(ctx: OpContext) -> list[np.ndarray]:
    """``out = take(input, indices, axis)``: rank n + k - 1; every index must be in [0, dim)."""
    data = ctx.array(0)
    axis = resolve_axis(ctx, int(ctx.scalar(1)), data.ndim)
    indices = ctx.array(2).astype(np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= data.shape[axis]):
        raise op_failure(f"{ctx.name}: indices {indices.tolist()} out of range [0, {data.shape[axis]})")
    return [np.take(data, indices, axis=axis)]


@register_op(Op.CHANNEL_SHUFFLE, types=MOVE_TYPES)
def channel_shuffle(ctx: OpContext) -> list[np.ndarray]:
    """Channels [groups, per_group] are transposed to [per_group, groups] along ``axis``."""
    data = ctx.array(0)
    groups = int(ctx.scalar(1))
    axis = resolve_axis(ctx, int(ctx.scalar(2)), data.ndim)
    channels = data.shape[axis]
    if groups <= 0 or channels % groups:
        raise op_failure(f"{ctx.name}: {channels} channels cannot form {groups} groups")
    split = (*data.shape[:axis], groups, channels // groups, *data.shape[axis + 1:])
    shuffled = np.swapaxes(data.reshape(split), axis, axis + 1)
    return [np.ascontiguousarray(shuffled).reshape(data.shape)]
