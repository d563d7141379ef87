"""BOX_WITH_NMS_LIMIT, DETECTION_POSTPROCESSING, GENERATE_PROPOSALS: non-maximum suppression.

The selection order is part of the result (outputs are lists of surviving
boxes), so the NMS loop reproduces Android's in-place algorithm exactly:
pick the *first* highest score among the remaining candidates, move it to
the front, and move every candidate it suppresses to the back by swapping
with the last live one.  That swap order decides which of two equal scores
is picked next, so it is emulated step by step; the IoU and kernel values of
each step are computed vectorised in float32.

Soft NMS (BOX_WITH_NMS_LIMIT kernels 1 linear and 2 gaussian) rescales the
scores of the remaining candidates and drops those falling below the NMS
score threshold; hard NMS (kernel 0, GENERATE_PROPOSALS and
DETECTION_POSTPROCESSING) drops those whose IoU reaches the IoU threshold.
Sorts by score use a stable order for ties.  Nothing surviving is not an
error: the outputs are zero-sized (BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnvts.drivers.reference.ops.bbox import F32, check_box_quantization, from_float32, iou, to_float32, transform_boxes
from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

DETECTION_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

#: Maps the IoU of each remaining candidate with the chosen box to a score factor (soft NMS).
ScoreKernel = Callable[[np.ndarray], np.ndarray]


def _partition_kept(candidates: list[int], drop: np.ndarray) -> list[int]:
    """Android's discard loop: a dropped candidate swaps with the last live one, which is examined next."""
    items = list(candidates)
    flags = drop.tolist()
    i, end = 0, len(items)
    while i < end:
        if flags[i]:
            end -= 1
            items[i], items[end] = items[end], items[i]
            flags[i], flags[end] = flags[end], flags[i]
        else:
            i += 1
    return items[:end]


def nms_single_class(scores: np.ndarray, boxes: np.ndarray, select: list[int], max_detections: int,
                     iou_threshold: float, kernel: ScoreKernel | None = None,
                     score_threshold: float = 0.0) -> list[int]:
    """NMS over candidate indexes ``select``; returns the kept ones in selection order.

    ``scores`` [*] and ``boxes`` [*, 4] are indexed by candidate; hard NMS when
    ``kernel`` is None, otherwise soft NMS that rescales ``scores`` in place.
    ``max_detections < 0`` means no limit.
    """
    live = list(select)
    kept: list[int] = []
    limit = len(live) if max_detections < 0 else max_detections
    while live and len(kept) < limit:
        best_pos = int(np.argmax(scores[np.asarray(live)]))  # first of equal maxima, as std::max_element
        live[0], live[best_pos] = live[best_pos], live[0]
        best, rest = live[0], live[1:]
        kept.append(best)
        if not rest:
            live = []
            break
        rest_idx = np.asarray(rest)
        overlap = iou(boxes[best], boxes[rest_idx])
        if kernel is None:
            drop = overlap >= F32(iou_threshold)
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                scores[rest_idx] = scores[rest_idx] * kernel(overlap)
            drop = scores[rest_idx] < F32(score_threshold)
        live = _partition_kept(rest, drop) if drop.any() else rest
    return kept


def _class_candidates(scores: np.ndarray, cls: int, threshold: float) -> list[int]:
    """Flat indexes (row * classes + cls) of the rows whose score for ``cls`` is above the threshold."""
    rows = np.nonzero(scores[:, cls] > F32(threshold))[0]
    return (rows * scores.shape[1] + cls).tolist()


def sort_by_score(indexes: list[int], scores: np.ndarray) -> list[int]:
    """Indexes by descending score (ties keep their order)."""
    if not indexes:
        return []
    order = np.argsort(-scores[np.asarray(indexes)].astype(np.float64), kind="stable")
    return [indexes[i] for i in order]


# -- BOX_WITH_NMS_LIMIT -------------------------------------------------------------------------


def _soft_nms_kernel(kind: int, iou_threshold: float, sigma: float) -> ScoreKernel:
    """NNAPI BOX_WITH_NMS_LIMIT kernels: 0 hard, 1 linear, 2 gaussian."""
    threshold = F32(iou_threshold)
    if kind == 0:
        return lambda overlap: np.where(overlap < threshold, F32(1), F32(0)).astype(F32)
    if kind == 1:
        return lambda overlap: np.where(overlap < threshold, F32(1), F32(1) - overlap).astype(F32)
    if kind == 2:
        s = F32(sigma)
        return lambda overlap: np.exp(F32(-1) * overlap * overlap / s).astype(F32)
    raise op_failure(f"BOX_WITH_NMS_LIMIT: unsupported NMS kernel {kind}")


