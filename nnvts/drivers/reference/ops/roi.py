"""ROI_ALIGN, ROI_POOLING, HEATMAP_MAX_KEYPOINT: per-region feature extraction.

Regions are (x1, y1, x2, y2) in image coordinates; the height/width ratio
inputs map them onto the feature map.  Sample coordinates and bin edges are
computed in float32 as Android does, so a floor/ceil on a bin boundary lands
on the same pixel.  Quantized ROI_ALIGN follows Android's integer kernel:
bilinear weights quantized to 1/255 steps, integer accumulation of
``weight * (q - zero_point)`` and one fixed-point requantization that also
divides by the number of sampling points.  ROI_POOLING takes maxima of the
stored values; HEATMAP_MAX_KEYPOINT dequantizes to float32 and requantizes.
Layout: a true layout input means NCHW (transposed to NHWC and back).
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.bbox import F32, check_box_quantization, from_float32, to_float32
from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantized_range,
    round_half_away,
)
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

ROI_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
#: Quantized ROI_ALIGN expresses bilinear weights in steps of 1/255.
WEIGHT_SCALE = F32(1) / F32(255)


def _to_nhwc(array: np.ndarray, nchw: bool) -> np.ndarray:
    return array.transpose(0, 2, 3, 1) if nchw else array


def _from_nhwc(array: np.ndarray, nchw: bool) -> np.ndarray:
    return array.transpose(0, 3, 1, 2) if nchw else array


def _roi_inputs(ctx: OpContext, layout_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, bool]:
    """Feature map (NHWC, stored values), rois as float32, batch indexes, output height/width, layout."""
    nchw = bool(ctx.scalar(layout_index))
    feature, rois_t, batch_t = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    if feature.rank != 4 or rois_t.rank != 2:
        raise op_failure(f"{ctx.name}: input rank {feature.rank} and rois rank {rois_t.rank}, expected 4 and 2")
    fmap = _to_nhwc(feature.value, nchw)
    n = rois_t.shape[0]
    if rois_t.shape[1] != 4 or batch_t.shape != (n,):
        raise op_failure(f"{ctx.name}: rois {list(rois_t.shape)} / batch indexes {list(batch_t.shape)}")
    out_h, out_w = int(ctx.scalar(3)), int(ctx.scalar(4))
    if out_h <= 0 or out_w <= 0:
        raise op_failure(f"{ctx.name}: output size {out_h}x{out_w} must be positive")
    if rois_t.type == T.TENSOR_QUANT16_ASYMM:
        check_box_quantization(ctx, 1, "rois")
    batches = batch_t.value.astype(np.int64)
    if np.any(batches < 0) or np.any(batches >= fmap.shape[0]):
        raise op_failure(f"{ctx.name}: batch index out of range {batches.tolist()}")
    return fmap, to_float32(rois_t), batches, out_h, out_w, nchw


def _ratios(ctx: OpContext) -> tuple[np.float32, np.float32]:
    """(height scale, width scale) = 1 / ratio inputs, in float32; ratios must be positive."""
    h_ratio, w_ratio = float(ctx.scalar(5)), float(ctx.scalar(6))
    if h_ratio <= 0 or w_ratio <= 0:
        raise op_failure(f"{ctx.name}: height/width ratios must be positive, got {h_ratio}, {w_ratio}")
    return F32(1) / F32(h_ratio), F32(1) / F32(w_ratio)


def _check_region(ctx: OpContext, region: np.ndarray, height: int, width: int) -> None:
    """NNAPI: a scaled region must lie inside the feature map and have x1 <= x2, y1 <= y2."""
    x1, y1, x2, y2 = region
    if min(x1, y1, x2, y2) < 0 or max(x1, x2) > width or max(y1, y2) > height or x1 > x2 or y1 > y2:
        raise op_failure(f"{ctx.name}: region {region.tolist()} outside a {height}x{width} feature map")


# -- ROI_ALIGN ----------------------------------------------------------------------------------


def _samples(start: np.float32, extent: np.float32, bins: int, ratio: int, size: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sample positions along one axis: low/high pixel and their weights, each [bins, ratio].

    Position = bin start + (k + 0.5) * sub-bin size, computed in float32 in
    Android's operation order; samples at or past the last pixel clamp to it.
    """
    step = extent / F32(bins)
    sub = step / F32(ratio)
    bin_start = step * np.arange(bins, dtype=F32) + start
    pos = bin_start[:, None] + sub / F32(2) + sub * np.arange(ratio, dtype=F32)[None, :]
    low = np.floor(pos).astype(np.int64)
    frac = (pos - low.astype(F32)).astype(F32)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    frac = np.where(edge, F32(0), frac).astype(F32)
    return low, high, (F32(1) - frac).astype(F32), frac


