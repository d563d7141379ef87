"""RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT, TILE, FILL, RANK.

Pure data movement: values are copied unchanged (quantized operands keep
their stored integers because the HAL requires the output to reuse the
input's scale and zero point), with one exception -- CONCATENATION of
TENSOR_QUANT8_ASYMM inputs whose quantization differs from the output's
(legal since HAL 1.2), which Android requantizes in float (see
``_requantize_for_concat``).

Shape rules follow Android's ``*Prepare`` functions (``OperationsUtils.cpp``
and the per-operation ``prepare``): invalid runtime values fail the
execution with GENERAL_FAILURE.  Where an operation would produce a rank-0
tensor (SQUEEZE of ``[1, 1, 1]``), Android reports shape ``[1]`` (the
regression tests b/155238914 et al. expect it), so we do too.
"""

from __future__ import annotations

import math

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import round_half_away
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

#: HAL 1.0 data-movement types (F16 from 1.2, QAS8 from 1.3).
MOVE_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
#: The type set of most operations introduced in HAL 1.2 (QAS8 from 1.3).
GENERIC_TYPES = (*MOVE_TYPES, T.TENSOR_INT32)
#: RANK accepts any tensor type (NeuralNetworks.h, API 30).
RANK_TYPES = (
    T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_SYMM,
    T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_SYMM,
    T.TENSOR_QUANT8_ASYMM_SIGNED,
)


# --- helpers shared by the shape-family modules ------------------------------------------------


