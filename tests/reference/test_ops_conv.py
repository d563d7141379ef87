"""Conv-family operations of the reference driver (convolutions, FULLY_CONNECTED, pooling).

The corpus test runs every Android generated test that uses these operations
(with the few helper operations some of its models chain) through the
library's runner, and the project specs under specs/conv and specs/pooling
must pass.  The unit tests pin what the ±1 quantized tolerance of those
suites cannot: bit-exact requantization against the fixed-point kernel
(including its two roundings), exact float32 integer arithmetic at the
chunk bounds, the window geometry (padding, strides, dilation, phases),
Android's implicit padding rules, pooling rounding and layouts.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator

import numpy as np
import pytest

from nnvts.drivers.reference.ops import conv, fully_connected, pooling, transpose_conv
from nnvts.drivers.reference.quant import (
    activation_range_quantized,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_float,
    quantize_multiplier,
)
from nnvts.drivers.reference.tensor import OpContext, OutputSpec, Tensor
from tests.reference.corpus import corpus_files_using, run_generated
from vts.hal.enums import NUMPY_DTYPE, ErrorStatus, OperandLifeTime
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError
from vts.hal.types import Operand, SymmPerChannelQuantParams

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
SPEC_DIRS = ("conv", "pooling")
FAMILY_OPS = frozenset({
    "CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D",
    "MAX_POOL_2D", "L2_POOL_2D",
})
# Operations some corpus models chain with ours: ADD feeds the internal-input variations, BOX_WITH_NMS_LIMIT and
# ROI_ALIGN build the zero-sized inputs of the V1_2 specs, LOGISTIC ends the MobileNet gender model.
HELPER_OPS = frozenset({"ADD", "BOX_WITH_NMS_LIMIT", "ROI_ALIGN", "LOGISTIC"})
RNG_SEED = 20240601


def test_corpus_conv_models_pass():
    if not os.path.isdir(CORPUS):
        pytest.skip("external corpus not present")
    paths = corpus_files_using(FAMILY_OPS, pure=True, companions=HELPER_OPS)
    assert len(paths) >= 110
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= 2150


@pytest.mark.parametrize("directory", SPEC_DIRS)
def test_project_specs_pass(directory: str):
    paths = sorted(glob.glob(os.path.join(ROOT, "specs", directory, "*.yaml")))
    assert paths, f"specs/{directory} has no specs"
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= 4 * len(paths)


# --------------------------------------------------------------------------- helpers


def _operand(type_: int, dims: tuple[int, ...] = (), scale: float = 0.0, zero_point: int = 0) -> Operand:
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=0, scale=scale, zero_point=zero_point,
                   lifetime=OperandLifeTime.TEMPORARY_VARIABLE)


def _tensor(values, type_: int, dims=None, scale: float = 0.0, zero_point: int = 0,
            channel_quant: SymmPerChannelQuantParams | None = None) -> Tensor:
    array = np.asarray(values, dtype=NUMPY_DTYPE[T(type_)])
    return Tensor(array.reshape(dims) if dims is not None else array, type_, scale, zero_point, channel_quant)


def _scalar(value, type_: int = T.INT32) -> Tensor:
    return Tensor(np.array(value, dtype=NUMPY_DTYPE[T(type_)]), type_)


def _ints(*values: int) -> list[Tensor]:
    return [_scalar(v) for v in values]


def _naive_conv(x: np.ndarray, w: np.ndarray, pads: tuple[int, int, int, int], strides: tuple[int, int],
                dilations: tuple[int, int]) -> np.ndarray:
    """Direct NHWC convolution in float64 (or exact int64): pads (top, bottom, left, right), filter OHWI."""
    top, bottom, left, right = pads
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, hp, wp, _ = xp.shape
    o, kh, kw, _ = w.shape
    out_h = (hp - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (wp - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((n, out_h, out_w, o), dtype=np.result_type(x, w, np.float64 if x.dtype.kind == "f" else np.int64))
    for y in range(out_h):
        for x_ in range(out_w):
            for i in range(kh):
                for j in range(kw):
                    pixel = xp[:, y * strides[0] + i * dilations[0], x_ * strides[1] + j * dilations[1], :]
                    out[:, y, x_, :] += pixel @ w[:, i, j, :].T
    return out


def _reference_requantize(acc: np.ndarray, multipliers, shifts, zero_point: int, activation: int, scale: float,
                          dtype: np.dtype) -> np.ndarray:
    """The integer kernel, element by element semantics (quant.py), clamped to the activation."""
    scaled = multiply_by_quantized_multiplier(acc.astype(np.int64), multipliers, shifts) + zero_point
    low, high = activation_range_quantized(activation, scale, zero_point, dtype)
    return np.clip(scaled, low, high).astype(dtype)


# --------------------------------------------------------------------------- padding and geometry


def test_implicit_padding_follows_android():
    assert conv.implicit_padding(224, 2, 1, 3, conv.PADDING_SAME) == (0, 1)
    assert conv.implicit_padding(5, 1, 1, 3, conv.PADDING_SAME) == (1, 1)
    assert conv.implicit_padding(4, 1, 2, 3, conv.PADDING_SAME) == (2, 2)  # dilated extent 5
    assert conv.implicit_padding(7, 3, 1, 2, conv.PADDING_SAME) == (0, 1)
    assert conv.implicit_padding(4, 4, 1, 2, conv.PADDING_SAME) == (0, 0)
    assert conv.implicit_padding(9, 2, 1, 3, conv.PADDING_VALID) == (0, 0)
    with pytest.raises(DriverError):
        conv.implicit_padding(9, 2, 1, 3, 3)


def test_transpose_padding_tail_may_be_negative():
    assert transpose_conv.transpose_padding(5, 2, 3, conv.PADDING_SAME) == (1, 1)
    assert transpose_conv.transpose_padding(4, 2, 3, conv.PADDING_SAME) == (0, 1)
    assert transpose_conv.transpose_padding(7, 4, 2, conv.PADDING_SAME) == (0, -1)
    assert transpose_conv.transpose_padding(7, 4, 2, conv.PADDING_VALID) == (0, 0)


def test_output_size_matches_compute_out_size():
    assert conv.output_size("X", 224, 3, 2, 1, 0, 1) == 112
    assert conv.output_size("X", 10, 3, 1, 4, 0, 0) == 2  # dilated extent 9
    with pytest.raises(DriverError):
        conv.output_size("X", 2, 3, 1, 1, 0, 0)


# --------------------------------------------------------------------------- exact integer arithmetic


@pytest.mark.parametrize("block_bytes", [1, 1 << 30], ids=["row-blocks", "one-block"])
def test_requantize_is_bit_exact_with_the_fixed_point_kernel(monkeypatch: pytest.MonkeyPatch, block_bytes: int):
    """Ties of both roundings, per-channel and per-tensor, every activation: in one block or one row at a time."""
    monkeypatch.setattr(conv, "_REQUANTIZE_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(400):
        channels = int(rng.choice([1, 5, 64, 300]))
        per_channel = bool(rng.random() < 0.4)
        count = channels if per_channel else 1
        kind = int(rng.integers(0, 4))
        if kind == 0:
            reals = np.exp(rng.uniform(np.log(1e-6), np.log(0.9), count))
        elif kind == 1:  # exact powers of two: multiplier 2**30, where the sign rule shifts by one
            reals = np.exp2(-rng.integers(0, 12, count)).astype(float)
        elif kind == 2:  # right shifts of 1 and 2, where the double rounding matters most
            reals = rng.uniform(0.2, 0.6, count)
        else:  # left shifts
            reals = np.exp(rng.uniform(np.log(0.5), np.log(6), count))
        pairs = [quantize_multiplier(float(r)) for r in reals]
        multipliers = np.array([p[0] for p in pairs])
        shifts = np.array([p[1] for p in pairs])
        signed = bool(rng.random() < 0.5)
        type_ = T.TENSOR_QUANT8_ASYMM_SIGNED if signed else T.TENSOR_QUANT8_ASYMM
        zero_point = int(rng.integers(-128, 128)) if signed else int(rng.integers(0, 256))
        out = OutputSpec(type_, 0.05, zero_point, ())
        activation = int(rng.integers(0, 4))
        rows = int(rng.integers(1, 40))
        limit = int(min(2**24 - 1, 300 / reals.min()))
        acc = rng.integers(-limit, limit, (rows, channels))
        # accumulators on the ties of both roundings, and their neighbours
        exponents = np.maximum(-shifts, 0)
        k = rng.integers(-300, 300, (rows, channels))
        tie_second = np.round((k + 0.5) * 2.0**exponents * 2**31 / multipliers).astype(np.int64)
        tie_first = np.round((k + 0.5) * 2**31 / multipliers).astype(np.int64)
        pick = rng.random((rows, channels))
        acc = np.where(pick < 0.3, tie_second, np.where(pick < 0.5, tie_first, acc)) + rng.integers(-1, 2, acc.shape)
        acc = np.clip(acc, -(2**24) + 1, 2**24 - 1)
        bias = None if rng.random() < 0.2 else rng.integers(-3000, 3000, channels).astype(np.int32)
        expected = _reference_requantize(acc + (0 if bias is None else bias), multipliers if per_channel else
                                         int(multipliers[0]), shifts if per_channel else int(shifts[0]),
                                         zero_point, activation, 0.05, out.dtype)
        for dtype in (np.float32, np.float64):
            got = conv.requantize(acc.astype(dtype), bias, multipliers, shifts, out, activation)
            np.testing.assert_array_equal(got, expected)


def test_requantize_keeps_4d_and_non_contiguous_layouts():
    rng = np.random.default_rng(RNG_SEED + 1)
    acc = rng.integers(-5000, 5000, (2, 3, 5, 7)).astype(np.float32)
    multipliers, shifts = np.array([1518500250]), np.array([-6])
    out = OutputSpec(T.TENSOR_QUANT8_ASYMM, 0.1, 100, ())
    expected = _reference_requantize(acc, 1518500250, -6, 100, 0, 0.1, np.dtype(np.uint8))
    np.testing.assert_array_equal(conv.requantize(acc, None, multipliers, shifts, out, 0), expected)
    view = np.moveaxis(np.moveaxis(acc, 3, 1).copy(), 1, 3)  # same values, channels not innermost in memory
    np.testing.assert_array_equal(conv.requantize(view, None, multipliers, shifts, out, 0), expected)


def test_multiply_by_quantized_multiplier_float_matches_integer_kernel():
    rng = np.random.default_rng(RNG_SEED + 2)
    for _ in range(300):
        real = float(np.exp(rng.uniform(np.log(1e-7), np.log(16))))
        multiplier, shift = quantize_multiplier(real)
        limit = int(min(2**31 - 1, 2**30 / real))
        values = rng.integers(-limit, limit, 500)
        exponent = max(-shift, 0)
        ties = np.round((np.arange(-40, 40) + 0.5) * 2**exponent * 2**31 / multiplier).astype(np.int64)
        values = np.concatenate([values, ties, ties + 1, ties - 1])
        values = values[np.abs(values) < 2**31 - 1]
        expected = multiply_by_quantized_multiplier(values, multiplier, shift)
        np.testing.assert_array_equal(multiply_by_quantized_multiplier_float(values, multiplier, shift), expected)


def test_fixed_point_multiply_matches_integer_kernel_over_int32():
    rng = np.random.default_rng(RNG_SEED + 9)
    for _ in range(300):
        real = float(np.exp(rng.uniform(np.log(1e-9), np.log(8))))
        if rng.random() < 0.2:
            real = float(2.0 ** -int(rng.integers(0, 30)))  # multiplier 2**30
        multiplier, shift = quantize_multiplier(real)
        limit = int(min(2**31 - 1, 2**30 / real))
        exponent = max(-shift, 0)
        ties = np.round((np.arange(-30, 30) + 0.5) * 2.0**exponent * 2**31 / multiplier).astype(np.int64)
        values = np.concatenate([rng.integers(-limit, limit, 200), ties, ties + 1, ties - 1])
        values = values[np.abs(values) < limit]
        expected = multiply_by_quantized_multiplier(values, multiplier, shift)
        per_tensor = conv.fixed_point_multiply(values, np.int64(multiplier), np.int64(shift))
        per_element = conv.fixed_point_multiply(values, np.full(values.size, multiplier), np.full(values.size, shift))
        np.testing.assert_array_equal(per_tensor, expected)
        np.testing.assert_array_equal(per_element, expected)


def test_exact_matmul_is_exact_past_float32_precision():
    rng = np.random.default_rng(RNG_SEED + 3)
    a = rng.integers(-255, 256, (17, 1500))
    b = rng.integers(-255, 256, (9, 1500))
    a[0] = 255
    b[0] = 255  # one sum of 1500 * 65025, far beyond 2**24
    got = conv.exact_matmul(a.astype(np.float32), b.astype(np.float32), 255 * 255)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.astype(np.int64), a @ b.T)
    small = conv.exact_matmul(a[:, :200].astype(np.float32), b[:, :200].astype(np.float32), 255 * 255)
    assert small.dtype == np.float32  # one chunk fits
    np.testing.assert_array_equal(small.astype(np.int64), a[:, :200] @ b[:, :200].T)


# --------------------------------------------------------------------------- window kernels


def test_im2col_convolution_matches_direct_convolution():
    rng = np.random.default_rng(RNG_SEED + 4)
    for _ in range(60):
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        strides = tuple(int(v) for v in rng.integers(1, 4, 2))
        dilations = tuple(int(v) for v in rng.integers(1, 3, 2))
        pads = tuple(int(v) for v in rng.integers(0, 3, 4))
        h, w = (int(v) for v in rng.integers(4, 9, 2))
        x = rng.integers(-8, 8, (2, h, w, 3)).astype(np.float32)
        f = rng.integers(-8, 8, (4, kh, kw, 3)).astype(np.float32)
        window = conv.Window(*pads, *strides, *dilations)
        try:
            out_hw = conv.output_hw("CONV_2D", (h, w), (kh, kw), window)
        except DriverError:
            continue
        got = conv.conv_accumulate(conv.padded_float32(x, window), f, window, out_hw, 64)
        np.testing.assert_array_equal(got, _naive_conv(x, f, pads, strides, dilations))


DepthwiseCase = tuple[conv.Window, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, int], tuple[int, int],
                      tuple[int, int]]


def _depthwise_case(rng: np.random.Generator) -> DepthwiseCase | None:
    """A random depthwise geometry (odd sizes, strides, dilations, paddings), or None when the window does not fit."""
    kh, kw = (int(v) for v in rng.integers(1, 5, 2))
    strides = tuple(int(v) for v in rng.integers(1, 4, 2))
    dilations = tuple(int(v) for v in rng.integers(1, 4, 2))
    pads = tuple(int(v) for v in rng.integers(0, 3, 4))
    h, w = (int(v) for v in rng.integers(1, 12, 2))
    window = conv.Window(*pads, *strides, *dilations)
    try:
        out_hw = conv.output_hw("DEPTHWISE_CONV_2D", (h, w), (kh, kw), window)
    except DriverError:
        return None
    return window, pads, strides, dilations, (h, w), (kh, kw), out_hw


def _depthwise_cases(rng: np.random.Generator, tries: int) -> Iterator[DepthwiseCase]:
    """The geometries among ``tries`` random ones whose window fits (drawn lazily: the caller's draws interleave)."""
    for _ in range(tries):
        case = _depthwise_case(rng)
        if case is not None:
            yield case


def _block_diagonal(f: np.ndarray) -> np.ndarray:
    """A [kh, kw, C] depthwise filter as the equivalent full [C, kh, kw, C] filter."""
    kh, kw, channels = f.shape
    full = np.zeros((channels, kh, kw, channels), dtype=f.dtype)
    for c in range(channels):
        full[c, :, :, c] = f[:, :, c]
    return full


@pytest.mark.parametrize("strip_bytes", [1, 512, 1 << 20], ids=["row-blocks", "small-blocks", "one-block"])
def test_depthwise_blocks_match_direct_convolution(monkeypatch: pytest.MonkeyPatch, strip_bytes: int):
    """Exact integer sums with a zero point, whatever the strip size: one output row per block, a few, or all."""
    monkeypatch.setattr(conv, "_STRIP_BYTES", strip_bytes)
    rng = np.random.default_rng(RNG_SEED + 5)
    checked = 0
    for window, pads, strides, dilations, (h, w), (kh, kw), out_hw in _depthwise_cases(rng, 150):
        x = rng.integers(0, 60, (2, h, w, 3)).astype(np.uint8)
        f = rng.integers(-20, 20, (kh, kw, 3)).astype(np.float32)
        geometry = conv.DepthwiseGeometry.of(w, (kh, kw), window, out_hw)
        got = conv.depthwise_accumulate(x, f, geometry, 7, np.float32)
        expected = _naive_conv(x.astype(np.int64) - 7, _block_diagonal(f).astype(np.int64), pads, strides, dilations)
        np.testing.assert_array_equal(got.astype(np.int64), expected)
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("strip_bytes", [1, 1 << 20], ids=["row-blocks", "one-block"])
def test_float_depthwise_finishes_every_block_with_bias_and_activation(monkeypatch: pytest.MonkeyPatch,
                                                                       strip_bytes: int):
    """Float sums plus bias, clamped to RELU1, per block, against a direct float64 convolution."""
    monkeypatch.setattr(conv, "_STRIP_BYTES", strip_bytes)
    rng = np.random.default_rng(RNG_SEED + 8)
    checked = 0
    for window, pads, strides, dilations, (h, w), (kh, kw), out_hw in _depthwise_cases(rng, 80):
        channels = int(rng.integers(1, 6))
        x = rng.standard_normal((2, h, w, channels)).astype(np.float32)
        f = rng.standard_normal((kh, kw, channels)).astype(np.float32)
        bias = rng.standard_normal(channels).astype(np.float32)
        geometry = conv.DepthwiseGeometry.of(w, (kh, kw), window, out_hw)
        finish = conv.FloatRowFinish.of(bias, 2, out_hw[1])  # RELU1: [-1, 1]
        got = conv.depthwise_accumulate(x, f, geometry, 0, np.float32, finish)
        direct = _naive_conv(x.astype(np.float64), _block_diagonal(f).astype(np.float64), pads, strides, dilations)
        np.testing.assert_allclose(got, np.clip(direct + bias, -1.0, 1.0), rtol=1e-5, atol=1e-5)
        checked += 1
    assert checked > 25


# --------------------------------------------------------------------------- operations


def _conv_ctx(name: str, inputs: list[Tensor], out: Operand) -> OpContext:
    return OpContext(name, inputs, [out])


def test_quantized_conv_is_exact_with_per_channel_filters_and_padding():
    """CONV_2D QA8/QAS8 with per-channel filters equals the integer reference (padding reads the zero point)."""
    rng = np.random.default_rng(RNG_SEED + 6)
    x = rng.integers(0, 256, (1, 6, 5, 3))
    f = rng.integers(-127, 128, (4, 3, 3, 3))
    scales = [0.02, 0.013, 0.05, 0.0071]
    bias = rng.integers(-5000, 5000, 4)
    in_scale, out_scale, out_zp = 0.1, 0.9, 37
    acc = _naive_conv(x - 120, f, (1, 1, 1, 1), (2, 1), (1, 1)) + bias
    pairs = [quantize_multiplier(float(np.float32(in_scale) * np.float32(s)) / float(np.float32(out_scale)))
             for s in scales]
    expected = _reference_requantize(acc, np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]),
                                     out_zp, 1, out_scale, np.dtype(np.uint8))
    per_channel = SymmPerChannelQuantParams(scales=scales, channel_dim=0)
    inputs = [
        _tensor(x, T.TENSOR_QUANT8_ASYMM, None, in_scale, 120),
        _tensor(f, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, None, 0.0, 0, per_channel),
        _tensor(bias, T.TENSOR_INT32),
        *_ints(1, 1, 1, 1, 1, 2, 1),  # pads left/right/top/bottom, stride w 1 / h 2, ReLU
    ]
    got = conv.conv_2d(_conv_ctx("CONV_2D", inputs, _operand(T.TENSOR_QUANT8_ASYMM, (), out_scale, out_zp)))[0]
    np.testing.assert_array_equal(got, expected)
    signed = [_tensor(x - 128, T.TENSOR_QUANT8_ASYMM_SIGNED, None, in_scale, -8), *inputs[1:]]
    got_signed = conv.conv_2d(_conv_ctx("CONV_2D", signed,
                                        _operand(T.TENSOR_QUANT8_ASYMM_SIGNED, (), out_scale, out_zp - 128)))[0]
    np.testing.assert_array_equal(got_signed.astype(np.int64) + 128, expected)