def _sampling_ratio(requested: int, step: np.float32) -> int:
    """0 means adaptive: ceil(bin size) samples per bin."""
    return requested if requested > 0 else int(np.ceil(step))


def _corner_weight(y_weight: np.ndarray, x_weight: np.ndarray, quantized: bool) -> np.ndarray:
    """Bilinear weight of one corner for every (bin row, sample, bin column, sample): a float32 product.

    Quantized ROI_ALIGN rounds it to a multiple of 1/255 (an integer 0..255).
    """
    weight = y_weight[:, :, None, None] * x_weight[None, None, :, :]
    if quantized:
        return round_half_away(weight / WEIGHT_SCALE).astype(np.int64)
    return weight.astype(np.float64)


def _align_region(fmap: np.ndarray, region: np.ndarray, out_h: int, out_w: int, ratio_h: int, ratio_w: int,
                  quantized: bool) -> tuple[np.ndarray, int]:
    """Sum over sampling points of the bilinear samples of one region: [out_h, out_w, depth], and the count.

    Quantized: integer sum of round(weight * 255) * (q - zero_point) (zero point
    subtracted by the caller); float: float64 sum of float32-weighted samples.
    """
    x1, y1, x2, y2 = region
    height, width = fmap.shape[0], fmap.shape[1]
    roi_w = max(F32(x2 - x1), F32(1))
    roi_h = max(F32(y2 - y1), F32(1))
    ratio_w = _sampling_ratio(ratio_w, roi_w / F32(out_w))
    ratio_h = _sampling_ratio(ratio_h, roi_h / F32(out_h))
    y_low, y_high, y_wlow, y_whigh = _samples(y1, roi_h, out_h, ratio_h, height)
    x_low, x_high, x_wlow, x_whigh = _samples(x1, roi_w, out_w, ratio_w, width)
    total = None
    for y_idx, y_weight in ((y_low, y_wlow), (y_high, y_whigh)):
        for x_idx, x_weight in ((x_low, x_wlow), (x_high, x_whigh)):
            weight = _corner_weight(y_weight, x_weight, quantized)
            values = fmap[y_idx[:, :, None, None], x_idx[None, None, :, :]]  # [oh, rh, ow, rw, depth]
            term = np.einsum("abcd,abcde->ace", weight, values)
            total = term if total is None else total + term
    return total, ratio_h * ratio_w


def _roi_align_quant(ctx: OpContext, fmap: np.ndarray, regions: np.ndarray, out_h: int, out_w: int,
                     ratios: tuple[int, int]) -> np.ndarray:
    feature, out = ctx.tensor(0), ctx.output(0)
    centered = fmap.astype(np.int64) - feature.zero_point
    low, high = quantized_range(out.dtype)
    result = np.zeros((len(regions), out_h, out_w, fmap.shape[3]), dtype=out.dtype)
    for r, (region, batch) in enumerate(regions):
        total, points = _align_region(centered[batch], region, out_h, out_w, *ratios, quantized=True)
        real = F32(F32(F32(feature.scale) * WEIGHT_SCALE) / F32(out.scale)) / F32(points)
        if not 0.0 <= float(real) < 1.0:
            raise op_failure(f"{ctx.name}: requantization multiplier {float(real)} not in [0, 1)")
        multiplier, shift = quantize_multiplier(float(real))
        raw = multiply_by_quantized_multiplier(total, multiplier, shift) + out.zero_point
        result[r] = np.clip(raw, low, high)
    return result


@register_op(Op.ROI_ALIGN, types=ROI_TYPES)
def roi_align(ctx: OpContext) -> list[np.ndarray]:
    """input, rois [n, 4], I32 batch indexes [n], out height, out width, height ratio, width ratio,
    height sampling ratio, width sampling ratio, layout -> [n, out_h, out_w, depth] (NHWC).

    Quantized: rois QUANT16_ASYMM (scale 0.125); each output averages the
    bilinear samples of its bin.
    """
    fmap, rois, batches, out_h, out_w, nchw = _roi_inputs(ctx, 9)
    h_scale, w_scale = _ratios(ctx)
    ratios = (int(ctx.scalar(7)), int(ctx.scalar(8)))
    if min(ratios) < 0:
        raise op_failure(f"{ctx.name}: sampling ratios must be >= 0, got {ratios}")
    if min(fmap.shape) == 0:
        raise op_failure(f"{ctx.name}: every feature map dimension must be positive, got {list(fmap.shape)}")
    _, height, width, depth = fmap.shape
    regions = []
    for roi, batch in zip(rois, batches.tolist(), strict=True):
        region = roi * np.array([w_scale, h_scale, w_scale, h_scale], dtype=F32)
        if ctx.tensor(0).type not in QUANT8 and np.any(roi < 0):
            raise op_failure(f"{ctx.name}: negative region {roi.tolist()}")
        _check_region(ctx, region, height, width)
        regions.append((region, batch))
    out = ctx.output(0)
    if ctx.tensor(0).type in QUANT8:
        result = _roi_align_quant(ctx, fmap, regions, out_h, out_w, ratios)
    else:
        values = fmap.astype(F32)
        result = np.zeros((len(regions), out_h, out_w, depth), dtype=np.float64)
        for r, (region, batch) in enumerate(regions):
            total, points = _align_region(values[batch], region, out_h, out_w, *ratios, quantized=False)
            result[r] = total / points
        result = result.astype(out.dtype)
    return [_from_nhwc(result, nchw)]