def resolve_axis(ctx: OpContext, axis: int, rank: int) -> int:
    """A possibly negative axis in ``[-rank, rank)`` as a non-negative index (Android ``handleNegativeAxis``)."""
    if not -rank <= axis < rank:
        raise op_failure(f"{ctx.name}: axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def int_vector(ctx: OpContext, index: int, length: int | None = None) -> list[int]:
    """Input ``index`` as a list of ints; it must be 1-D (and ``length`` long when given)."""
    value = ctx.array(index)
    if value.ndim != 1:
        raise op_failure(f"{ctx.name}: input {index} must be 1-D, got shape {list(value.shape)}")
    if length is not None and value.shape[0] != length:
        raise op_failure(f"{ctx.name}: input {index} must have {length} elements, got {value.shape[0]}")
    return [int(v) for v in value]


def at_least_1d(array: np.ndarray) -> np.ndarray:
    """Android never produces a rank-0 tensor output: a would-be scalar is reported as shape ``[1]``."""
    return array.reshape(1) if array.ndim == 0 else array


# --- RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE ---------------------------------------------------


def _reshape_target(ctx: OpContext, size: int, target: list[int]) -> list[int]:
    """Resolve the one allowed -1 ("stretch") entry; element counts must agree (Android ``reshapePrepare``)."""
    stretch = [i for i, d in enumerate(target) if d == -1]
    if len(stretch) > 1 or any(d < -1 for d in target):
        raise op_failure(f"{ctx.name}: invalid target shape {target}")
    known = math.prod(d for d in target if d != -1)
    shape = list(target)
    if stretch:
        if known == 0:
            raise op_failure(f"{ctx.name}: cannot infer -1 in {target} for {size} elements")
        shape[stretch[0]] = size // known
    if math.prod(shape) != size:
        raise op_failure(f"{ctx.name}: target shape {target} does not hold {size} elements")
    return shape


@register_op(Op.RESHAPE, types=GENERIC_TYPES)  # TENSOR_INT32 since feature level 6
def reshape(ctx: OpContext) -> list[np.ndarray]:
    data = ctx.array(0)
    return [data.reshape(_reshape_target(ctx, data.size, int_vector(ctx, 1)))]


@register_op(Op.SQUEEZE, types=MOVE_TYPES)
def squeeze(ctx: OpContext) -> list[np.ndarray]:
    """Axes omitted or empty: drop every size-1 dimension; listed axes must have size 1."""
    data = ctx.array(0)
    axes = int_vector(ctx, 1) if ctx.has(1) else []
    if not axes:
        drop = {i for i, d in enumerate(data.shape) if d == 1}
    else:
        drop = {resolve_axis(ctx, a, data.ndim) for a in axes}
        if any(data.shape[a] != 1 for a in drop):
            raise op_failure(f"{ctx.name}: cannot squeeze axes {axes} of shape {list(data.shape)}")
    shape = [d for i, d in enumerate(data.shape) if i not in drop]
    return [at_least_1d(data.reshape(shape))]


@register_op(Op.EXPAND_DIMS, types=GENERIC_TYPES)
def expand_dims(ctx: OpContext) -> list[np.ndarray]:
    data = ctx.array(0)
    axis = int(ctx.scalar(1))
    if not -(data.ndim + 1) <= axis <= data.ndim:
        raise op_failure(f"{ctx.name}: axis {axis} out of range for rank {data.ndim}")
    return [np.expand_dims(data, axis % (data.ndim + 1))]


@register_op(Op.TRANSPOSE, types=MOVE_TYPES)
def transpose(ctx: OpContext) -> list[np.ndarray]:
    """Perm omitted (or empty): reverse the dimensions, as NeuralNetworks.h specifies."""
    data = ctx.array(0)
    perm = int_vector(ctx, 1) if ctx.has(1) else []
    if not perm:
        perm = list(reversed(range(data.ndim)))
    if sorted(perm) != list(range(data.ndim)):
        raise op_failure(f"{ctx.name}: {perm} is not a permutation of rank {data.ndim}")
    return [np.ascontiguousarray(np.transpose(data, perm))]


# --- CONCATENATION -----------------------------------------------------------------------------


def _requantize_for_concat(tensor: Tensor, out_scale: float, out_zero_point: int, dtype: np.dtype) -> np.ndarray:
    """TFLite ``ConcatenationWithScaling`` (float path), as Android's CONCATENATION calls it.

    ``q_out = clamp(round(q * s + b) + zp_out)`` with ``s = scale_in * (1 / scale_out)`` and
    ``b = -zp_in * s`` computed in float32.  Signed inputs are shifted into the unsigned domain
    first (+128 on values and zero points), exactly as Android converts QAS8 to QA8 and back.
    """
    shift = 128 if dtype == np.int8 else 0
    values = tensor.value.astype(np.int32) + shift
    in_zp, out_zp = tensor.zero_point + shift, out_zero_point + shift
    if np.float32(tensor.scale) == np.float32(out_scale) and in_zp == out_zp:
        return tensor.value.astype(dtype)
    scale = np.float32(tensor.scale) * (np.float32(1.0) / np.float32(out_scale))
    bias = np.float32(-in_zp) * scale
    real = values.astype(np.float32) * scale + bias
    result = np.clip(round_half_away(real).astype(np.int64) + out_zp, 0, 255)
    return (result - shift).astype(dtype)


@register_op(Op.CONCATENATION, types=MOVE_TYPES)
def concatenation(ctx: OpContext) -> list[np.ndarray]:
    """Axis must be in [0, rank) (Android rejects negative axes); other dimensions must agree."""
    count = ctx.num_inputs - 1
    axis = int(ctx.scalar(count))
    tensors = [ctx.tensor(i) for i in range(count)]
    rank = tensors[0].rank
    if not 0 <= axis < rank:
        raise op_failure(f"{ctx.name}: axis {axis} out of range for rank {rank}")
    others = [tuple(d for i, d in enumerate(t.shape) if i != axis) for t in tensors]
    if any(t.rank != rank or other != others[0] for t, other in zip(tensors, others, strict=True)):
        raise op_failure(f"{ctx.name}: shapes {[list(x.shape) for x in tensors]} cannot be concatenated")
    out = ctx.output()
    if tensors[0].type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        parts = [_requantize_for_concat(t, out.scale, out.zero_point, out.dtype) for t in tensors]
    else:
        parts = [t.value for t in tensors]
    return [np.concatenate(parts, axis=axis).astype(out.dtype)]


# --- SPLIT, TILE --------------------------------------------------------------------------------


@register_op(Op.SPLIT, types=GENERIC_TYPES)
def split(ctx: OpContext) -> list[np.ndarray]:
    """``count`` equal slices along ``axis`` (negative allowed); count must equal the output count."""
    data = ctx.array(0)
    axis = resolve_axis(ctx, int(ctx.scalar(1)), data.ndim)
    count = int(ctx.scalar(2))
    if count != len(ctx.outputs) or count <= 0 or data.shape[axis] % count:
        raise op_failure(f"{ctx.name}: cannot split dimension {data.shape[axis]} into {count} "
                         f"(model has {len(ctx.outputs)} outputs)")
    return [np.ascontiguousarray(part) for part in np.split(data, count, axis=axis)]


@register_op(Op.TILE, types=GENERIC_TYPES)
def tile(ctx: OpContext) -> list[np.ndarray]:
    data = ctx.array(0)
    multiples = int_vector(ctx, 1, data.ndim)
    if any(m < 0 for m in multiples):
        raise op_failure(f"{ctx.name}: negative multiples {multiples}")
    return [np.tile(data, multiples)]


# --- FILL, RANK (HAL 1.3) ----------------------------------------------------------------------


@register_op(Op.FILL, types=(T.TENSOR_INT32,))
def fill(ctx: OpContext) -> list[np.ndarray]:
    """A tensor of the given 1-D shape filled with the scalar (FLOAT16/FLOAT32/INT32 as the output)."""
    shape = int_vector(ctx, 0)
    if any(d < 0 for d in shape):
        raise op_failure(f"{ctx.name}: negative dimension in shape {shape}")
    return [np.full(shape, ctx.scalar(1), dtype=ctx.output().dtype)]


@register_op(Op.RANK, types=RANK_TYPES)
def rank(ctx: OpContext) -> list[np.ndarray]:
    """The input's rank as an INT32 scalar (the only operation whose output is a scalar operand)."""
    return [np.array(ctx.tensor(0).rank, dtype=np.int32)]