def test_conv_nchw_equals_nhwc():
    rng = np.random.default_rng(RNG_SEED + 7)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    f = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    common = [_tensor(f, T.TENSOR_FLOAT32), _tensor(b, T.TENSOR_FLOAT32), *_ints(1, 2, 2, 0)]  # SAME, 2, 2, none
    nhwc = conv.conv_2d(_conv_ctx("CONV_2D", [_tensor(x, T.TENSOR_FLOAT32), *common, _scalar(False, T.BOOL)],
                                  _operand(T.TENSOR_FLOAT32)))[0]
    nchw = conv.conv_2d(_conv_ctx("CONV_2D", [_tensor(x.transpose(0, 3, 1, 2), T.TENSOR_FLOAT32), *common,
                                              _scalar(True, T.BOOL)], _operand(T.TENSOR_FLOAT32)))[0]
    assert nchw.shape == (2, 4, 3, 3)
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nhwc, _naive_conv(x, f, (1, 1, 0, 1), (2, 2), (1, 1)) + b, rtol=1e-5, atol=1e-5)


def test_conv_float16_computes_in_float32_and_rounds_once():
    x = _tensor([2049.0, 1.0], T.TENSOR_FLOAT16, (1, 1, 2, 1))  # 2049 is not a half: stored as 2048
    f = _tensor([1.0], T.TENSOR_FLOAT16, (1, 1, 1, 1))
    b = _tensor([0.75], T.TENSOR_FLOAT16, (1,))
    out = conv.conv_2d(_conv_ctx("CONV_2D", [x, f, b, *_ints(2, 1, 1, 0)], _operand(T.TENSOR_FLOAT16)))[0]
    assert out.dtype == np.float16
    assert out.reshape(-1).tolist() == [2048.0, 1.75]


