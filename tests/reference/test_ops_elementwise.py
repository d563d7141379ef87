"""Elementwise-family operations of the reference driver.

The corpus test runs Android's generated tests for the activations, softmax,
normalizations, unary math, comparisons/logical/select, min/max/pow and the
quantize/dequantize/cast conversions through the library's runner (cases that
also use operations outside this family, apart from the ADD the corpus's
"all inputs as internal" variants add, are left to their own families).  The
unit tests pin the numerics that are easy to get subtly wrong: gemmlowp
fixed-point logistic/tanh/softmax, saturation at the input radius, the int16
hard-swish path, QUANTIZE rounding, CAST truncation/saturation, comparisons of
quantized inputs with different scales, and NCHW layouts.
"""

from __future__ import annotations

import glob
import math
import os

import numpy as np
import pytest

from nnvts.drivers.reference.ops import activation, comparison, normalization, quantize, softmax, unary
from nnvts.drivers.reference.tensor import OpContext, Tensor
from tests.reference.corpus import run_generated
from vts.hal.enums import OperandLifeTime, OperationType
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError
from vts.hal.types import Operand, SymmPerChannelQuantParams

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpus")
SPECS = os.path.join(os.path.dirname(__file__), "..", "..", "specs")
SPEC_DIRS = ("activation", "elementwise", "normalization")

FAMILY_OP_NAMES = ("RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "ELU", "HARD_SWISH", "PRELU", "SOFTMAX",
                   "LOG_SOFTMAX", "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "INSTANCE_NORMALIZATION",
                   "ABS", "EXP", "LOG", "NEG", "RSQRT", "SQRT", "SIN", "FLOOR", "POW", "MAXIMUM", "MINIMUM",
                   "EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "LOGICAL_AND",
                   "LOGICAL_OR", "LOGICAL_NOT", "SELECT", "QUANTIZE", "DEQUANTIZE", "CAST")
FAMILY_OPS = frozenset(int(OperationType[name]) for name in FAMILY_OP_NAMES)
CORPUS_PATTERNS = ("abs", "cast", "dequantize*", "equal", "exp", "floor*", "greater*", "instance_normalization",
                   "l2_normalization*", "less*", "local_response_norm*", "log", "log_softmax", "logical_*",
                   "logistic*", "maximum", "minimum", "neg", "not_equal", "pow", "prelu", "quantize", "relu*",
                   "rsqrt", "select_v1_2", "sin", "softmax*", "sqrt", "tanh*")


def _in_family(model) -> bool:
    types = {int(op.type) for op in model.main.operations if isinstance(op.type, int)}
    return bool(types & FAMILY_OPS) and types <= FAMILY_OPS | {int(OperationType.ADD)}


def test_corpus_elementwise_models_pass():
    if not os.path.isdir(CORPUS):
        pytest.skip("external corpus not present")
    paths = sorted({path for pattern in CORPUS_PATTERNS
                    for path in glob.glob(os.path.join(CORPUS, "*", pattern + ".json.gz"))})
    assert len(paths) >= 75
    counts = run_generated(paths, keep=_in_family)
    assert counts.get("passed", 0) >= 1300


def test_project_specs_pass():
    paths = sorted(p for d in SPEC_DIRS for p in glob.glob(os.path.join(SPECS, d, "*.yaml")))
    assert len(paths) >= 10, "elementwise specs missing"
    counts = run_generated(paths, keep=_in_family)
    assert counts.get("passed", 0) >= len(paths)
    assert counts.get("skipped", 0) == 0


# --------------------------------------------------------------------------- helpers


def _operand(type_: int, dims: tuple[int, ...] = (), scale: float = 0.0, zero_point: int = 0) -> Operand:
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=0, scale=scale, zero_point=zero_point,
                   lifetime=OperandLifeTime.TEMPORARY_VARIABLE)


def _ctx(name: str, inputs: list[Tensor | None], out_type: int, scale: float = 0.0, zero_point: int = 0) -> OpContext:
    return OpContext(name, inputs, [_operand(out_type, (), scale, zero_point)])


