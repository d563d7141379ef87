"""Shape-family operations of the reference driver (reshape, slicing, space, reduce, resize, lookup).

The corpus tests run every Android generated test whose operations all
belong to this family (plus the ADD of the ``all_inputs_as_internal``
variations) through the library's runner; the project specs under
specs/shape, specs/reduce and specs/resize must pass too.  The unit tests pin
the behaviours that are easy to get subtly wrong: Android's float
requantization in CONCATENATION, MEAN's truncating integer division, tie
orders of ARGMAX and TOPK_V2, STRIDED_SLICE's shrink rules, resize
coordinate and rounding rules, zero-point padding and NCHW layouts.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from nnvts.drivers.reference.ops import lookup, reduce, reshape, resize, slicing, space
from nnvts.drivers.reference.tensor import OpContext, Tensor
from tests.reference.corpus import corpus_files_using, run_generated
from vts.hal.enums import NUMPY_DTYPE, OperandLifeTime
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError
from vts.hal.types import Operand

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
SPEC_DIRS = ("shape", "reduce", "resize")
FAMILY_OPS = frozenset({
    "RESHAPE", "CONCATENATION", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "PAD", "PAD_V2", "SLICE",
    "STRIDED_SLICE", "SPLIT", "TILE", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "DEPTH_TO_SPACE",
    "SPACE_TO_DEPTH", "CHANNEL_SHUFFLE", "MEAN", "REDUCE_ALL", "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN",
    "REDUCE_PROD", "REDUCE_SUM", "ARGMAX", "ARGMIN", "TOPK_V2", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR",
    "FILL", "RANK", "EMBEDDING_LOOKUP", "HASHTABLE_LOOKUP"
})


def test_corpus_shape_models_pass():
    if not os.path.isdir(CORPUS):
        pytest.skip("external corpus not present")
    paths = corpus_files_using(FAMILY_OPS, pure=True)
    assert len(paths) >= 180
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= 1300


@pytest.mark.parametrize("directory", SPEC_DIRS)
def test_project_specs_pass(directory: str):
    paths = sorted(glob.glob(os.path.join(ROOT, "specs", directory, "*.yaml")))
    assert paths, f"specs/{directory} has no specs"
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= len(paths)


# --------------------------------------------------------------------------- helpers


def _operand(type_: int, dims: tuple[int, ...] = (), scale: float = 0.0, zero_point: int = 0) -> Operand:
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=0, scale=scale, zero_point=zero_point,
                   lifetime=OperandLifeTime.TEMPORARY_VARIABLE)


def _ctx(name: str, inputs: list[Tensor | None], outputs: list[Operand]) -> OpContext:
    return OpContext(name, inputs, outputs)


def _tensor(values, type_: int, dims=None, scale: float = 0.0, zero_point: int = 0) -> Tensor:
    array = np.asarray(values, dtype=NUMPY_DTYPE[T(type_)])
    return Tensor(array.reshape(dims) if dims is not None else array, type_, scale, zero_point)


def _i32(values, dims=None) -> Tensor:
    return _tensor(values, T.TENSOR_INT32, dims)


def _scalar(value, type_: int = T.INT32) -> Tensor:
    return Tensor(np.array(value, dtype=NUMPY_DTYPE[T(type_)]), type_)


# --------------------------------------------------------------------------- CONCATENATION


def test_concat_requantizes_like_tflite_float_path():
    # in scale 0.5 zp 10 -> out scale 0.25 zp 0: s = 2, b = -20; q=11 -> 2; q=12 -> 4; q=13 -> 6.
    # in2 scale 0.75 zp 0 -> s = 3: q=1 -> 3, q=86 -> 258 -> clamped 255.
    a = _tensor([11, 12, 13], T.TENSOR_QUANT8_ASYMM, (1, 3), 0.5, 10)
    b = _tensor([1, 86], T.TENSOR_QUANT8_ASYMM, (1, 2), 0.75, 0)
    out = reshape.concatenation(_ctx("CONCATENATION", [a, b, _scalar(1)],
                                     [_operand(T.TENSOR_QUANT8_ASYMM, (1, 5), 0.25, 0)]))[0]
    assert out.tolist() == [[2, 4, 6, 3, 255]]


def test_concat_rounds_half_away_and_signed_twin_agrees():
    # scale ratio 0.5: q - zp = 1 -> 0.5 -> 1 (half away), 3 -> 1.5 -> 2, -1 -> -0.5 -> -1.
    a = _tensor([129, 131, 127], T.TENSOR_QUANT8_ASYMM, (3,), 0.5, 128)
    unsigned = reshape.concatenation(_ctx("CONCATENATION", [a, a, _scalar(0)],
                                          [_operand(T.TENSOR_QUANT8_ASYMM, (6,), 1.0, 128)]))[0]
    assert unsigned.tolist() == [129, 130, 127] * 2
    s = _tensor([1, 3, -1], T.TENSOR_QUANT8_ASYMM_SIGNED, (3,), 0.5, 0)
    signed = reshape.concatenation(_ctx("CONCATENATION", [s, s, _scalar(0)],
                                        [_operand(T.TENSOR_QUANT8_ASYMM_SIGNED, (6,), 1.0, 0)]))[0]
    assert (signed.astype(int) + 128).tolist() == unsigned.tolist()


def test_concat_rejects_negative_axis():
    x = _tensor([1.0, 2.0], T.TENSOR_FLOAT32, (1, 2))
    with pytest.raises(DriverError):
        reshape.concatenation(_ctx("CONCATENATION", [x, x, _scalar(-1)], [_operand(T.TENSOR_FLOAT32)]))


# --------------------------------------------------------------------------- reshape family


def test_reshape_stretch_and_invalid_targets():
    x = _tensor(np.arange(6), T.TENSOR_FLOAT32, (2, 3))
    out = reshape.reshape(_ctx("RESHAPE", [x, _i32([3, -1])], [_operand(T.TENSOR_FLOAT32)]))[0]
    assert out.shape == (3, 2)
    for bad in ([-1, -1], [4, -1], [5]):
        with pytest.raises(DriverError):
            reshape.reshape(_ctx("RESHAPE", [x, _i32(bad)], [_operand(T.TENSOR_FLOAT32)]))


def test_squeeze_everything_reports_shape_one():
    x = _tensor([7.0], T.TENSOR_FLOAT32, (1, 1, 1))
    out = reshape.squeeze(_ctx("SQUEEZE", [x, None], [_operand(T.TENSOR_FLOAT32)]))[0]
    assert out.shape == (1,)
    with pytest.raises(DriverError):
        reshape.squeeze(_ctx("SQUEEZE", [_tensor(np.zeros(2), T.TENSOR_FLOAT32, (2, 1)), _i32([0])],
                             [_operand(T.TENSOR_FLOAT32)]))


def test_split_checks_output_count():
    x = _tensor(np.arange(6), T.TENSOR_INT32, (2, 3))
    parts = reshape.split(_ctx("SPLIT", [x, _scalar(-1), _scalar(3)], [_operand(T.TENSOR_INT32)] * 3))
    assert [p.tolist() for p in parts] == [[[0], [3]], [[1], [4]], [[2], [5]]]
    with pytest.raises(DriverError):
        reshape.split(_ctx("SPLIT", [x, _scalar(1), _scalar(3)], [_operand(T.TENSOR_INT32)] * 2))


def test_fill_and_rank():
    out = reshape.fill(_ctx("FILL", [_i32([2, 1]), _scalar(1.5, T.FLOAT16)], [_operand(T.TENSOR_FLOAT16)]))[0]
    assert out.dtype == np.float16 and out.tolist() == [[1.5], [1.5]]
    rank = reshape.rank(_ctx("RANK", [_tensor([True], T.TENSOR_BOOL8, (1, 1, 1))], [_operand(T.INT32)]))[0]
    assert rank.shape == () and int(rank) == 3


# --------------------------------------------------------------------------- slicing


def test_pad_quant_uses_zero_point_and_pad_v2_value():
    x = _tensor([5], T.TENSOR_QUANT8_ASYMM, (1,), 0.5, 3)
    pads = _i32([1, 1], (1, 2))
    out_op = _operand(T.TENSOR_QUANT8_ASYMM, (3,), 0.5, 3)
    assert slicing.pad(_ctx("PAD", [x, pads], [out_op]))[0].tolist() == [3, 5, 3]
    assert slicing.pad_v2(_ctx("PAD_V2", [x, pads, _scalar(9)], [out_op]))[0].tolist() == [9, 5, 9]


def _strided(data: Tensor, begin, end, strides, masks=(0, 0, 0)) -> np.ndarray:
    inputs = [data, _i32(begin), _i32(end), _i32(strides), *(_scalar(m) for m in masks)]
    return slicing.strided_slice(_ctx("STRIDED_SLICE", inputs, [_operand(data.type)]))[0]


def test_strided_slice_masks_negative_strides_and_shrink():
    x = _tensor(np.arange(1, 7), T.TENSOR_FLOAT32, (2, 3))
    assert _strided(x, [1, -1], [2, 0], [1, -1], (1, 2, 0)).tolist() == [[3, 2, 1], [6, 5, 4]]
    assert _strided(x, [1, 0], [2, 3], [1, 2], (0, 0, 1)).tolist() == [4, 6]
    assert _strided(x, [-1, -1], [2, 3], [1, 1], (0, 0, 3)).tolist() == [6]  # rank 0 -> [1]


@pytest.mark.parametrize(("begin", "end", "strides"), [([0, 0], [2, 3], [1, 1]), ([1, 0], [0, 3], [-1, 1])])
def test_strided_slice_invalid_shrink_fails(begin, end, strides):
    # Android: a shrunk axis must select exactly one element with a positive stride.
    x = _tensor(np.arange(6), T.TENSOR_FLOAT32, (2, 3))
    with pytest.raises(DriverError):
        _strided(x, begin, end, strides, (0, 0, 1))


def test_gather_negative_axis_and_range():
    x = _tensor(np.arange(6), T.TENSOR_INT32, (2, 3))
    out = slicing.gather(_ctx("GATHER", [x, _scalar(-1), _i32([[2, 0]])], [_operand(T.TENSOR_INT32)]))[0]
    assert out.tolist() == [[[2, 0]], [[5, 3]]]
    with pytest.raises(DriverError):
        slicing.gather(_ctx("GATHER", [x, _scalar(0), _i32([2])], [_operand(T.TENSOR_INT32)]))


# --------------------------------------------------------------------------- space


def test_depth_to_space_nchw_matches_nhwc():
    nhwc = np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4)
    ref = space.depth_to_space(_ctx("DEPTH_TO_SPACE", [_tensor(nhwc, T.TENSOR_FLOAT32), _scalar(2)],
                                    [_operand(T.TENSOR_FLOAT32)]))[0]
    assert ref[0, :, :, 0].tolist() == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
    nchw_in = _tensor(nhwc.transpose(0, 3, 1, 2), T.TENSOR_FLOAT32)
    nchw = space.depth_to_space(_ctx("DEPTH_TO_SPACE", [nchw_in, _scalar(2), _scalar(True, T.BOOL)],
                                     [_operand(T.TENSOR_FLOAT32)]))[0]
    assert np.array_equal(nchw, ref.transpose(0, 3, 1, 2))


def test_space_to_batch_pads_with_zero_point():
    x = _tensor([1, 2], T.TENSOR_QUANT8_ASYMM, (1, 1, 2, 1), 1.0, 7)
    inputs = [x, _i32([1, 2]), _i32([0, 1, 0, 0], (2, 2))]
    out = space.space_to_batch_nd(_ctx("SPACE_TO_BATCH_ND", inputs,
                                       [_operand(T.TENSOR_QUANT8_ASYMM, (), 1.0, 7)]))[0]
    assert out.reshape(-1).tolist() == [1, 7, 2, 7]


# --------------------------------------------------------------------------- reduce


def test_mean_quantized_truncates_toward_zero():
    # Android: int32 sum of stored values / count, C++ truncation; quantization ignored.
    u = _tensor([1, 2, 2], T.TENSOR_QUANT8_ASYMM, (3,), 0.5, 0)  # 5 / 3 = 1.67 -> 1
    out = reduce.mean(_ctx("MEAN", [u, _i32([0]), _scalar(0)], [_operand(T.TENSOR_QUANT8_ASYMM)]))[0]
    assert out.tolist() == [1]
    s = _tensor([-1, -2, -2], T.TENSOR_QUANT8_ASYMM_SIGNED, (3,), 0.5, 0)  # -5 / 3 = -1.67 -> -1
    out = reduce.mean(_ctx("MEAN", [s, _i32([-1, 0]), _scalar(1)], [_operand(T.TENSOR_QUANT8_ASYMM_SIGNED)]))[0]
    assert out.tolist() == [-1]


def test_reduce_identities_and_duplicate_axes():
    x = _tensor(np.zeros((2, 0)), T.TENSOR_FLOAT32)
    out = reduce.reduce_max(_ctx("REDUCE_MAX", [x, _i32([1, -1]), _scalar(False, T.BOOL)],
                                 [_operand(T.TENSOR_FLOAT32)]))[0]
    assert out.tolist() == [np.finfo(np.float32).min] * 2
    b = _tensor([[True, False], [True, True]], T.TENSOR_BOOL8)
    out = reduce.reduce_all(_ctx("REDUCE_ALL", [b, _i32([1]), _scalar(True, T.BOOL)],
                                 [_operand(T.TENSOR_BOOL8)]))[0]
    assert out.tolist() == [[False], [True]]


def test_argmax_first_index_and_topk_ties_larger_index_first():
    x = _tensor([3, 1, 3, 2], T.TENSOR_INT32, (4,))
    arg = reduce.argmax(_ctx("ARGMAX", [x, _scalar(0)], [_operand(T.TENSOR_INT32)]))[0]
    assert arg.tolist() == [0]
    values, indices = reduce.topk_v2(_ctx("TOPK_V2", [x, _scalar(3)],
                                          [_operand(T.TENSOR_INT32), _operand(T.TENSOR_INT32)]))
    assert values.tolist() == [3, 3, 2] and indices.tolist() == [2, 0, 3]


# --------------------------------------------------------------------------- resize


def _resize(fn, data: Tensor, size: tuple, flags: tuple = ()) -> np.ndarray:
    width, height = size
    scalar_type = T.INT32 if isinstance(width, int) else T.FLOAT32
    inputs = [data, _scalar(width, scalar_type), _scalar(height, scalar_type), *(_scalar(f, T.BOOL) for f in flags)]
    return fn(_ctx("RESIZE", inputs, [_operand(data.type, (), data.scale, data.zero_point)]))[0]


def test_resize_bilinear_quant_rounds_to_nearest():
    # 1x2 -> 1x4: x scale 0.5, columns 0, 0.5, 1, 1.5(clamped): 10, 10.5 -> 11 (trunc(v + 0.5)), 11, 11.
    x = _tensor([10, 11], T.TENSOR_QUANT8_ASYMM, (1, 1, 2, 1), 0.5, 0)
    assert _resize(resize.resize_bilinear, x, (4, 1)).reshape(-1).tolist() == [10, 11, 11, 11]


def test_resize_bilinear_align_corners_and_half_pixel():
    x = _tensor([0.0, 4.0], T.TENSOR_FLOAT32, (1, 1, 2, 1))
    # align corners: scale (2-1)/(3-1) = 0.5 -> 0, 2, 4
    assert _resize(resize.resize_bilinear, x, (3, 1), (False, True, False)).reshape(-1).tolist() == [0, 2, 4]
    # half pixel: scale 2/4; sources -0.25, 0.25, 0.75, 1.25 -> 0(extrapolated weights on one pixel), 1, 3, 4
    out = _resize(resize.resize_bilinear, x, (4, 1), (False, False, True)).reshape(-1).tolist()
    assert out == [0, 1, 3, 4]
    with pytest.raises(DriverError):
        _resize(resize.resize_bilinear, x, (3, 1), (False, True, True))


def test_resize_nearest_rules_and_float_scale():
    x = _tensor([1.0, 2.0, 3.0], T.TENSOR_FLOAT32, (1, 1, 3, 1))
    # scale 1.5 -> out width floor(3 * 1.5) = 4; legacy: floor(x * 0.75) = 0, 0, 1, 2
    assert _resize(resize.resize_nearest_neighbor, x, (1.5, 1.0)).reshape(-1).tolist() == [1, 1, 2, 3]
    # align corners, width 5: scale 0.5, round(0, .5, 1, 1.5, 2) half away -> 0, 1, 1, 2, 2
    out = _resize(resize.resize_nearest_neighbor, x, (5, 1), (False, True, False)).reshape(-1).tolist()
    assert out == [1, 2, 2, 3, 3]
    # half pixel, width 2: scale 1.5, floor((x + .5) * 1.5) = 0, 2
    out = _resize(resize.resize_nearest_neighbor, x, (2, 1), (False, False, True)).reshape(-1).tolist()
    assert out == [1, 3]


# --------------------------------------------------------------------------- lookup


def test_hashtable_lookup_misses_give_zero_rows():
    keys = _i32([-3, 5, 9])
    values = _tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], T.TENSOR_FLOAT32)
    out, hits = lookup.hashtable_lookup(_ctx("HASHTABLE_LOOKUP", [_i32([9, 4, -3]), keys, values],
                                             [_operand(T.TENSOR_FLOAT32), _operand(T.TENSOR_QUANT8_ASYMM)]))
    assert out.tolist() == [[5, 6], [0, 0], [1, 2]] and hits.tolist() == [1, 0, 1]


def test_embedding_lookup_out_of_range_fails():
    values = _tensor(np.zeros((2, 2)), T.TENSOR_FLOAT32)
    with pytest.raises(DriverError):
        lookup.embedding_lookup(_ctx("EMBEDDING_LOOKUP", [_i32([2]), values], [_operand(T.TENSOR_FLOAT32)]))