def test_depthwise_rejects_filters_whose_first_dimension_is_not_one():
    x = _tensor(np.zeros((1, 3, 3, 2)), T.TENSOR_FLOAT32)
    f = _tensor(np.zeros((2, 2, 2, 4)), T.TENSOR_FLOAT32)
    b = _tensor(np.zeros(4), T.TENSOR_FLOAT32)
    inputs = [x, f, b, *_ints(0, 0, 0, 0, 1, 1, 2, 0), _scalar(False, T.BOOL)]
    with pytest.raises(DriverError) as error:
        conv.depthwise_conv_2d(_conv_ctx("DEPTHWISE_CONV_2D", inputs, _operand(T.TENSOR_FLOAT32)))
    assert error.value.status == ErrorStatus.GENERAL_FAILURE


def test_depthwise_multiplier_maps_output_channels_to_inputs():
    # out channel c * 2 + m reads input channel c: ones filter, input channels 1 and 10.
    x = _tensor([1.0, 10.0], T.TENSOR_FLOAT32, (1, 1, 1, 2))
    f = _tensor([1.0, 2.0, 3.0, 4.0], T.TENSOR_FLOAT32, (1, 1, 1, 4))
    b = _tensor(np.zeros(4), T.TENSOR_FLOAT32)
    out = conv.depthwise_conv_2d(_conv_ctx("DEPTHWISE_CONV_2D", [x, f, b, *_ints(2, 1, 1, 2, 0)],
                                           _operand(T.TENSOR_FLOAT32)))[0]
    assert out.reshape(-1).tolist() == [1.0, 2.0, 30.0, 40.0]


