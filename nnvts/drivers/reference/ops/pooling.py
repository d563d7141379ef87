"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D: windowed reductions over H and W.

Inputs (Android ``pooling::PoolingParam``): input, then either four explicit
paddings (left, right, top, bottom) or an implicit padding scheme, the width
and height strides, the filter width and height, the fused activation and an
optional layout BOOL.  Android rejects a padding that is not smaller than the
filter (so every window holds at least one real element), and the window
clipped to the input is what is reduced: padding never counts, neither in the
maximum nor in the element count of an average.

Numerics (TFLite kernels the NNAPI CPU path calls): floats in float32 (float16
widened), average = sum / count; quantized average = integer sum divided by
the count rounding half away from zero (``(sum + count/2) / count`` for
non-negative sums, as TFLite's uint8 kernel and its int8 reference do);
quantized max is exact; both clamp to the activation's quantized range.
L2_POOL_2D is float only: sqrt(sum of squares / count).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnvts.drivers.reference.ops.conv import (
    QUANT8,
    SpatialArgs,
    Window,
    from_nhwc,
    output_hw,
    pad_spatial,
    read_layout,
    read_spatial_args,
    require_rank4,
    resolve_window,
    to_nhwc,
    window_slice,
)
from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import activation_range_float, activation_range_quantized
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

POOL_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
FLOAT_POOL_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
# Above this many window positions, reduce rows then columns instead of one op per window position.
_SLICE_LOOP_LIMIT = 64


class PoolGeometry:
    """The input in NHWC, the filter size, the resolved window and the output size."""

    __slots__ = ("activation", "filter_hw", "nchw", "out_hw", "window", "x")

    def __init__(self, ctx: OpContext) -> None:
        explicit = ctx.num_inputs >= 10
        spatial: SpatialArgs = read_spatial_args(ctx, 1, explicit)
        i = spatial.next_index
        filter_w, filter_h = int(ctx.scalar(i)), int(ctx.scalar(i + 1))
        self.activation = int(ctx.scalar(i + 2))
        self.nchw = read_layout(ctx, i + 3)
        value = ctx.tensor(0).value
        require_rank4(ctx.name, input=value)
        self.x = to_nhwc(value, self.nchw)
        if filter_w < 1 or filter_h < 1:
            raise op_failure(f"{ctx.name}: filter size must be positive, got {filter_w}x{filter_h}")
        in_hw = (self.x.shape[1], self.x.shape[2])
        if min(in_hw) < 1 or self.x.shape[3] < 1:
            raise op_failure(f"{ctx.name}: only the batch dimension may be zero, got {list(self.x.shape)}")
        self.filter_hw = (filter_h, filter_w)
        self.window = resolve_window(ctx.name, spatial, in_hw, self.filter_hw)
        w = self.window
        if max(w.pad_left, w.pad_right) >= filter_w or max(w.pad_top, w.pad_bottom) >= filter_h:
            raise op_failure(f"{ctx.name}: padding must be smaller than the {filter_w}x{filter_h} filter")
        self.out_hw = output_hw(ctx.name, in_hw, self.filter_hw, w)


def window_reduce(xp: np.ndarray, geometry: PoolGeometry,
                  combine: Callable[..., np.ndarray]) -> np.ndarray:
    """Reduce every kh x kw window of the padded NHWC ``xp`` with ``combine`` (``np.add``, ``np.maximum``).

    Small windows take one whole-tensor op per window offset, rows outer and
    columns inner: the order TFLite accumulates a float average in.  Large
    windows (global pools over whole feature maps) reduce each window's rows
    first and then its columns, kh + kw ops instead of kh * kw: a sum in
    another association (within float tolerance; integer sums are exact), a
    maximum unchanged.
    """
    (k_h, k_w), (o_h, o_w), w = geometry.filter_hw, geometry.out_hw, geometry.window
    if k_w == xp.shape[2] and xp.flags.c_contiguous:
        return full_width_reduce(xp, k_h * k_w, w.stride_h, o_h, combine)
    result = None
    if k_h * k_w <= _SLICE_LOOP_LIMIT:
        for i in range(k_h):
            rows = window_slice(i, w.stride_h, o_h)
            for j in range(k_w):
                part = xp[:, rows, window_slice(j, w.stride_w, o_w), :]
                result = part.copy() if result is None else combine(result, part, out=result)
        assert result is not None
        return result
    row_totals = None
    for i in range(k_h):
        part = xp[:, window_slice(i, w.stride_h, o_h)]
        row_totals = part.copy() if row_totals is None else combine(row_totals, part, out=row_totals)
    assert row_totals is not None
    for j in range(k_w):
        part = row_totals[:, :, window_slice(j, w.stride_w, o_w)]
        result = part.copy() if result is None else combine(result, part, out=result)
    assert result is not None
    return result


def full_width_reduce(xp: np.ndarray, taps: int, stride_h: int, o_h: int,
                      combine: Callable[..., np.ndarray]) -> np.ndarray:
    """Windows as wide as the (padded, C-contiguous) input, as global pools have: [N, oh, 1, C].

    Their taps, rows outer and columns inner, are consecutive pixels, so one
    strided axis enumerates them, and ``combine.reduce`` over that outer axis
    accumulates them one after another: TFLite's order, in one call instead
    of one per tap.
    """
    n, _, _, channels = xp.shape
    pixel, row = xp.strides[2], xp.strides[1]
    view = np.lib.stride_tricks.as_strided(xp, shape=(taps, n, o_h, 1, channels),
                                           strides=(pixel, xp.strides[0], stride_h * row, pixel, xp.strides[3]),
                                           writeable=False)
    return combine.reduce(view, axis=0, dtype=xp.dtype)


def window_counts(in_hw: tuple[int, int], geometry: PoolGeometry) -> np.ndarray:
    """How many real (unpadded) input elements each output window covers: shape [oh, ow, 1]."""
    w: Window = geometry.window

    def axis_counts(size: int, kernel: int, stride: int, pad: int, count: int) -> np.ndarray:
        start = np.arange(count) * stride - pad
        return np.minimum(start + kernel, size) - np.maximum(start, 0)

    rows = axis_counts(in_hw[0], geometry.filter_hw[0], w.stride_h, w.pad_top, geometry.out_hw[0])
    cols = axis_counts(in_hw[1], geometry.filter_hw[1], w.stride_w, w.pad_left, geometry.out_hw[1])
    return (rows[:, None] * cols[None, :])[:, :, None]


def _float_finish(ctx: OpContext, result: np.ndarray, geometry: PoolGeometry) -> np.ndarray:
    low, high = activation_range_float(geometry.activation)
    if geometry.activation:
        result = np.clip(result, low, high)
    return from_nhwc(result.astype(ctx.output().dtype, copy=False), geometry.nchw)


def _quant_finish(ctx: OpContext, result: np.ndarray, geometry: PoolGeometry) -> np.ndarray:
    out = ctx.output()
    low, high = activation_range_quantized(geometry.activation, out.scale, out.zero_point, out.dtype)
    return from_nhwc(np.clip(result, low, high).astype(out.dtype), geometry.nchw)


def rounded_average(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Integer sum / count rounding half away from zero with C truncating division (TFLite)."""
    half = counts // 2
    magnitude = (np.abs(total) + half) // counts
    return np.where(total < 0, -magnitude, magnitude)


@register_op(Op.AVERAGE_POOL_2D, types=POOL_TYPES)
def average_pool_2d(ctx: OpContext) -> list[np.ndarray]:
    geometry = PoolGeometry(ctx)
    in_hw = (geometry.x.shape[1], geometry.x.shape[2])
    counts = window_counts(in_hw, geometry)
    if ctx.tensor(0).type in QUANT8:
        x = geometry.x.astype(np.int32)
        total = window_reduce(pad_spatial(x, geometry.window), geometry, np.add)
        return [_quant_finish(ctx, rounded_average(total.astype(np.int64), counts), geometry)]
    x = geometry.x.astype(np.float32)
    total = window_reduce(pad_spatial(x, geometry.window), geometry, np.add)
    return [_float_finish(ctx, total / counts.astype(np.float32), geometry)]


@register_op(Op.MAX_POOL_2D, types=POOL_TYPES)
def max_pool_2d(ctx: OpContext) -> list[np.ndarray]:
    geometry = PoolGeometry(ctx)
    if ctx.tensor(0).type in QUANT8:
        lowest = np.iinfo(geometry.x.dtype).min
        result = window_reduce(pad_spatial(geometry.x, geometry.window, lowest), geometry, np.maximum)
        return [_quant_finish(ctx, result.astype(np.int32), geometry)]
    x = geometry.x.astype(np.float32)
    result = window_reduce(pad_spatial(x, geometry.window, -np.inf), geometry, np.maximum)
    return [_float_finish(ctx, result, geometry)]


@register_op(Op.L2_POOL_2D, types=FLOAT_POOL_TYPES)
def l2_pool_2d(ctx: OpContext) -> list[np.ndarray]:
    geometry = PoolGeometry(ctx)
    in_hw = (geometry.x.shape[1], geometry.x.shape[2])
    x = geometry.x.astype(np.float32)
    total = window_reduce(pad_spatial(x * x, geometry.window), geometry, np.add)
    return [_float_finish(ctx, np.sqrt(total / window_counts(in_hw, geometry).astype(np.float32)), geometry)]