def _tensor(values, type_: int, scale: float = 0.0, zero_point: int = 0, dtype: str | None = None) -> Tensor:
    dtypes = {T.TENSOR_FLOAT32: "f4", T.TENSOR_FLOAT16: "f2", T.TENSOR_INT32: "i4", T.TENSOR_QUANT8_ASYMM: "u1",
              T.TENSOR_QUANT8_ASYMM_SIGNED: "i1", T.TENSOR_BOOL8: "?", T.TENSOR_QUANT8_SYMM: "i1",
              T.TENSOR_QUANT16_SYMM: "i2"}
    return Tensor(np.asarray(values, dtype=dtype or dtypes[type_]), type_, scale, zero_point)


def _scalar(value, type_: int = T.FLOAT32) -> Tensor:
    dtype = {T.FLOAT32: "f4", T.INT32: "i4", T.BOOL: "?", T.FLOAT16: "f2"}[type_]
    return Tensor(np.asarray(value, dtype=dtype), type_)


# --------------------------------------------------------------------------- activations


def test_logistic_quant8_matches_real_sigmoid_within_one_and_saturates():
    q = np.arange(256)
    x = _tensor(q, T.TENSOR_QUANT8_ASYMM, 0.1, 128)
    out = activation.logistic(_ctx("LOGISTIC", [x], T.TENSOR_QUANT8_ASYMM, 1 / 256, 0))[0]
    ideal = np.clip(np.round(256 / (1 + np.exp(-(q - 128) * 0.1))), 0, 255)
    assert np.abs(out.astype(int) - ideal).max() <= 1
    assert out[0] == 0 and out[255] == 255  # |x| >= radius saturates


def test_logistic_quant8_signed_uses_minus_128_zero_point():
    x = _tensor([-128, -1, 0, 1, 127], T.TENSOR_QUANT8_ASYMM_SIGNED, 0.05, -1)
    out = activation.logistic(_ctx("LOGISTIC", [x], T.TENSOR_QUANT8_ASYMM_SIGNED, 1 / 256, -128))[0]
    real = (np.array([-128, -1, 0, 1, 127]) + 1) * 0.05
    ideal = np.clip(np.round(256 / (1 + np.exp(-real))) - 128, -128, 127)
    assert np.abs(out.astype(int) - ideal).max() <= 1
    assert out[1] == 0  # sigmoid(0) = 0.5 = 128/256 -> -128 + 128


def test_tanh_quant8_both_signs():
    q = np.arange(0, 256, 5)
    x = _tensor(q, T.TENSOR_QUANT8_ASYMM, 0.03, 120)
    out = activation.tanh(_ctx("TANH", [x], T.TENSOR_QUANT8_ASYMM, 1 / 128, 128))[0]
    ideal = np.clip(np.round(128 * np.tanh((q - 120) * 0.03)) + 128, 0, 255)
    assert np.abs(out.astype(int) - ideal).max() <= 1
    xs = _tensor(q - 128, T.TENSOR_QUANT8_ASYMM_SIGNED, 0.03, -8)
    outs = activation.tanh(_ctx("TANH", [xs], T.TENSOR_QUANT8_ASYMM_SIGNED, 1 / 128, 0))[0]
    assert np.abs(outs.astype(int) - np.clip(ideal - 128, -128, 127)).max() <= 1


def test_fixed_output_quantization_is_enforced():
    x = _tensor([1, 2], T.TENSOR_QUANT8_ASYMM, 0.5, 0)
    with pytest.raises(DriverError):
        activation.logistic(_ctx("LOGISTIC", [x], T.TENSOR_QUANT8_ASYMM, 1 / 128, 0))
    with pytest.raises(DriverError):
        activation.tanh(_ctx("TANH", [x], T.TENSOR_QUANT8_ASYMM, 1 / 128, 0))