def test_grouped_conv_uses_each_groups_channels():
    x = _tensor([1.0, 2.0, 3.0, 4.0], T.TENSOR_FLOAT32, (1, 1, 1, 4))
    f = _tensor([1.0, 1.0, 1.0, -1.0], T.TENSOR_FLOAT32, (2, 1, 1, 2))
    b = _tensor([0.0, 0.0], T.TENSOR_FLOAT32)
    inputs = [x, f, b, *_ints(2, 1, 1, 2, 0), _scalar(False, T.BOOL)]  # VALID, strides 1, 2 groups, none
    out = conv.grouped_conv_2d(_conv_ctx("GROUPED_CONV_2D", inputs, _operand(T.TENSOR_FLOAT32)))[0]
    assert out.reshape(-1).tolist() == [3.0, -1.0]


def test_transpose_conv_zero_batch_and_shape():
    x = _tensor(np.zeros((0, 2, 2, 1)), T.TENSOR_FLOAT32)
    f = _tensor(np.ones((3, 2, 2, 1)), T.TENSOR_FLOAT32)
    b = _tensor(np.zeros(3), T.TENSOR_FLOAT32)
    inputs = [x, f, b, *_ints(0, 0, 0, 0, 2, 2, 0), _scalar(False, T.BOOL)]
    out = transpose_conv.transpose_conv_2d(_conv_ctx("TRANSPOSE_CONV_2D", inputs, _operand(T.TENSOR_FLOAT32)))[0]
    assert out.shape == (0, 4, 4, 3)