# -- ROI_POOLING --------------------------------------------------------------------------------


def _pool_edges(start: int, extent: int, bins: int, size: int) -> tuple[list[int], list[int]]:
    """Bin b covers [floor(step * b + start), ceil(step * (b + 1) + start)), clamped to the map."""
    step = F32(extent) / F32(bins)
    index = np.arange(bins, dtype=F32)
    lo = np.floor(step * index + F32(start)).astype(np.int64)
    hi = np.ceil(step * (index + F32(1)) + F32(start)).astype(np.int64)
    return np.minimum(lo, size).tolist(), np.minimum(hi, size).tolist()


def _pool_region(fmap: np.ndarray, region: np.ndarray, out_h: int, out_w: int, empty: int | float) -> np.ndarray:
    """Max over each bin of one region: rows first, then columns; empty bins give ``empty``."""
    x1, y1, x2, y2 = (int(v) for v in round_half_away(region))
    height, width, depth = fmap.shape
    h_lo, h_hi = _pool_edges(y1, max(y2 - y1 + 1, 1), out_h, height)
    w_lo, w_hi = _pool_edges(x1, max(x2 - x1 + 1, 1), out_w, width)
    result = np.full((out_h, out_w, depth), empty, dtype=fmap.dtype)
    for i in range(out_h):
        if h_lo[i] >= h_hi[i]:
            continue
        rows = fmap[h_lo[i]:h_hi[i]].max(axis=0)  # [width, depth]
        for j in range(out_w):
            if w_lo[j] < w_hi[j]:
                result[i, j] = rows[w_lo[j]:w_hi[j]].max(axis=0)
    return result


@register_op(Op.ROI_POOLING, types=ROI_TYPES)
def roi_pooling(ctx: OpContext) -> list[np.ndarray]:
    """input, rois [n, 4], I32 batch indexes [n], out height, out width, height ratio, width ratio,
    layout -> [n, out_h, out_w, depth] (NHWC): the maximum of each bin.

    Region corners are rounded to whole pixels and a region is at least one
    pixel wide; quantized outputs are the stored input maxima.
    """
    fmap, rois, batches, out_h, out_w, nchw = _roi_inputs(ctx, 7)
    h_scale, w_scale = _ratios(ctx)
    _, height, width, depth = fmap.shape
    feature = ctx.tensor(0)
    empty = feature.zero_point if feature.type in QUANT8 else 0
    result = np.zeros((len(rois), out_h, out_w, depth), dtype=fmap.dtype)
    for r, (roi, batch) in enumerate(zip(rois, batches.tolist(), strict=True)):
        if np.any(roi < 0):
            raise op_failure(f"{ctx.name}: negative region {roi.tolist()}")
        region = roi * np.array([w_scale, h_scale, w_scale, h_scale], dtype=F32)
        _check_region(ctx, region, height, width)
        result[r] = _pool_region(fmap[batch], region, out_h, out_w, empty)
    return [_from_nhwc(result, nchw).astype(ctx.output(0).dtype)]


# -- HEATMAP_MAX_KEYPOINT -----------------------------------------------------------------------