def test_relu_quantized_clamps_in_the_input_domain():
    x = _tensor([0, 10, 20, 30, 250], T.TENSOR_QUANT8_ASYMM, 0.5, 20)
    assert activation.relu6(_ctx("RELU6", [x], T.TENSOR_QUANT8_ASYMM, 0.5, 20))[0].tolist() == [20, 20, 20, 30, 32]
    assert activation.relu1(_ctx("RELU1", [x], T.TENSOR_QUANT8_ASYMM, 0.5, 20))[0].tolist() == [18, 18, 20, 22, 22]


def test_hard_swish_quant_close_to_real_function():
    q = np.arange(256)
    x = _tensor(q, T.TENSOR_QUANT8_ASYMM, 0.05, 128)
    out = activation.hard_swish(_ctx("HARD_SWISH", [x], T.TENSOR_QUANT8_ASYMM, 0.03, 40))[0]
    real = (q - 128) * 0.05
    ideal = np.clip(np.round(real * np.clip(real + 3, 0, 6) / 6 / 0.03) + 40, 0, 255)
    assert np.abs(out.astype(int) - ideal).max() <= 1


def test_hard_swish_float16_and_elu():
    x = _tensor([-4, -1.5, 0, 1, 4], T.TENSOR_FLOAT16)
    out = activation.hard_swish(_ctx("HARD_SWISH", [x], T.TENSOR_FLOAT16))[0]
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, [0, -0.375, 0, 2 / 3, 4], atol=1e-3)
    elu = activation.elu(_ctx("ELU", [_tensor([-1, 2], T.TENSOR_FLOAT32), _scalar(0.5)], T.TENSOR_FLOAT32))[0]
    np.testing.assert_allclose(elu, [0.5 * (math.exp(-1) - 1), 2], rtol=1e-6)


def test_prelu_quant_broadcasts_alpha():
    x = _tensor([[100, 140], [60, 128]], T.TENSOR_QUANT8_ASYMM, 0.25, 128)
    alpha = _tensor([[138, 118]], T.TENSOR_QUANT8_ASYMM, 0.05, 128)  # slopes 0.5, -0.5
    out = activation.prelu(_ctx("PRELU", [x, alpha], T.TENSOR_QUANT8_ASYMM, 0.5, 120))[0]
    # reals: -7 -> -3.5, 3 -> 3, -17 -> -8.5, 0 -> 0 (-0.5 * 0); /0.5 + 120, half away from zero
    assert out.tolist() == [[113, 126], [103, 120]]


# --------------------------------------------------------------------------- softmax


def test_softmax_quant_matches_float_within_one_on_any_axis():
    rng = np.random.default_rng(7)
    q = rng.integers(0, 256, size=(2, 5, 3)).astype(np.uint8)
    for axis in (0, 1, -1):
        x = Tensor(q, T.TENSOR_QUANT8_ASYMM, 0.1, 128)
        out = softmax.softmax(_ctx("SOFTMAX", [x, _scalar(1.5), _scalar(axis, T.INT32)], T.TENSOR_QUANT8_ASYMM,
                                   1 / 256, 0))[0]
        real = (q.astype(float) - 128) * 0.1 * 1.5
        e = np.exp(real - real.max(axis=axis, keepdims=True))
        ideal = np.clip(np.round(256 * e / e.sum(axis=axis, keepdims=True)), 0, 255)
        assert np.abs(out.astype(int) - ideal).max() <= 1


def test_softmax_rejects_non_positive_beta_and_bad_axis():
    x = _tensor([[1.0, 2.0]], T.TENSOR_FLOAT32)
    with pytest.raises(DriverError):
        softmax.softmax(_ctx("SOFTMAX", [x, _scalar(0.0)], T.TENSOR_FLOAT32))
    with pytest.raises(DriverError):
        softmax.softmax(_ctx("SOFTMAX", [x, _scalar(1.0), _scalar(2, T.INT32)], T.TENSOR_FLOAT32))