def test_fully_connected_rejects_inputs_that_are_not_whole_rows():
    x = _tensor(np.zeros(5), T.TENSOR_FLOAT32, (1, 5))
    w = _tensor(np.zeros((2, 3)), T.TENSOR_FLOAT32)
    b = _tensor(np.zeros(2), T.TENSOR_FLOAT32)
    with pytest.raises(DriverError):
        fully_connected.fully_connected(_conv_ctx("FULLY_CONNECTED", [x, w, b, _scalar(0)],
                                                  _operand(T.TENSOR_FLOAT32)))


def test_fully_connected_quant_matches_integer_reference():
    rng = np.random.default_rng(RNG_SEED + 8)
    x = rng.integers(0, 256, (3, 700))
    w = rng.integers(0, 256, (5, 700))
    bias = rng.integers(-20000, 20000, 5)
    multiplier, shift = quantize_multiplier(float(np.float32(0.5) * np.float32(0.25)) / float(np.float32(2000.0)))
    acc = (x - 3) @ (w - 250).T + bias
    expected = _reference_requantize(acc, multiplier, shift, 128, 0, 2000.0, np.dtype(np.uint8))
    inputs = [_tensor(x, T.TENSOR_QUANT8_ASYMM, None, 0.5, 3), _tensor(w, T.TENSOR_QUANT8_ASYMM, None, 0.25, 250),
              _tensor(bias, T.TENSOR_INT32, None, 0.125), _scalar(0)]
    got = fully_connected.fully_connected(_conv_ctx("FULLY_CONNECTED", inputs,
                                                    _operand(T.TENSOR_QUANT8_ASYMM, (), 2000.0, 128)))[0]
    np.testing.assert_array_equal(got, expected)


