"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR.

Inputs: the 4-D image, output width and height as INT32 -- or, since HAL
1.2, as FLOAT32 (FLOAT16 for F16 images) scale factors giving
``floor(in_size * scale)`` -- then the optional BOOL layout (1.2) and the
optional BOOL align_corners and half_pixel_centers (1.3, not both true).

Arithmetic is Android 11's, all in float32:

* BILINEAR runs ``tflite::reference_ops::ResizeBilinear`` for every type:
  source coordinate ``y * scale`` (or ``(y + 0.5) * scale - 0.5`` with half
  pixel centers), corners ``max(floor, 0)`` and ``min(ceil, in - 1)``, the
  four-term weighted sum in float32, and for quantized images the stored
  values are interpolated directly (no requantization: the output reuses
  the input's scale and zero point) and converted back by
  ``static_cast`` after adding 0.5, i.e. ``trunc(v + 0.5)``.
* NEAREST_NEIGHBOR uses Android's own kernel: source index
  ``floor(x * scale)`` (``(x + 0.5) * scale`` with half pixel centers), or
  ``round`` (halves away from zero) with align_corners, clamped to the input.
* ``scale = in / out``, or ``(in - 1) / (out - 1)`` with align_corners and out > 1.
"""

from __future__ import annotations

import math

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.ops.reshape import MOVE_TYPES
from nnvts.drivers.reference.ops.space import from_nhwc, nhwc_input
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

F32 = np.float32


def _output_size(ctx: OpContext, in_h: int, in_w: int) -> tuple[int, int]:
    """Inputs 1 (width) and 2 (height): INT32 sizes or float scales (floor of float32 product)."""
    width, height = ctx.tensor(1), ctx.tensor(2)
    if height.type == T.INT32:
        out_h, out_w = int(height.item()), int(width.item())
    else:
        out_h = math.floor(F32(in_h) * F32(height.item()))
        out_w = math.floor(F32(in_w) * F32(width.item()))
    if out_h <= 0 or out_w <= 0:
        raise op_failure(f"{ctx.name}: output size {out_h}x{out_w} must be positive")
    return out_h, out_w


def _flags(ctx: OpContext) -> tuple[bool, bool]:
    align_corners = bool(ctx.scalar(4, False))
    half_pixel = bool(ctx.scalar(5, False))
    if align_corners and half_pixel:
        raise op_failure(f"{ctx.name}: align_corners and half_pixel_centers cannot both be true")
    return align_corners, half_pixel


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return F32(in_size - 1) / F32(out_size - 1)
    return F32(in_size) / F32(out_size)


def _prepare(ctx: OpContext) -> tuple[np.ndarray, bool, tuple[int, int], bool, bool]:
    data, nchw = nhwc_input(ctx, 3)
    _, in_h, in_w, channels = data.shape
    if in_h <= 0 or in_w <= 0 or channels <= 0:
        raise op_failure(f"{ctx.name}: only the batch dimension may be zero, got {list(data.shape)}")
    return data, nchw, _output_size(ctx, in_h, in_w), *_flags(ctx)


def _bilinear_axis(out_size: int, in_size: int, align_corners: bool,
                   half_pixel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TFLite ``ComputeInterpolationValues`` for every output position: (lower, upper, fraction)."""
    scale = _scale(in_size, out_size, align_corners)
    position = np.arange(out_size, dtype=F32)
    source = (position + F32(0.5)) * scale - F32(0.5) if half_pixel else position * scale
    lower = np.maximum(np.floor(source), F32(0)).astype(np.int64)
    upper = np.minimum(np.ceil(source).astype(np.int64), in_size - 1)
    return lower, upper, (source - lower.astype(F32)).astype(F32)


def _bilinear(data: np.ndarray, out_h: int, out_w: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    y0, y1, dy = _bilinear_axis(out_h, data.shape[1], align_corners, half_pixel)
    x0, x1, dx = _bilinear_axis(out_w, data.shape[2], align_corners, half_pixel)
    dy = dy[None, :, None, None]
    dx = dx[None, None, :, None]
    one = F32(1)
    pixels = data.astype(F32)

    def at(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return pixels[:, rows][:, :, cols]

    # Same operation order as TFLite: ((v * wy) * wx) summed left to right.
    value = at(y0, x0) * (one - dy) * (one - dx)
    value = value + at(y1, x0) * dy * (one - dx)
    value = value + at(y0, x1) * (one - dy) * dx
    value = value + at(y1, x1) * dy * dx
    return value


@register_op(Op.RESIZE_BILINEAR, types=MOVE_TYPES)
def resize_bilinear(ctx: OpContext) -> list[np.ndarray]:
    data, nchw, (out_h, out_w), align_corners, half_pixel = _prepare(ctx)
    value = _bilinear(data, out_h, out_w, align_corners, half_pixel)
    dtype = ctx.output().dtype
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        value = np.clip(np.trunc(value + F32(0.5)), info.min, info.max)
    return [from_nhwc(value.astype(dtype), nchw)]


def _nearest_axis(out_size: int, in_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """Android ``resizeNearestNeighbor``: source index of every output position."""
    scale = _scale(in_size, out_size, align_corners)
    position = np.arange(out_size, dtype=F32)
    source = (position + F32(0.5)) * scale if half_pixel else position * scale
    # roundf rounds halves away from zero; every source coordinate is >= 0 here, and adding
    # the half in float64 keeps it exact.
    index = np.floor(source.astype(np.float64) + 0.5) if align_corners else np.floor(source)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


@register_op(Op.RESIZE_NEAREST_NEIGHBOR, types=MOVE_TYPES)
def resize_nearest_neighbor(ctx: OpContext) -> list[np.ndarray]:
    data, nchw, (out_h, out_w), align_corners, half_pixel = _prepare(ctx)
    rows = _nearest_axis(out_h, data.shape[1], align_corners, half_pixel)
    cols = _nearest_axis(out_w, data.shape[2], align_corners, half_pixel)
    return [from_nhwc(data[:, rows][:, :, cols], nchw)]