def test_log_softmax_float16():
    x = _tensor([[0.0, 1.0, 2.0]], T.TENSOR_FLOAT16)
    out = softmax.log_softmax(_ctx("LOG_SOFTMAX", [x, _scalar(1.0, T.FLOAT16), _scalar(-1, T.INT32)],
                                   T.TENSOR_FLOAT16))[0]
    expected = np.array([0.0, 1.0, 2.0]) - math.log(1 + math.e + math.e ** 2)
    np.testing.assert_allclose(out[0].astype(float), expected, atol=2e-3)


# --------------------------------------------------------------------------- normalizations


def test_l2_normalization_quant_both_signednesses():
    x = _tensor([[131, 132, 128]], T.TENSOR_QUANT8_ASYMM, 0.1, 128)  # 3, 4, 0 -> 0.6, 0.8, 0
    out = normalization.l2_normalization(_ctx("L2_NORMALIZATION", [x], T.TENSOR_QUANT8_ASYMM, 1 / 128, 128))[0]
    assert np.abs(out.astype(int) - [205, 230, 128]).max() <= 1  # 128 + 76.8, 128 + 102.4
    xs = _tensor([[3, 4, 0]], T.TENSOR_QUANT8_ASYMM_SIGNED, 0.1, 0)
    for axis in (-1, 0):
        outs = normalization.l2_normalization(
            _ctx("L2_NORMALIZATION", [xs, _scalar(axis, T.INT32)], T.TENSOR_QUANT8_ASYMM_SIGNED, 1 / 128, 0))[0]
        expected = [77, 102, 0] if axis == -1 else [127, 127, 0]  # a single element normalizes to 1 -> 127
        assert np.abs(outs.astype(int) - expected).max() <= 1


def test_local_response_normalization_window_on_axis():
    x = _tensor(np.arange(1, 7, dtype=np.float32).reshape(2, 3), T.TENSOR_FLOAT32)
    args = [x, _scalar(1, T.INT32), _scalar(1.0), _scalar(0.5), _scalar(0.5), _scalar(0, T.INT32)]
    out = normalization.local_response_normalization(_ctx("LOCAL_RESPONSE_NORMALIZATION", args, T.TENSOR_FLOAT32))[0]
    # axis 0, radius 1: each column's window covers both rows.
    col = np.arange(1, 4)
    sums = col ** 2 + (col + 3) ** 2
    np.testing.assert_allclose(out, np.stack([col, col + 3]) / np.sqrt(1 + 0.5 * sums), rtol=1e-6)