def test_conv_rejects_a_bias_scale_that_is_not_input_times_filter():
    x = _tensor([[[[1]]]], T.TENSOR_QUANT8_ASYMM, None, 0.5, 0)
    f = _tensor([[[[1]]]], T.TENSOR_QUANT8_ASYMM, None, 0.5, 0)
    b = _tensor([0], T.TENSOR_INT32, None, 0.5)
    with pytest.raises(DriverError):
        conv.conv_2d(_conv_ctx("CONV_2D", [x, f, b, *_ints(2, 1, 1, 0)], _operand(T.TENSOR_QUANT8_ASYMM, (), 1.0)))


def test_filter_cache_is_per_array_and_read_only():
    first = _tensor(np.full((8, 32, 32, 1), 200), T.TENSOR_QUANT8_ASYMM, None, 0.5, 100)
    converted = conv.filter_values(first)
    assert not converted.flags.writeable and float(converted.max()) == 100.0
    assert conv.filter_values(first) is converted
    second = _tensor(np.full((8, 32, 32, 1), 50), T.TENSOR_QUANT8_ASYMM, None, 0.5, 100)
    assert float(conv.filter_values(second).max()) == -50.0


# --------------------------------------------------------------------------- pooling


def _pool(op, values, type_, scale=0.0, zero_point=0, params=(1, 1, 1, 2, 2, 0)) -> np.ndarray:
    """SAME padding, strides 1, 2x2 filter, no activation unless ``params`` says otherwise."""
    x = _tensor(values, type_, (1, 3, 3, 1), scale, zero_point)
    ctx = OpContext(op.__name__.upper(), [x, *_ints(*params)], [_operand(type_, (), scale, zero_point)])
    return op(ctx)[0].reshape(-1)


