"""PACK (feature level 6), MIRROR_PAD and REVERSE (feature level 7): data movement the AIDL interface added.

Stored values are copied unchanged (quantized outputs share the input's
scale and zero point: the HAL requires it).  What needs the values is
checked as Android's ``prepare`` does and fails the execution
(GENERAL_FAILURE): PACK's axis in ``[0, R]`` and inputs of one shape;
MIRROR_PAD's mode (0 REFLECT, 1 SYMMETRIC), paddings ``[rank, 2]``, each at
least 0 and at most the dimension (less one for REFLECT, which leaves the
border element out); REVERSE's axis, one element in ``[0, rank)``, rank 1 to 8.

MIRROR_PAD is written as an index map per dimension, straight from
OperationType.aidl's definition, so REFLECT of ``[1, 2, 3]`` padded
``[0, 2]`` is ``[1, 2, 3, 2, 1]`` and SYMMETRIC ``[1, 2, 3, 3, 2]``.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import MirrorPadMode
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

MOVE_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
              T.TENSOR_INT32)


@register_op(Op.PACK, types=MOVE_TYPES, key_input=1)
def pack(ctx: OpContext) -> list[np.ndarray]:
    axis = int(ctx.scalar(0))
    parts = [ctx.array(i) for i in range(1, ctx.num_inputs)]
    rank = parts[0].ndim
    if rank < 1:
        raise op_failure(f"{ctx.name}: input tensors must have rank 1 or more")
    if any(p.shape != parts[0].shape for p in parts):
        raise op_failure(f"{ctx.name}: input tensors of different shapes {[list(p.shape) for p in parts]}")
    if not 0 <= axis <= rank:
        raise op_failure(f"{ctx.name}: axis {axis} outside [0, {rank}]")
    return [np.stack(parts, axis=axis)]


def mirror_indexes(size: int, before: int, after: int, mode: MirrorPadMode) -> np.ndarray:
    """For each output position along one dimension, the input position it copies."""
    position = np.arange(-before, size + after)
    reflect = 1 if mode is MirrorPadMode.REFLECT else 0
    # Before the start: REFLECT mirrors about element 0, SYMMETRIC about the border between -1 and 0.
    position = np.where(position < 0, -position - (1 - reflect), position)
    # After the end: REFLECT mirrors about element size - 1, SYMMETRIC about the border after it.
    return np.where(position >= size, 2 * size - 1 - reflect - position, position)


@register_op(Op.MIRROR_PAD, types=MOVE_TYPES)
def mirror_pad(ctx: OpContext) -> list[np.ndarray]:
    data, paddings, mode_value = ctx.array(0), ctx.array(1), int(ctx.scalar(2))
    if mode_value not in (MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC):
        raise op_failure(f"{ctx.name}: mode {mode_value} is neither REFLECT (0) nor SYMMETRIC (1)")
    mode = MirrorPadMode(mode_value)
    if data.ndim < 1:
        raise op_failure(f"{ctx.name}: the input must have rank 1 or more")
    if paddings.shape != (data.ndim, 2):
        raise op_failure(f"{ctx.name}: paddings of shape {list(paddings.shape)}, expected [{data.ndim}, 2]")
    most = [size - (1 if mode is MirrorPadMode.REFLECT else 0) for size in data.shape]
    for dim, (before, after) in enumerate(paddings.tolist()):
        if not (0 <= before <= most[dim] and 0 <= after <= most[dim]):
            raise op_failure(f"{ctx.name}: paddings {[before, after]} of dimension {dim} (size "
                             f"{data.shape[dim]}) outside [0, {most[dim]}] for {mode.name}")
    result = data
    for dim, (before, after) in enumerate(paddings.tolist()):
        result = np.take(result, mirror_indexes(data.shape[dim], before, after, mode), axis=dim)
    return [np.ascontiguousarray(result)]


@register_op(Op.REVERSE, types=MOVE_TYPES)
def reverse(ctx: OpContext) -> list[np.ndarray]:
    data, axis = ctx.array(0), ctx.array(1)
    if not 1 <= data.ndim <= 8:
        raise op_failure(f"{ctx.name}: input rank must be 1 to 8, got {data.ndim}")
    if axis.shape != (1,):
        raise op_failure(f"{ctx.name}: the axis must be a [1] tensor, got shape {list(axis.shape)}")
    dim = int(axis[0])
    if not 0 <= dim < data.ndim:
        raise op_failure(f"{ctx.name}: axis {dim} outside [0, {data.ndim})")
    return [np.ascontiguousarray(np.flip(data, axis=dim))]