def _batch_runs(batches: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of each run of equal batch indexes (NNAPI: boxes of one batch are adjacent)."""
    runs: list[tuple[int, int]] = []
    for i, b in enumerate(batches.tolist()):
        if runs and batches[runs[-1][0]] == b:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def _nms_one_batch(scores: np.ndarray, boxes: np.ndarray, score_threshold: float, max_detections: int,
                   kernel: ScoreKernel, nms_score_threshold: float) -> list[int]:
    """Soft NMS per class (class 0 is background), best ``max_detections`` overall, ordered by class."""
    classes = scores.shape[1]
    flat_scores = scores.reshape(-1)
    flat_boxes = boxes.reshape(-1, 4)
    selected: list[int] = []
    for c in range(1, classes):
        candidates = _class_candidates(scores, c, score_threshold)
        selected += nms_single_class(flat_scores, flat_boxes, candidates, max_detections, 0.0, kernel,
                                     nms_score_threshold)
    selected = sort_by_score(selected, flat_scores)
    if 0 <= max_detections < len(selected):
        selected = selected[:max_detections]
    by_class = sorted(range(len(selected)), key=lambda k: selected[k] % classes)  # stable: scores stay sorted
    return [selected[k] for k in by_class]


@register_op(Op.BOX_WITH_NMS_LIMIT, types=DETECTION_TYPES)
def box_with_nms_limit(ctx: OpContext) -> list[np.ndarray]:
    """scores [n, classes], boxes [n, classes * 4], I32 batches [n], score threshold, max detections,
    kernel, IoU threshold, sigma, NMS score threshold -> scores [k], boxes [k, 4], I32 classes [k],
    I32 batches [k].

    Output scores are the (soft-NMS rescaled) scores in the input's
    quantization; output boxes are copied unchanged (quantized boxes keep
    their stored values).
    """
    scores_t, boxes_t, batches_t = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    if scores_t.rank != 2 or boxes_t.rank != 2 or batches_t.rank != 1:
        raise op_failure(f"{ctx.name}: ranks must be 2, 2, 1")
    rois, classes = scores_t.shape
    if boxes_t.shape != (rois, 4 * classes) or batches_t.shape != (rois,) or classes <= 1:
        raise op_failure(f"{ctx.name}: inconsistent shapes {scores_t.shape} {boxes_t.shape} {batches_t.shape}")
    if scores_t.type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        check_box_quantization(ctx, 1, "boxes")
    score_threshold = float(ctx.scalar(3))
    max_detections = int(ctx.scalar(4))
    kernel = _soft_nms_kernel(int(ctx.scalar(5)), float(ctx.scalar(6)), float(ctx.scalar(7)))
    nms_score_threshold = float(ctx.scalar(8))

    scores = to_float32(scores_t)
    boxes = to_float32(boxes_t)
    batches = batches_t.value
    picked: list[tuple[int, int]] = []  # (flat index into scores, batch id)
    for start, length in _batch_runs(batches):
        box_rows = boxes[start:start + length].reshape(-1, 4)[:length]  # Android checks only these rows
        if np.any(box_rows[:, 0] > box_rows[:, 2]) or np.any(box_rows[:, 1] > box_rows[:, 3]):
            raise op_failure(f"{ctx.name}: box with x2 < x1 or y2 < y1")
        batch_scores = scores[start:start + length]  # a view: soft NMS rescales it in place
        kept = _nms_one_batch(batch_scores, boxes[start:start + length], score_threshold,
                              max_detections, kernel, nms_score_threshold)
        picked += [(start * classes + k, int(batches[start])) for k in kept]

    flat = np.asarray([p[0] for p in picked], dtype=np.int64)
    rows, cls = flat // classes, flat % classes
    out_boxes = boxes_t.value.reshape(rois, classes, 4)[rows, cls] if len(flat) else np.zeros((0, 4))
    return [
        from_float32(scores.reshape(-1)[flat], ctx.output(0)),
        np.asarray(out_boxes).reshape(-1, 4).astype(ctx.output(1).dtype),
        cls.astype(np.int32),
        np.asarray([p[1] for p in picked], dtype=np.int32),
    ]


# -- GENERATE_PROPOSALS -------------------------------------------------------------------------


def _nhwc(ctx: OpContext, index: int, nchw: bool) -> np.ndarray:
    values = to_float32(ctx.tensor(index))
    return values.transpose(0, 2, 3, 1) if nchw else values


def _anchor_grid(anchors: np.ndarray, height: int, width: int, h_stride: float, w_stride: float) -> np.ndarray:
    """Anchors shifted to every feature-map cell: [height * width * anchors, 4], cell-major."""
    h_shift = np.arange(height, dtype=F32) * F32(h_stride)
    w_shift = np.arange(width, dtype=F32) * F32(w_stride)
    shift = np.zeros((height, width, 1, 4), dtype=F32)
    shift[..., 0] = shift[..., 2] = w_shift[None, :, None]
    shift[..., 1] = shift[..., 3] = h_shift[:, None, None]
    return (anchors[None, None, :, :] + shift).reshape(-1, 4)


def _keep_sizeable(boxes: np.ndarray, select: list[int], min_size: float, info: np.ndarray) -> list[int]:
    """Drop boxes not larger than min_size or whose centre lies outside the image (NNAPI filterBoxes)."""
    if not select:
        return []
    b = boxes[np.asarray(select)]
    width = b[:, 2] - b[:, 0]
    height = b[:, 3] - b[:, 1]
    keep = ((width > F32(min_size)) & (height > F32(min_size)) & (b[:, 0] + width / F32(2) < info[1])
            & (b[:, 1] + height / F32(2) < info[0]))
    return [s for s, k in zip(select, keep.tolist(), strict=True) if k]


@register_op(Op.GENERATE_PROPOSALS, types=DETECTION_TYPES)
def generate_proposals(ctx: OpContext) -> list[np.ndarray]:
    """scores [b, h, w, a], deltas [b, h, w, a * 4], anchors [a, 4], image info [b, 2], height stride,
    width stride, pre-NMS top n, post-NMS top n, IoU threshold, min size, layout -> scores [k],
    boxes [k, 4], I32 batches [k].

    Quantized: scores and deltas QA8/QAS8, anchors QUANT16_SYMM, image info and
    output boxes QUANT16_ASYMM (scale 0.125); computed in float32.
    """
    nchw = bool(ctx.scalar(10))
    for i in range(4):
        if ctx.tensor(i).rank != (4 if i < 2 else 2):
            raise op_failure(f"{ctx.name}: input {i} has rank {ctx.tensor(i).rank}")
    scores = _nhwc(ctx, 0, nchw)
    deltas = _nhwc(ctx, 1, nchw)
    anchors = to_float32(ctx.tensor(2))
    info = to_float32(ctx.tensor(3))
    batches, height, width, num_anchors = scores.shape
    if (deltas.shape != (batches, height, width, num_anchors * 4) or info.shape != (batches, 2)
            or anchors.shape != (num_anchors, 4)):
        raise op_failure(f"{ctx.name}: inconsistent shapes {scores.shape} {deltas.shape} {anchors.shape} "
                         f"{info.shape}")
    if ctx.tensor(0).type == T.TENSOR_QUANT8_ASYMM:
        if F32(ctx.tensor(2).scale) != F32(0.125):
            raise op_failure(f"{ctx.name}: anchors must have scale 0.125")
        check_box_quantization(ctx, 3, "image info")
    pre_nms, post_nms = int(ctx.scalar(6)), int(ctx.scalar(7))
    iou_threshold, min_size = float(ctx.scalar(8)), float(ctx.scalar(9))

    grid = _anchor_grid(anchors, height, width, float(ctx.scalar(4)), float(ctx.scalar(5)))
    count = grid.shape[0]
    out_scores: list[np.ndarray] = []
    out_boxes: list[np.ndarray] = []
    out_batches: list[np.ndarray] = []
    for b in range(batches):
        boxes = transform_boxes(grid, deltas[b].reshape(count, 4), np.zeros(count, np.int64), info[b:b + 1])
        batch_scores = scores[b].reshape(-1)
        select = list(range(count))
        if 0 < pre_nms < count:
            select = sort_by_score(select, batch_scores)[:pre_nms]
        select = _keep_sizeable(boxes, select, min_size, info[b])
        kept = np.asarray(nms_single_class(batch_scores, boxes, select, post_nms, iou_threshold), np.int64)
        out_scores.append(batch_scores[kept])
        out_boxes.append(boxes[kept].reshape(-1, 4))
        out_batches.append(np.full(len(kept), b, np.int32))
    return [
        from_float32(np.concatenate(out_scores) if out_scores else np.zeros(0, F32), ctx.output(0)),
        from_float32(np.concatenate(out_boxes) if out_boxes else np.zeros((0, 4), F32), ctx.output(1)),
        np.concatenate(out_batches) if out_batches else np.zeros(0, np.int32),
    ]


# -- DETECTION_POSTPROCESSING -------------------------------------------------------------------


def _decode_anchor_boxes(anchors: np.ndarray, deltas: np.ndarray, scales: tuple[float, ...]) -> np.ndarray:
    """Center-size deltas on (y, x, h, w) anchors -> [anchors, 4] (y1, x1, y2, x2) boxes, float32."""
    sy, sx, sh, sw = (F32(s) for s in scales)
    with np.errstate(over="ignore", invalid="ignore"):
        y_center = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / sy
        x_center = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / sx
        h_half = anchors[:, 2] * np.exp(deltas[:, 2] / sh) * F32(0.5)
        w_half = anchors[:, 3] * np.exp(deltas[:, 3] / sw) * F32(0.5)
    return np.stack([y_center - h_half, x_center - w_half, y_center + h_half, x_center + w_half], axis=1)


def _regular_nms(scores: np.ndarray, boxes: np.ndarray, score_threshold: float, iou_threshold: float,
                 max_detections: int, max_per_class: int) -> list[tuple[int, int, float]]:
    """Hard NMS per class, then the best ``max_detections`` overall: (anchor, class, score)."""
    classes = scores.shape[1]
    flat = scores.reshape(-1)
    class_boxes = np.repeat(boxes, classes, axis=0)  # indexed like ``flat``
    selected: list[int] = []
    for c in range(1, classes):
        candidates = _class_candidates(scores, c, score_threshold)
        selected += nms_single_class(flat, class_boxes, candidates, max_per_class, iou_threshold)
    selected = sort_by_score(selected, flat)
    if 0 <= max_detections < len(selected):
        selected = selected[:max_detections]
    return [(s // classes, s % classes, float(flat[s])) for s in selected]


def _fast_nms(scores: np.ndarray, boxes: np.ndarray, score_threshold: float, iou_threshold: float,
              max_detections: int, max_classes: int) -> list[tuple[int, int, float]]:
    """Hard NMS on each anchor's best class score, then its top ``max_classes`` classes."""
    classes = scores.shape[1]
    best = scores[:, 1:].max(axis=1)
    candidates = [a for a in range(scores.shape[0]) if best[a] > F32(score_threshold)]
    kept = nms_single_class(best, boxes, candidates, max_detections, iou_threshold)
    out_classes = min(classes - 1, max_classes)
    result = []
    for a in kept:
        ranked = sort_by_score(list(range(1, classes)), scores[a])
        result += [(a, c, float(scores[a, c])) for c in ranked[:out_classes]]
    return result


@register_op(Op.DETECTION_POSTPROCESSING, types=(T.TENSOR_FLOAT32, T.TENSOR_FLOAT16))
def detection_postprocessing(ctx: OpContext) -> list[np.ndarray]:
    """scores [b, anchors, classes], deltas [b, anchors, >=4], anchors [anchors, 4], y/x/h/w scales,
    regular NMS, max detections, max classes per detection, max detections per class, score threshold,
    IoU threshold, background-in-label -> scores [b, n], boxes [b, n, 4], I32 classes [b, n],
    I32 detection counts [b]; unused slots are zero.
    """
    scores_all = to_float32(ctx.tensor(0))
    deltas_all = to_float32(ctx.tensor(1))
    anchors = to_float32(ctx.tensor(2))
    if scores_all.ndim != 3 or deltas_all.ndim != 3 or anchors.ndim != 2:
        raise op_failure(f"{ctx.name}: ranks must be 3, 3, 2")
    batches, num_anchors, classes = scores_all.shape
    scales = tuple(float(ctx.scalar(i)) for i in range(3, 7))
    regular = bool(ctx.scalar(7))
    max_detections, max_classes, max_per_class = (int(ctx.scalar(i)) for i in range(8, 11))
    score_threshold, iou_threshold = float(ctx.scalar(11)), float(ctx.scalar(12))
    label_offset = 0 if bool(ctx.scalar(13)) else 1
    if (deltas_all.shape[:2] != (batches, num_anchors) or deltas_all.shape[2] < 4
            or anchors.shape != (num_anchors, 4) or classes <= 1 or max_detections <= 0
            or min(scales) <= 0 or score_threshold < 0 or iou_threshold < 0
            or (regular and max_per_class <= 0) or (not regular and max_classes <= 0)):
        raise op_failure(f"{ctx.name}: invalid shapes or parameters")
    slots = max_detections if regular else max_detections * max_classes
    out_scores = np.zeros((batches, slots), F32)
    out_boxes = np.zeros((batches, slots, 4), F32)
    out_classes = np.zeros((batches, slots), np.int32)
    counts = np.zeros(batches, np.int32)
    for b in range(batches):
        boxes = _decode_anchor_boxes(anchors, deltas_all[b, :, :4], scales)
        if regular:
            found = _regular_nms(scores_all[b], boxes, score_threshold, iou_threshold, max_detections,
                                 max_per_class)
        else:
            found = _fast_nms(scores_all[b], boxes, score_threshold, iou_threshold, max_detections, max_classes)
        for slot, (anchor, cls, score) in enumerate(found):
            out_scores[b, slot] = score
            out_boxes[b, slot] = boxes[anchor]
            out_classes[b, slot] = cls - label_offset
        counts[b] = len(found)
    return [out_scores.astype(ctx.output(0).dtype), out_boxes.astype(ctx.output(1).dtype), out_classes, counts]