def test_average_pool_rounds_like_tflite():
    unsigned = _pool(pooling.average_pool_2d, range(1, 10), T.TENSOR_QUANT8_ASYMM, 1.0, 0)
    assert unsigned.tolist() == [3, 4, 5, 6, 7, 8, 8, 9, 9]  # (sum + count / 2) / count
    signed = _pool(pooling.average_pool_2d, range(-4, 5), T.TENSOR_QUANT8_ASYMM_SIGNED, 1.0, -5)
    assert signed.tolist() == [-2, -1, -1, 1, 2, 3, 3, 4, 4]  # negative sums round half away from zero
    floats = _pool(pooling.average_pool_2d, range(1, 10), T.TENSOR_FLOAT32)
    assert floats.tolist() == [3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9]  # padding is not counted


def test_max_pool_padding_never_wins_and_l2_pool_counts_real_pixels():
    assert _pool(pooling.max_pool_2d, [-v for v in range(1, 10)], T.TENSOR_FLOAT32).tolist() == \
        [-1, -2, -3, -4, -5, -6, -7, -8, -9]
    l2 = _pool(pooling.l2_pool_2d, [3, 4, 0, 0, 0, 0, 0, 0, 0], T.TENSOR_FLOAT32)
    assert l2[0] == pytest.approx(2.5) and l2[1] == pytest.approx(np.sqrt(16 / 4))


