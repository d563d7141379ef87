"""Detection operations of the reference driver: NMS, proposals, box transforms, ROI ops, keypoints.

The corpus tests run every Android generated test that uses one of these
operations (the pure detection specs, plus the zero-sized graphs of other
specs that feed BOX_WITH_NMS_LIMIT into ROI_ALIGN) through the library's
runner; the project specs under specs/detection must pass too.  The unit
tests pin what is easy to get subtly wrong: Android's in-place NMS order
(suppressed boxes swap with the last live one, which changes which of two
equal scores is taken next), soft-NMS rescaling, batch runs, empty
ROI_POOLING bins, NCHW layouts and malformed boxes.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from nnvts.drivers.reference.ops import bbox, detection, roi
from nnvts.drivers.reference.tensor import OpContext, Tensor
from tests.reference.corpus import corpus_files_using, run_generated
from vts.hal.enums import NUMPY_DTYPE, OperandLifeTime
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError
from vts.hal.types import Operand

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
FAMILY_OPS = frozenset({
    "BOX_WITH_NMS_LIMIT", "DETECTION_POSTPROCESSING", "GENERATE_PROPOSALS", "AXIS_ALIGNED_BBOX_TRANSFORM",
    "ROI_ALIGN", "ROI_POOLING", "HEATMAP_MAX_KEYPOINT",
})


def test_corpus_detection_models_pass():
    if not os.path.isdir(CORPUS):
        pytest.skip("external corpus not present")
    paths = corpus_files_using(FAMILY_OPS, pure=True)
    assert len(paths) >= 9
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= 300


def test_corpus_zero_sized_graphs_pass():
    """BOX_WITH_NMS_LIMIT -> ROI_ALIGN -> (another op) with nothing surviving: zero-sized tensors flow."""
    if not os.path.isdir(CORPUS):
        pytest.skip("external corpus not present")
    counts = run_generated(corpus_files_using(FAMILY_OPS, pure=False), keyword="zero_sized")
    assert counts.get("passed", 0) + counts.get("skipped", 0) >= 90


def test_project_specs_pass():
    paths = sorted(glob.glob(os.path.join(ROOT, "specs", "detection", "*.yaml")))
    assert len(paths) >= 7
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= 50


# --------------------------------------------------------------------------- helpers


def _operand(type_: int, dims: tuple[int, ...] = (), scale: float = 0.0, zero_point: int = 0) -> Operand:
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=0, scale=scale, zero_point=zero_point,
                   lifetime=OperandLifeTime.TEMPORARY_VARIABLE)


def _tensor(values, type_: int, dims=None, scale: float = 0.0, zero_point: int = 0) -> Tensor:
    array = np.asarray(values, dtype=NUMPY_DTYPE[T(type_)])
    return Tensor(array.reshape(dims) if dims is not None else array, type_, scale, zero_point)


def _scalar(value, type_: int = T.INT32) -> Tensor:
    return Tensor(np.array(value, dtype=NUMPY_DTYPE[T(type_)]), type_)


def _f32(values, dims=None) -> Tensor:
    return _tensor(values, T.TENSOR_FLOAT32, dims)


def _i32(values) -> Tensor:
    return _tensor(values, T.TENSOR_INT32)


# --------------------------------------------------------------------------- NMS order


def test_dropped_candidates_swap_with_the_last_live_one():
    # [a, b, c, d], drop a and c: a swaps with d -> [d, b, c | a]; c is then dropped in place.
    assert detection._partition_kept(["a", "b", "c", "d"], np.array([True, False, True, False])) == ["d", "b"]


def test_equal_scores_are_taken_in_androids_swap_order():
    # 0 suppresses 1; 1 swaps with 3, so among the tied 2 and 3 the first live one is 3.
    scores = np.array([0.9, 0.5, 0.5, 0.5], np.float32)
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], np.float32)
    assert detection.nms_single_class(scores, boxes, [0, 1, 2, 3], -1, 0.5) == [0, 3, 2]
    assert detection.nms_single_class(scores, boxes, [0, 1, 2, 3], 2, 0.5) == [0, 3]


def test_soft_nms_rescales_and_drops_below_the_score_threshold():
    # IoU(A, B) = 90 / 110; linear kernel: 0.7 * (1 - 0.8181818) = 0.1272727 survives a 0.1 threshold.
    scores = np.array([0.8, 0.7], np.float32)
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10]], np.float32)
    kernel = detection._soft_nms_kernel(1, 0.5, 0.5)
    assert detection.nms_single_class(scores, boxes, [0, 1], -1, 0.0, kernel, 0.1) == [0, 1]
    assert scores[1] == pytest.approx(0.7 * 20 / 110, rel=1e-6)
    scores = np.array([0.8, 0.7], np.float32)
    assert detection.nms_single_class(scores, boxes, [0, 1], -1, 0.0, kernel, 0.2) == [0]


def _nms_limit(scores, boxes, batches, threshold=0.1) -> list[np.ndarray]:
    n = len(batches)
    inputs = [_f32(scores, (n, 2)), _f32(boxes, (n, 8)), _i32(batches), _scalar(threshold, T.FLOAT32),
              _scalar(-1), _scalar(0), _scalar(0.5, T.FLOAT32), _scalar(1.0, T.FLOAT32), _scalar(0.1, T.FLOAT32)]
    outputs = [_operand(T.TENSOR_FLOAT32), _operand(T.TENSOR_FLOAT32), _operand(T.TENSOR_INT32),
               _operand(T.TENSOR_INT32)]
    return detection.box_with_nms_limit(OpContext("BOX_WITH_NMS_LIMIT", inputs, outputs))


def test_box_with_nms_limit_treats_each_run_of_batch_indexes_as_a_batch():
    # Android assumes the boxes of a batch are adjacent: [0, 1, 0] is three batches, so the two
    # identical batch-0 boxes never meet in one NMS.
    box = [0, 0, 10, 10] * 2
    scores, _, classes, batches = _nms_limit([0, 0.9, 0, 0.7, 0, 0.8], box * 3, [0, 1, 0])
    assert scores.tolist() == pytest.approx([0.9, 0.7, 0.8])
    assert batches.tolist() == [0, 1, 0] and classes.tolist() == [1, 1, 1]
    scores, _, _, batches = _nms_limit([0, 0.9, 0, 0.8, 0, 0.7], box * 3, [0, 0, 1])
    assert scores.tolist() == pytest.approx([0.9, 0.7]) and batches.tolist() == [0, 1]


def test_box_with_nms_limit_zero_survivors_gives_zero_sized_outputs():
    scores, boxes, classes, batches = _nms_limit([0, 0.3], [0, 0, 1, 1] * 2, [0], threshold=0.5)
    assert scores.shape == (0,) and boxes.shape == (0, 4) and classes.shape == (0,) and batches.shape == (0,)


def test_box_with_nms_limit_rejects_inverted_boxes():
    # Android checks the first n boxes of an n-row batch (its check indexes rows, not row x class).
    with pytest.raises(DriverError):
        _nms_limit([0, 0.9], [5, 5, 1, 1, 0, 0, 1, 1], [0])


def test_box_with_nms_limit_quantized_scores_keep_the_input_quantization():
    # scores scale 0.01: 90 -> 0.9 selected; boxes QUANT16_ASYMM 0.125 are copied as stored.
    inputs = [_tensor([0, 90], T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2), 0.01, -10),
              _tensor([0, 0, 8, 8, 8, 8, 80, 80], T.TENSOR_QUANT16_ASYMM, (1, 8), 0.125, 0), _i32([3]),
              _scalar(0.5, T.FLOAT32), _scalar(-1), _scalar(0), _scalar(0.5, T.FLOAT32),
              _scalar(1.0, T.FLOAT32), _scalar(0.1, T.FLOAT32)]
    outputs = [_operand(T.TENSOR_QUANT8_ASYMM_SIGNED, (), 0.01, -10), _operand(T.TENSOR_QUANT16_ASYMM, (), 0.125),
               _operand(T.TENSOR_INT32), _operand(T.TENSOR_INT32)]
    scores, boxes, classes, batches = detection.box_with_nms_limit(OpContext("BOX_WITH_NMS_LIMIT", inputs, outputs))
    assert scores.tolist() == [90] and scores.dtype == np.int8
    assert boxes.tolist() == [[8, 8, 80, 80]] and boxes.dtype == np.uint16
    assert classes.tolist() == [1] and batches.tolist() == [3]


# --------------------------------------------------------------------------- boxes


def test_bbox_transform_clips_and_handles_zero_boxes():
    # [0, 0, 10, 10] moved by dx = 0.5 (5 px) in a 12 x 12 image: [5, 0, 15, 10] -> [5, 0, 12, 10].
    ctx = OpContext("AXIS_ALIGNED_BBOX_TRANSFORM",
                    [_f32([0, 0, 10, 10], (1, 4)), _f32([0.5, 0, 0, 0], (1, 4)), _i32([0]), _f32([12, 12], (1, 2))],
                    [_operand(T.TENSOR_FLOAT32)])
    assert bbox.axis_aligned_bbox_transform(ctx)[0].tolist() == [[5, 0, 12, 10]]
    empty = OpContext("AXIS_ALIGNED_BBOX_TRANSFORM",
                      [_f32([], (0, 4)), _f32([], (0, 8)), _i32([]), _f32([12, 12], (1, 2))],
                      [_operand(T.TENSOR_FLOAT32)])
    assert bbox.axis_aligned_bbox_transform(empty)[0].shape == (0, 8)


def test_bbox_transform_rejects_a_bad_batch_index():
    ctx = OpContext("AXIS_ALIGNED_BBOX_TRANSFORM",
                    [_f32([0, 0, 10, 10], (1, 4)), _f32([0, 0, 0, 0], (1, 4)), _i32([1]), _f32([12, 12], (1, 2))],
                    [_operand(T.TENSOR_FLOAT32)])
    with pytest.raises(DriverError):
        bbox.axis_aligned_bbox_transform(ctx)


def test_quantized_boxes_round_half_away_and_saturate():
    out = _operand(T.TENSOR_QUANT16_ASYMM, (), 0.125, 0)
    spec = OpContext("X", [], [out]).output(0)
    assert bbox.from_float32(np.array([0.0625, -1.0, 9000.0], np.float32), spec).tolist() == [1, 0, 65535]


def test_detection_postprocessing_rejects_zero_detections():
    inputs = [_f32([0.1, 0.9], (1, 1, 2)), _f32([0, 0, 0, 0], (1, 1, 4)), _f32([5, 5, 10, 10], (1, 4))]
    inputs += [_scalar(10.0, T.FLOAT32)] * 4 + [_scalar(True, T.BOOL), _scalar(0), _scalar(1), _scalar(1),
                                                   _scalar(0.5, T.FLOAT32), _scalar(0.5, T.FLOAT32),
                                                   _scalar(False, T.BOOL)]
    outputs = [_operand(T.TENSOR_FLOAT32)] * 2 + [_operand(T.TENSOR_INT32)] * 2
    with pytest.raises(DriverError):
        detection.detection_postprocessing(OpContext("DETECTION_POSTPROCESSING", inputs, outputs))


# --------------------------------------------------------------------------- ROI operations


def _roi_inputs(feature: Tensor, rois: Tensor, batches: list[int], nchw: bool, sampling: bool) -> list[Tensor]:
    ratio_type = T.FLOAT16 if feature.type == T.TENSOR_FLOAT16 else T.FLOAT32
    inputs = [feature, rois, _i32(batches), _scalar(2), _scalar(2), _scalar(1.0, ratio_type),
              _scalar(1.0, ratio_type)]
    if sampling:
        inputs += [_scalar(2), _scalar(2)]
    return [*inputs, _scalar(nchw, T.BOOL)]


def test_roi_align_nchw_matches_nhwc():
    rng = np.random.default_rng(7)
    fmap = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
    rois = _f32([0, 0, 6, 5, 1.5, 0.5, 4, 3.25], (2, 4))
    out = [_operand(T.TENSOR_FLOAT32)]
    nhwc = roi.roi_align(OpContext("ROI_ALIGN", _roi_inputs(_f32(fmap), rois, [1, 0], False, True), out))[0]
    nchw_in = _f32(fmap.transpose(0, 3, 1, 2))
    nchw = roi.roi_align(OpContext("ROI_ALIGN", _roi_inputs(nchw_in, rois, [1, 0], True, True), out))[0]
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


def test_roi_align_rejects_regions_outside_the_map():
    fmap = _f32(np.zeros((1, 4, 4, 1)))
    with pytest.raises(DriverError):
        roi.roi_align(OpContext("ROI_ALIGN", _roi_inputs(fmap, _f32([0, 0, 5, 4], (1, 4)), [0], False, True),
                                [_operand(T.TENSOR_FLOAT32)]))


def test_roi_pooling_empty_bin_is_the_zero_point():
    # A region on the right edge (x1 = x2 = width) spans one column past the map: its bins are empty.
    fmap = _tensor(np.arange(16) + 20, T.TENSOR_QUANT8_ASYMM, (1, 4, 4, 1), 0.5, 7)
    rois = _tensor([32, 0, 32, 8], T.TENSOR_QUANT16_ASYMM, (1, 4), 0.125, 0)
    out = roi.roi_pooling(OpContext("ROI_POOLING", _roi_inputs(fmap, rois, [0], False, False),
                                    [_operand(T.TENSOR_QUANT8_ASYMM, (), 0.5, 7)]))[0]
    assert out.reshape(-1).tolist() == [7, 7, 7, 7]


def test_roi_ops_accept_zero_regions():
    fmap = _f32(np.ones((1, 4, 4, 2)))
    for op, sampling in ((roi.roi_align, True), (roi.roi_pooling, False)):
        ctx = OpContext("ROI", _roi_inputs(fmap, _f32([], (0, 4)), [], False, sampling), [_operand(T.TENSOR_FLOAT32)])
        assert op(ctx)[0].shape == (0, 2, 2, 2)


def test_heatmap_takes_the_first_maximum():
    # Two equal maxima: the first in row-major order wins.
    heat = np.zeros((1, 3, 3, 1), np.float32)
    heat[0, 1, 0, 0] = heat[0, 2, 2, 0] = 1.0
    ctx = OpContext("HEATMAP_MAX_KEYPOINT", [_f32(heat), _f32([0, 0, 3, 3], (1, 4)), _scalar(False, T.BOOL)],
                    [_operand(T.TENSOR_FLOAT32), _operand(T.TENSOR_FLOAT32)])
    scores, points = roi.heatmap_max_keypoint(ctx)
    # maximum at column 0, row 1; mirrored neighbourhood [[0,0,0],[0,1,0],[0,0,0]]: A = -2 I, b = 0.
    assert scores.tolist() == [[1.0]]
    assert points.tolist() == [[[0.5, 1.5]]]
