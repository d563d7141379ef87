"""Object-detection operations (all introduced in HAL 1.2).

Facts from Android 11's ``GenerateProposals.cpp`` (AXIS_ALIGNED_BBOX_TRANSFORM,
BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, DETECTION_POSTPROCESSING),
``HeatmapMaxKeypoint.cpp``, ``RoiAlign.cpp`` and ``RoiPooling.cpp``
validators.  Quantized variants carry box coordinates as
TENSOR_QUANT16_ASYMM and their float parameters as FLOAT32 scalars.
"""

from __future__ import annotations

from vts.hal.enums import OperationType as Op
from vts.hal.operations._core import (
    BOOL,
    F16,
    F32,
    FLOAT,
    I32,
    INT,
    QA8,
    QA16,
    QAS8,
    QS16,
    V12,
    V13,
    OpSpec,
    Signature,
    scalar_of,
    sig,
)

_FLOATS = (F32, F16)


def _axis_aligned_bbox_transform() -> tuple[Signature, ...]:
    """rois, deltas, I32 batch index, image info -> boxes (rois' type)."""
    result = [sig((t, t, I32, t), (t,), V12) for t in _FLOATS]
    result += [sig((QA16, d, I32, QA16), (QA16,), V13 if d == QAS8 else V12) for d in (QA8, QAS8)]
    return tuple(result)


def _box_with_nms_limit() -> tuple[Signature, ...]:
    result = []
    for t in _FLOATS:
        s = scalar_of(t)
        result.append(sig((t, t, I32, s, INT, INT, s, s, s), (t, t, I32, I32), V12))
    for t in (QA8, QAS8):
        inputs = (t, QA16, I32, FLOAT, INT, INT, FLOAT, FLOAT, FLOAT)
        result.append(sig(inputs, (t, QA16, I32, I32), V13 if t == QAS8 else V12))
    return tuple(result)


def _generate_proposals() -> tuple[Signature, ...]:
    result = []
    for t in _FLOATS:
        s = scalar_of(t)
        result.append(sig((t, t, t, t, s, s, INT, INT, s, s, BOOL), (t, t, I32), V12))
    for t in (QA8, QAS8):
        result.append(sig(
            (t, t, QS16, QA16, FLOAT, FLOAT, INT, INT, FLOAT, FLOAT, BOOL), (t, QA16, I32),
            V13 if t == QAS8 else V12,
        ))
    return tuple(result)


def _detection_postprocessing() -> tuple[Signature, ...]:
    result = []
    for t in _FLOATS:
        s = scalar_of(t)
        result.append(sig((t, t, t, s, s, s, s, BOOL, INT, INT, INT, s, s, BOOL), (t, t, I32, I32), V12))
    return tuple(result)


def _heatmap_max_keypoint() -> tuple[Signature, ...]:
    result = [sig((t, t, BOOL), (t, t), V12) for t in _FLOATS]
    result += [sig((t, QA16, BOOL), (t, QA16), V13 if t == QAS8 else V12) for t in (QA8, QAS8)]
    return tuple(result)


def _roi(sampling: bool) -> tuple[Signature, ...]:
    """feature map, rois, I32 batch index, INT32 out H/W, two ratios, [2 sampling counts], layout."""
    result = []
    variants = ((F32, F32, FLOAT), (F16, F16, scalar_of(F16)), (QA8, QA16, FLOAT), (QAS8, QA16, FLOAT))
    for t, rois, ratio in variants:
        inputs = (t, rois, I32, INT, INT, ratio, ratio) + ((INT, INT) if sampling else ()) + (BOOL,)
        result.append(sig(inputs, (t,), V13 if t == QAS8 else V12))
    return tuple(result)


SPECS: dict[int, OpSpec] = {
    Op.AXIS_ALIGNED_BBOX_TRANSFORM: OpSpec(_axis_aligned_bbox_transform()),
    Op.BOX_WITH_NMS_LIMIT: OpSpec(_box_with_nms_limit()),
    Op.GENERATE_PROPOSALS: OpSpec(_generate_proposals()),
    Op.DETECTION_POSTPROCESSING: OpSpec(_detection_postprocessing()),
    Op.HEATMAP_MAX_KEYPOINT: OpSpec(_heatmap_max_keypoint()),
    Op.ROI_ALIGN: OpSpec(_roi(sampling=True)),
    Op.ROI_POOLING: OpSpec(_roi(sampling=False)),
}