def _local_grids(heatmaps: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """3x3 neighbourhoods around each maximum, mirrored at the border: [boxes, keypoints, 3, 3]."""
    size = heatmaps.shape[1]
    offsets = np.arange(-1, 2)

    def mirror(index: np.ndarray) -> np.ndarray:
        return np.where(index < 0, 1, np.where(index >= size, size - 2, index))

    h = mirror(rows[..., None] + offsets)  # [boxes, keypoints, 3]
    w = mirror(cols[..., None] + offsets)
    boxes = np.arange(heatmaps.shape[0])[:, None, None, None]
    keypoints = np.arange(heatmaps.shape[3])[None, :, None, None]
    return heatmaps[boxes, h[..., :, None], w[..., None, :], keypoints]


def _refine(grid: np.ndarray, max_score: np.ndarray, atol: float, rtol: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Second-order Taylor fit around the maximum (float32): offsets (dx, dy) and the refined score.

    Android skips the refinement where the Hessian is nearly singular
    (|det| < atol + rtol * a00 * a11) and clips offsets to 1.5 pixels.
    """
    g = grid.astype(F32)
    two, four = F32(2), F32(4)
    b0 = -(g[..., 1, 2] - g[..., 1, 0]) / two
    b1 = -(g[..., 2, 1] - g[..., 0, 1]) / two
    a00 = g[..., 1, 0] - two * g[..., 1, 1] + g[..., 1, 2]
    a01 = (g[..., 2, 2] - g[..., 2, 0] - g[..., 0, 2] + g[..., 0, 0]) / four
    a11 = g[..., 0, 1] - two * g[..., 1, 1] + g[..., 2, 1]
    cross = a00 * a11
    det = cross - a01 * a01
    solvable = ~(np.abs(det) < F32(atol) + F32(rtol) * cross)
    safe = np.where(solvable, det, F32(1))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d0 = (a11 * b0 - a01 * b1) / safe
        d1 = (a00 * b1 - a01 * b0) / safe
        largest = np.maximum(np.abs(d0), np.abs(d1))
        clip = (np.abs(d0) > F32(1.5)) | (np.abs(d1) > F32(1.5))
        factor = np.where(clip, F32(1.5) / np.where(clip, largest, F32(1)), F32(1))
        d0 = np.where(clip, d0 * factor, d0)
        d1 = np.where(clip, d1 * factor, d1)
        score = g[..., 1, 1] - b0 * d0 - b1 * d1 + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / two
    zero = F32(0)
    return (np.where(solvable, d0, zero).astype(F32), np.where(solvable, d1, zero).astype(F32),
            np.where(solvable, score, max_score).astype(F32))


@register_op(Op.HEATMAP_MAX_KEYPOINT, types=ROI_TYPES)
def heatmap_max_keypoint(ctx: OpContext) -> list[np.ndarray]:
    """heatmaps [boxes, size, size, keypoints], boxes [boxes, 4], layout -> scores [boxes, keypoints],
    keypoints [boxes, keypoints, 2] (x, y in box coordinates).

    Quantized: boxes and keypoints QUANT16_ASYMM (scale 0.125); computed in
    float32 (Android's tolerances 1e-5, float16 1e-3 for the singularity test).
    """
    heat_t, boxes_t = ctx.tensor(0), ctx.tensor(1)
    nchw = bool(ctx.scalar(2))
    if heat_t.rank != 4 or boxes_t.rank != 2:
        raise op_failure(f"{ctx.name}: heatmap rank {heat_t.rank}, boxes rank {boxes_t.rank}")
    heatmaps = _to_nhwc(to_float32(heat_t), nchw)
    num_boxes, size, size_w, keypoints = heatmaps.shape
    if size != size_w or size < 2 or boxes_t.shape != (num_boxes, 4):
        raise op_failure(f"{ctx.name}: heatmap {list(heat_t.shape)} / boxes {list(boxes_t.shape)}")
    if heat_t.type in QUANT8:
        check_box_quantization(ctx, 1, "boxes")
    boxes = to_float32(boxes_t)
    if np.any(boxes[:, 0] > boxes[:, 2]) or np.any(boxes[:, 1] > boxes[:, 3]):
        raise op_failure(f"{ctx.name}: box with x2 < x1 or y2 < y1")
    flat = heatmaps.reshape(num_boxes, size * size, keypoints)
    best = flat.argmax(axis=1)  # first maximum, as Android's strict '<' scan
    max_score = np.take_along_axis(flat, best[:, None, :], axis=1)[:, 0, :]
    rows, cols = best // size, best % size
    tol = 1e-3 if heat_t.type == T.TENSOR_FLOAT16 else 1e-5
    dx, dy, score = _refine(_local_grids(heatmaps, rows, cols), max_score, tol, tol)
    x1, y1 = boxes[:, 0:1], boxes[:, 1:2]
    width, height = boxes[:, 2:3] - x1, boxes[:, 3:4] - y1
    rel_x = (cols.astype(F32) + dx + F32(0.5)) / F32(size)
    rel_y = (rows.astype(F32) + dy + F32(0.5)) / F32(size)
    points = np.stack([rel_x * width + x1, rel_y * height + y1], axis=-1)
    return [from_float32(score, ctx.output(0)), from_float32(points, ctx.output(1))]
