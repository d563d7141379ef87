"""AXIS_ALIGNED_BBOX_TRANSFORM, plus the box arithmetic the detection operations share.

Android's CPU path runs every box operation in float32: quantized inputs are
dequantized with ``(q - zero_point) * scale`` in float32 (boxes are
TENSOR_QUANT16_ASYMM with scale 0.125, zero point 0), the result is
requantized with ``round(x / scale + zero_point)`` (halves away from zero)
and saturated; float16 is widened to float32 and rounded back.  Intersection
over union and the NMS comparisons are float32 too, so a threshold decision
on a borderline box comes out the way it does on Android.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import quantized_range, round_half_away
from nnvts.drivers.reference.tensor import OpContext, OutputSpec, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

F32 = np.float32
QUANT_TYPES = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM,
                         T.TENSOR_QUANT16_SYMM})
#: Quantized boxes must use this scale and zero point 0 (NNAPI: TENSOR_QUANT16_ASYMM box operands).
BOX_SCALE = 0.125


def to_float32(tensor: Tensor) -> np.ndarray:
    """Android's ``convertQuantToFloat32`` / ``convertFloat16ToFloat32``: values as float32."""
    if tensor.type in QUANT_TYPES:
        return (tensor.value.astype(F32) - F32(tensor.zero_point)) * F32(tensor.scale)
    return tensor.value.astype(F32)


def from_float32(values: np.ndarray, out: OutputSpec) -> np.ndarray:
    """Android's ``convertFloat32ToQuant`` for quantized outputs; a plain cast otherwise."""
    values = np.asarray(values, dtype=F32)
    if out.type in QUANT_TYPES:
        with np.errstate(invalid="ignore", over="ignore"):
            raw = round_half_away(values / F32(out.scale) + F32(out.zero_point))
        low, high = quantized_range(out.dtype)
        return np.clip(np.nan_to_num(raw), low, high).astype(out.dtype)
    return values.astype(out.dtype)


def check_box_quantization(ctx: OpContext, index: int, what: str) -> None:
    """Quantized box operands must be QUANT16_ASYMM with scale 0.125 and zero point 0 (NNAPI)."""
    tensor = ctx.tensor(index)
    if F32(tensor.scale) != F32(BOX_SCALE) or tensor.zero_point != 0:
        raise op_failure(f"{ctx.name}: {what} must have scale 0.125 and zero point 0, "
                         f"got {tensor.scale:g} / {tensor.zero_point}")


def iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of one [4] box against [n, 4] boxes, in float32.

    A zero union gives NaN, as Android's division does; NaN never passes a
    ``>=`` threshold, so such boxes are never suppressed.
    """
    box = box.astype(F32, copy=False)
    others = others.astype(F32, copy=False)
    area_box = (box[2] - box[0]) * (box[3] - box[1])
    area_others = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    w = np.maximum(np.minimum(others[:, 2], box[2]) - np.maximum(others[:, 0], box[0]), F32(0))
    h = np.maximum(np.minimum(others[:, 3], box[3]) - np.maximum(others[:, 1], box[1]), F32(0))
    intersection = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        return intersection / (area_others + area_box - intersection)


def transform_boxes(rois: np.ndarray, deltas: np.ndarray, batches: np.ndarray,
                    image_info: np.ndarray) -> np.ndarray:
    """Apply per-class (dx, dy, dw, dh) deltas to [n, 4] (x1, y1, x2, y2) boxes and clip to the image.

    rois [n, 4], deltas [n, classes * 4], batches [n], image_info [batches, 2]
    (height, width) -> [n, classes * 4].  NNAPI rejects an out-of-range batch
    index and a box with x2 < x1 or y2 < y1.
    """
    n = rois.shape[0]
    if n and (np.any(batches < 0) or np.any(batches >= image_info.shape[0])):
        raise op_failure(f"AXIS_ALIGNED_BBOX_TRANSFORM: batch index out of range {batches.tolist()}")
    if n and (np.any(rois[:, 0] > rois[:, 2]) or np.any(rois[:, 1] > rois[:, 3])):
        raise op_failure("AXIS_ALIGNED_BBOX_TRANSFORM: box with x2 < x1 or y2 < y1")
    classes = deltas.shape[1] // 4
    d = deltas.reshape(n, classes, 4).astype(F32)
    width = (rois[:, 2] - rois[:, 0])[:, None]
    height = (rois[:, 3] - rois[:, 1])[:, None]
    center_x = ((rois[:, 0] + rois[:, 2]) / F32(2))[:, None]
    center_y = ((rois[:, 1] + rois[:, 3]) / F32(2))[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        new_w = np.exp(d[..., 2]) * width
        new_h = np.exp(d[..., 3]) * height
        new_x = center_x + d[..., 0] * width
        new_y = center_y + d[..., 1] * height
        info = image_info[batches] if n else np.zeros((0, 2), F32)
        img_h, img_w = info[:, 0:1], info[:, 1:2]
        out = np.stack([
            np.minimum(np.maximum(new_x - new_w / F32(2), F32(0)), img_w),
            np.minimum(np.maximum(new_y - new_h / F32(2), F32(0)), img_h),
            np.minimum(np.maximum(new_x + new_w / F32(2), F32(0)), img_w),
            np.minimum(np.maximum(new_y + new_h / F32(2), F32(0)), img_h),
        ], axis=-1)
    return out.reshape(n, classes * 4).astype(F32)


@register_op(Op.AXIS_ALIGNED_BBOX_TRANSFORM, types=(T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT16_ASYMM))
def axis_aligned_bbox_transform(ctx: OpContext) -> list[np.ndarray]:
    """rois [n, 4], deltas [n, classes * 4], I32 batches [n], image info [batches, 2] -> boxes [n, classes * 4].

    Quantized: rois and image info QUANT16_ASYMM (scale 0.125), deltas
    QUANT8_ASYMM or QUANT8_ASYMM_SIGNED; computed in float32 and requantized.
    """
    rois, deltas, batches, info = (ctx.tensor(i) for i in range(4))
    if rois.rank != 2 or deltas.rank != 2 or batches.rank != 1 or info.rank != 2:
        raise op_failure(f"{ctx.name}: ranks must be 2, 2, 1, 2")
    n = rois.shape[0]
    classes = deltas.shape[1] // 4
    if (rois.shape[1] != 4 or deltas.shape[0] != n or deltas.shape[1] != 4 * classes or classes == 0
            or batches.shape[0] != n or info.shape[1] != 2 or info.shape[0] == 0):
        raise op_failure(f"{ctx.name}: inconsistent shapes {rois.shape} {deltas.shape} {batches.shape} "
                         f"{info.shape}")
    if rois.type == T.TENSOR_QUANT16_ASYMM:
        check_box_quantization(ctx, 0, "rois")
        check_box_quantization(ctx, 3, "image info")
    boxes = transform_boxes(to_float32(rois), to_float32(deltas), batches.value.astype(np.int64),
                            to_float32(info))
    return [from_float32(boxes, ctx.output(0))]