def test_instance_normalization_nchw_equals_nhwc():
    rng = np.random.default_rng(3)
    nhwc = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    params = [_scalar(1.5), _scalar(0.25), _scalar(1e-3)]
    a = normalization.instance_normalization(_ctx("INSTANCE_NORMALIZATION", [
        _tensor(nhwc, T.TENSOR_FLOAT32), *params, _scalar(False, T.BOOL)], T.TENSOR_FLOAT32))[0]
    b = normalization.instance_normalization(_ctx("INSTANCE_NORMALIZATION", [
        _tensor(nhwc.transpose(0, 3, 1, 2), T.TENSOR_FLOAT32), *params, _scalar(True, T.BOOL)], T.TENSOR_FLOAT32))[0]
    np.testing.assert_allclose(a.transpose(0, 3, 1, 2), b, rtol=1e-5, atol=1e-6)
    mean = nhwc.mean(axis=(1, 2), keepdims=True)
    expected = (nhwc - mean) * 1.5 / np.sqrt(nhwc.var(axis=(1, 2), keepdims=True) + 1e-3) + 0.25
    np.testing.assert_allclose(a, expected, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- unary, comparisons, select


def test_unary_int32_abs_neg_wrap_like_cpp():
    x = _tensor([-(2**31), -3, 5], T.TENSOR_INT32)
    assert unary.abs_(_ctx("ABS", [x], T.TENSOR_INT32))[0].tolist() == [-(2**31), 3, 5]
    assert unary.neg(_ctx("NEG", [x], T.TENSOR_INT32))[0].tolist() == [-(2**31), 3, -5]


def test_quantized_comparison_uses_real_values():
    a = _tensor([10, 20, 30], T.TENSOR_QUANT8_ASYMM, 0.5, 10)  # 0, 5, 10
    b = _tensor([[100], [104]], T.TENSOR_QUANT8_ASYMM, 1.0, 95)  # 5, 9 (broadcast)
    assert comparison.less(_ctx("LESS", [a, b], T.TENSOR_BOOL8))[0].tolist() == [[True, False, False],
                                                                                 [True, True, False]]
    assert comparison.equal(_ctx("EQUAL", [a, b], T.TENSOR_BOOL8))[0].tolist() == [[False, True, False],
                                                                                   [False, False, False]]


def test_maximum_quant_requantizes_with_half_away_rounding():
    a = _tensor([129, 123], T.TENSOR_QUANT8_ASYMM, 0.5, 127)  # 1, -2
    b = _tensor([99, 97], T.TENSOR_QUANT8_ASYMM, 1.0, 100)  # -1, -3
    out = comparison.maximum(_ctx("MAXIMUM", [a, b], T.TENSOR_QUANT8_ASYMM, 2.0, 80))[0]
    assert out.tolist() == [81, 79]  # 80.5 -> 81 (Android std::round), 79


def test_select_requires_equal_shapes():
    mask = _tensor([True, False], T.TENSOR_BOOL8)
    a, b = _tensor([1, 2], T.TENSOR_INT32), _tensor([3], T.TENSOR_INT32)
    with pytest.raises(DriverError):
        comparison.select(_ctx("SELECT", [mask, a, b], T.TENSOR_INT32))
    b = _tensor([3, 4], T.TENSOR_INT32)
    assert comparison.select(_ctx("SELECT", [mask, a, b], T.TENSOR_INT32))[0].tolist() == [1, 4]


# --------------------------------------------------------------------------- conversions


def test_quantize_rounds_half_away_from_zero_and_saturates():
    x = _tensor([0.25, -0.25, 0.75, 100.0, -100.0], T.TENSOR_FLOAT32)
    out = quantize.quantize(_ctx("QUANTIZE", [x], T.TENSOR_QUANT8_ASYMM, 0.5, 10))[0]
    assert out.tolist() == [11, 9, 12, 210, 0]
    outs = quantize.quantize(_ctx("QUANTIZE", [x], T.TENSOR_QUANT8_ASYMM_SIGNED, 0.5, 0))[0]
    assert outs.tolist() == [1, -1, 2, 127, -128]


def test_dequantize_per_channel():
    x = Tensor(np.array([[1, -2], [3, -4]], dtype=np.int8), T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
               channel_quant=SymmPerChannelQuantParams(scales=[0.5, 0.25], channel_dim=1))
    out = quantize.dequantize(_ctx("DEQUANTIZE", [x], T.TENSOR_FLOAT16))[0]
    assert out.dtype == np.float16
    assert out.tolist() == [[0.5, -0.5], [1.5, -1.0]]


def test_cast_truncates_and_saturates_to_uint8():
    x = _tensor([-3.7, 2.9, 300.5, 255.9], T.TENSOR_FLOAT32)
    assert quantize.cast(_ctx("CAST", [x], T.TENSOR_QUANT8_ASYMM, 1.0, 0))[0].tolist() == [0, 2, 255, 255]
    assert quantize.cast(_ctx("CAST", [x], T.TENSOR_INT32))[0].tolist() == [-3, 2, 300, 255]
    q = _tensor([7, 250], T.TENSOR_QUANT8_ASYMM, 0.5, 100)  # quantization is ignored
    assert quantize.cast(_ctx("CAST", [q], T.TENSOR_FLOAT32))[0].tolist() == [7.0, 250.0]
    q16 = _tensor([-5, 9], T.TENSOR_QUANT16_SYMM, 0.5)
    assert quantize.cast(_ctx("CAST", [q16], T.TENSOR_QUANT16_SYMM, 0.5))[0].tolist() == [-5, 9]