def test_pooling_rejects_padding_as_large_as_the_filter():
    with pytest.raises(DriverError):
        _pool(pooling.max_pool_2d, range(9), T.TENSOR_FLOAT32, params=(2, 0, 0, 0, 1, 1, 2, 2, 0))


class _Geometry:
    """The three fields ``window_reduce`` reads from a ``PoolGeometry``."""

    def __init__(self, filter_hw, out_hw, window):
        self.filter_hw, self.out_hw, self.window = filter_hw, out_hw, window


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("combine", [np.add, np.maximum])
@pytest.mark.parametrize("shape, filter_hw, stride_h", [((2, 7, 7, 33), (7, 7), 1), ((1, 9, 5, 8), (3, 5), 2),
                                                        ((1, 4, 70, 3), (1, 70), 1)])
def test_full_width_pools_reduce_in_tflites_order(dtype, combine, shape, filter_hw, stride_h):
    """Windows as wide as the input (global pools) take one reduce; its result equals, bit for bit, the
    tap-by-tap loop over the same windows (rows outer, columns inner)."""
    rng = np.random.default_rng(3)
    xp = (rng.standard_normal(shape) * 1000).astype(dtype)
    o_h = (shape[1] - filter_hw[0]) // stride_h + 1
    geometry = _Geometry(filter_hw, (o_h, 1), conv.Window(0, 0, 0, 0, stride_h, 1))
    got = pooling.window_reduce(xp, geometry, combine)
    expected = None
    for i in range(filter_hw[0]):
        for j in range(filter_hw[1]):
            part = xp[:, conv.window_slice(i, stride_h, o_h), j:j + 1, :]
            expected = part.copy() if expected is None else combine(expected, part, out=expected)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_filter_cache_forgets_a_filter_when_it_dies():
    """Many distinct models, each released after use: the cache ends empty, never full of dead weights.

    Issue 23: the driver host's memory grew with the number of cases because the cache kept up to
    its limit of converted filters of models released long before.
    """
    conv._FILTER_CACHE.clear()
    live = _tensor(np.full((8, 32, 32, 1), 7), T.TENSOR_QUANT8_ASYMM, None, 0.5, 1)
    kept = conv.filter_values(live)
    for model in range(3 * conv._FILTER_CACHE_LIMIT):
        dead = _tensor(np.full((8, 32, 32, 1), model % 200), T.TENSOR_QUANT8_ASYMM, None, 0.5, 1)
        conv.filter_values(dead)
        del dead
        assert len(conv._FILTER_CACHE) <= 2
    assert len(conv._FILTER_CACHE) == 1
    assert conv.filter_values(live) is kept  # a filter still in use keeps its entry


def test_caches_stay_bounded_over_many_distinct_models():
    """The generated conv cases of the corpus, in process: no cache keeps what released models left."""
    from vts.hal import validation

    paths = corpus_files_using(("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"))
    if not paths:
        pytest.skip("no corpus (make corpus)")
    conv._FILTER_CACHE.clear()
    counts = run_generated(paths[:12])
    assert sum(counts.values()) > 0
    import gc

    gc.collect()
    assert len(conv._FILTER_CACHE) == 0  # every prepared model was released, so were their filters
    assert validation.proven_operand_keys() <= 2 * validation._PROVEN_OPERANDS_LIMIT
