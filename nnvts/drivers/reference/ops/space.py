"""BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, DEPTH_TO_SPACE, SPACE_TO_DEPTH.

4-D rearrangements with TensorFlow's element orders, computed in NHWC; the
optional trailing BOOL layout input (HAL 1.2) selects NCHW, handled by
transposing in and out as Android's ``InputWithLayout`` does.  Values are
moved, not rescaled (the output reuses the input's quantization);
SPACE_TO_BATCH_ND pads quantized tensors with the zero point (real 0.0),
which is what the ``space_to_batch_quant8_nonzero`` tests exercise.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.ops.reshape import MOVE_TYPES, int_vector
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op


def nhwc_input(ctx: OpContext, layout_index: int) -> tuple[np.ndarray, bool]:
    """Input 0 in NHWC and whether the operation runs in NCHW (BOOL at ``layout_index``, default false)."""
    data = ctx.array(0)
    if data.ndim != 4:
        raise op_failure(f"{ctx.name}: input must be 4-D, got shape {list(data.shape)}")
    nchw = bool(ctx.scalar(layout_index, False))
    return (np.transpose(data, (0, 2, 3, 1)) if nchw else data), nchw


def from_nhwc(result: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(result, (0, 3, 1, 2)) if nchw else result)


def _block_size(ctx: OpContext) -> int:
    block = int(ctx.scalar(1))
    if block < 1:
        raise op_failure(f"{ctx.name}: block size {block} must be >= 1")
    return block


@register_op(Op.DEPTH_TO_SPACE, types=MOVE_TYPES)
def depth_to_space(ctx: OpContext) -> list[np.ndarray]:
    """[b, h, w, bs*bs*c] -> [b, h*bs, w*bs, c]; channel index = (dy*bs + dx)*c + k."""
    data, nchw = nhwc_input(ctx, 2)
    bs = _block_size(ctx)
    b, h, w, depth = data.shape
    if depth % (bs * bs):
        raise op_failure(f"{ctx.name}: depth {depth} not divisible by block size {bs} squared")
    c = depth // (bs * bs)
    result = data.reshape(b, h, w, bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(b, h * bs, w * bs, c)
    return [from_nhwc(result, nchw)]


@register_op(Op.SPACE_TO_DEPTH, types=MOVE_TYPES)
def space_to_depth(ctx: OpContext) -> list[np.ndarray]:
    """The inverse of DEPTH_TO_SPACE: height and width must be multiples of the block size."""
    data, nchw = nhwc_input(ctx, 2)
    bs = _block_size(ctx)
    b, h, w, c = data.shape
    if h % bs or w % bs:
        raise op_failure(f"{ctx.name}: spatial size {h}x{w} not divisible by block size {bs}")
    result = data.reshape(b, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return [from_nhwc(result.reshape(b, h // bs, w // bs, bs * bs * c), nchw)]


def _block_shape(ctx: OpContext) -> tuple[int, int]:
    block_h, block_w = int_vector(ctx, 1, 2)
    if block_h < 1 or block_w < 1:
        raise op_failure(f"{ctx.name}: block shape {[block_h, block_w]} must be >= 1")
    return block_h, block_w


@register_op(Op.BATCH_TO_SPACE_ND, types=MOVE_TYPES)
def batch_to_space_nd(ctx: OpContext) -> list[np.ndarray]:
    """[bh*bw*n, h, w, c] -> [n, h*bh, w*bw, c]; batch index = (dy*bw + dx)*n + i (no crops in NNAPI)."""
    data, nchw = nhwc_input(ctx, 2)
    bh, bw = _block_shape(ctx)
    batch, h, w, c = data.shape
    if batch % (bh * bw):
        raise op_failure(f"{ctx.name}: batch {batch} not divisible by block {bh}x{bw}")
    n = batch // (bh * bw)
    result = data.reshape(bh, bw, n, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(n, h * bh, w * bw, c)
    return [from_nhwc(result, nchw)]


@register_op(Op.SPACE_TO_BATCH_ND, types=MOVE_TYPES)
def space_to_batch_nd(ctx: OpContext) -> list[np.ndarray]:
    """Pad H and W (input 2, [2, 2]), then move block offsets into the batch (inverse order of above)."""
    data, nchw = nhwc_input(ctx, 3)
    bh, bw = _block_shape(ctx)
    pads = ctx.array(2)
    if pads.shape != (2, 2) or (pads < 0).any():
        raise op_failure(f"{ctx.name}: paddings {pads.tolist()} must be a non-negative [2, 2] tensor")
    quantized = ctx.tensor(0).type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
    fill = np.array(ctx.output().zero_point if quantized else 0).astype(data.dtype)
    padded = np.pad(data, ((0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)), constant_values=fill)
    batch, h, w, c = padded.shape
    if h % bh or w % bw:
        raise op_failure(f"{ctx.name}: padded size {h}x{w} not divisible by block {bh}x{bw}")
    result = padded.reshape(batch, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return [from_nhwc(result.reshape(bh * bw * batch, h // bh, w // bw, c), nchw)]
