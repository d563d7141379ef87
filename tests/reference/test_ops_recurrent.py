"""Recurrent-family operations of the reference driver.

The corpus tests run Android's generated tests for LSTM, QUANTIZED_16BIT_LSTM,
RNN, SVDF, the sequence RNN/LSTM operations, LSH_PROJECTION and
RANDOM_MULTINOMIAL through the library's runner; the unit tests pin the
numerics that are easy to get subtly wrong (int16 fixed-point gates, the
farmhash fingerprint, CIFG/projection/clip variants, time-major layout).
"""

from __future__ import annotations

import glob
import math
import os

import numpy as np
import pytest

from nnvts.drivers.reference.ops import hashing, lstm, quantized_lstm, sequence
from nnvts.drivers.reference.tensor import OpContext, Tensor
from tests.reference.corpus import run_generated
from vts.hal.enums import OperandLifeTime
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError
from vts.hal.types import Operand

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpus")
SPECS = os.path.join(os.path.dirname(__file__), "..", "..", "specs", "recurrent")
CORPUS_PATTERNS = ("lstm*", "layer_norm_lstm*", "quantized_lstm*", "rnn*", "svdf*", "*sequence_lstm*",
                   "*sequence_rnn*", "lsh_projection*", "random_multinomial*")


def test_corpus_recurrent_models_pass():
    if not os.path.isdir(CORPUS):
        pytest.skip("external corpus not present")
    found = (glob.glob(os.path.join(CORPUS, "*", pattern + ".json.gz")) for pattern in CORPUS_PATTERNS)
    paths = sorted({p for matches in found for p in matches})
    assert len(paths) >= 70
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= 220


def test_project_specs_pass():
    paths = sorted(glob.glob(os.path.join(SPECS, "*.yaml")))
    assert paths, "specs/recurrent has no specs"
    counts = run_generated(paths)
    assert counts.get("passed", 0) >= len(paths)


# --------------------------------------------------------------------------- helpers


def _operand(type_: int, dims: tuple[int, ...], scale: float = 0.0, zero_point: int = 0) -> Operand:
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=0, scale=scale, zero_point=zero_point,
                   lifetime=OperandLifeTime.TEMPORARY_VARIABLE)


def _ctx(name: str, inputs: list[Tensor | None], outputs: list[tuple[int, tuple[int, ...]]]) -> OpContext:
    return OpContext(name, inputs, [_operand(t, d) for t, d in outputs])


def _f32(values, dims=None) -> Tensor:
    array = np.asarray(values, dtype=np.float32)
    return Tensor(array.reshape(dims) if dims else array, T.TENSOR_FLOAT32)


def _scalar(value, type_=T.INT32) -> Tensor:
    dtype = {T.INT32: np.int32, T.FLOAT32: np.float32, T.BOOL: np.bool_}[type_]
    return Tensor(np.array(value, dtype=dtype), type_)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# --------------------------------------------------------------------------- int16 fixed point


# gemmlowp's own int16 results (fixedpoint.h compiled from the headers TensorFlow 2.21 bundles) at these raw inputs.
GEMMLOWP_X = [-32768, -20000, -4733, -4096, -1000, -1, 1, 777, 4096, 12345, 32767]
GEMMLOWP = {
    ("tanh", 3): [-32767, -32767, -26844, -24964, -7840, -8, 8, 6144, 24964, 32616, 32767],
    ("logistic", 3): [11, 243, 7847, 8815, 14391, 16383, 16384, 17932, 23952, 31236, 32756],
    ("tanh", 4): [-32767, -32767, -32128, -31596, -14836, -24, 24, 11864, 31596, 32767, 32767],
    ("logistic", 4): [0, 0, 2961, 3901, 12463, 16379, 16388, 19456, 28866, 32692, 32767],
}


@pytest.mark.parametrize(("fn", "integer_bits"), sorted(GEMMLOWP))
def test_int16_gates_match_gemmlowp(fn, integer_bits):
    impl = quantized_lstm.tanh16 if fn == "tanh" else quantized_lstm.logistic16
    assert impl(np.array(GEMMLOWP_X), integer_bits).tolist() == GEMMLOWP[(fn, integer_bits)]


@pytest.mark.parametrize("fn", ["tanh", "logistic"])
def test_int16_gates_track_the_real_function(fn):
    """gemmlowp's int16 approximations stay within a few Q0.15 steps of the real function."""
    raw = np.arange(-32768, 32768, 37, dtype=np.int64)
    real = raw / 4096.0  # Q3.12
    got = quantized_lstm.tanh16(raw, 3) if fn == "tanh" else quantized_lstm.logistic16(raw, 3)
    want = (np.tanh(real) if fn == "tanh" else 1.0 / (1.0 + np.exp(-real))) * 32768
    assert np.max(np.abs(got - want)) <= 16
    assert got.min() >= -32768 and got.max() <= 32767


def test_int16_gate_special_points():
    assert quantized_lstm.logistic16(np.array([0]), 3).tolist() == [16384]  # exactly one half
    assert quantized_lstm.tanh16(np.array([0]), 3).tolist() == [0]
    # odd symmetry of tanh and logistic(x) + logistic(-x) = 1 (up to the Q0.15 one, 32767)
    x = np.array([1, 100, 4096, 20000, 32767])
    assert (quantized_lstm.tanh16(-x, 3) == -quantized_lstm.tanh16(x, 3)).all()
    assert (quantized_lstm.logistic16(-x, 3) + quantized_lstm.logistic16(x, 3) == 32767).all()


def test_int16_high_mul_saturates_and_rounds():
    assert quantized_lstm.srdhm16(np.array([-32768]), -32768).tolist() == [32767]
    # 16384 * 3 / 32768 = 1.5 -> 2; gemmlowp's negative nudge is 1 - 2^14, so -1.5 -> -1
    assert quantized_lstm.srdhm16(np.array([16384, -16384]), 3).tolist() == [2, -1]
    assert quantized_lstm.mul_by_pot16(np.array([16383, 16384, -16384, -16385]), 1).tolist() == [
        32766, 32767, -32768, -32768]
    assert quantized_lstm.wrap16(np.array([32768, -32769])).tolist() == [-32768, 32767]


# --------------------------------------------------------------------------- farmhash


# Fingerprint64 values computed with pyfarmhash 0.5.1 (Google's farmhash C++ library).
FARMHASH_VECTORS = [
    (b"", 11160318154034397263),
    (b"abc", 2640714258260161385),
    (bytes(range(20)), 10220892904819695849),
    (bytes(range(50)), 12334112670463347188),
    (bytes(range(100)), 4395248839964844437),
]


@pytest.mark.parametrize(("data", "expected"), FARMHASH_VECTORS)
def test_fingerprint64_matches_farmhash(data, expected):
    assert hashing.fingerprint64(data) == expected


# --------------------------------------------------------------------------- LSTM variants


def _lstm_inputs(cifg: bool = False, peephole: bool = False, projection: bool = False,
                 clips: tuple[float, float] = (0.0, 0.0)) -> list[Tensor | None]:
    """One cell, one input, one batch: every weight 1, biases 0, unless a variant is chosen."""
    one = _f32([1.0], (1, 1))
    inputs: list[Tensor | None] = [_f32([0.5], (1, 1))]
    inputs += [None if cifg else one, one, one, one]  # input-to-{i, f, c, o}
    inputs += [None if cifg else one, one, one, one]  # recurrent-to-{i, f, c, o}
    peep = _f32([0.5]) if peephole else None
    inputs += [None if cifg else peep, peep, peep]
    zero = _f32([0.0])
    inputs += [None if cifg else zero, zero, zero, zero]
    inputs += [_f32([2.0], (1, 1)) if projection else None, None]
    inputs += [_f32([0.25], (1, 1)), _f32([0.75], (1, 1))]  # h(t-1), c(t-1)
    inputs += [_scalar(4), _scalar(clips[0], T.FLOAT32), _scalar(clips[1], T.FLOAT32)]
    return inputs


def _expected_lstm(cifg: bool, peephole: bool, projection: bool, clips=(0.0, 0.0)) -> tuple[float, float, float]:
    x, h, c = 0.5, 0.25, 0.75
    pre = x + h  # every weight is 1, biases 0
    f = _sigmoid(pre + (0.5 * c if peephole else 0.0))
    i = 1.0 - f if cifg else _sigmoid(pre + (0.5 * c if peephole else 0.0))
    new_c = f * c + i * math.tanh(pre)
    if clips[0]:
        new_c = max(-clips[0], min(clips[0], new_c))
    o = _sigmoid(pre + (0.5 * new_c if peephole else 0.0))
    out = o * math.tanh(new_c) * (2.0 if projection else 1.0)
    if projection and clips[1]:
        out = max(-clips[1], min(clips[1], out))
    return out, new_c, out


@pytest.mark.parametrize(("cifg", "peephole", "projection", "clips"), [
    (False, False, False, (0.0, 0.0)),
    (True, False, False, (0.0, 0.0)),
    (False, True, False, (0.0, 0.0)),
    (True, True, True, (0.0, 0.0)),
    (False, False, True, (0.7, 0.5)),
])
def test_lstm_variants(cifg, peephole, projection, clips):
    scratch_width = 3 if cifg else 4
    outputs = [(T.TENSOR_FLOAT32, (1, scratch_width)), (T.TENSOR_FLOAT32, (1, 1)), (T.TENSOR_FLOAT32, (1, 1)),
               (T.TENSOR_FLOAT32, (1, 1))]
    scratch, h, c, out = lstm.lstm(_ctx("LSTM", _lstm_inputs(cifg, peephole, projection, clips), outputs))
    want_h, want_c, want_out = _expected_lstm(cifg, peephole, projection, clips)
    assert scratch.shape == (1, scratch_width)
    assert h.item() == pytest.approx(want_h, rel=1e-6)
    assert c.item() == pytest.approx(want_c, rel=1e-6)
    assert out.item() == pytest.approx(want_out, rel=1e-6)


def test_lstm_peephole_all_or_none():
    inputs = _lstm_inputs(peephole=True)
    inputs[10] = None  # drop cell-to-forget only
    outputs = [(T.TENSOR_FLOAT32, (1, 4))] + [(T.TENSOR_FLOAT32, (1, 1))] * 3
    with pytest.raises(DriverError):
        lstm.lstm(_ctx("LSTM", inputs, outputs))


def test_unidirectional_sequence_lstm_batch_major_matches_time_major():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)  # [time, batch, input]
    cell = lstm.LstmCell(None, *[lstm.Gate(rng.standard_normal((2, 2)).astype(np.float32),
                                           rng.standard_normal((2, 2)).astype(np.float32),
                                           rng.standard_normal(2).astype(np.float32)) for _ in range(3)],
                         None, None, 4, 0.0, 0.0)
    h = np.zeros((4, 2), np.float32)
    forward = lstm.lstm_sequence(cell, x, h, h, "LSTM")
    backward = lstm.lstm_sequence(cell, x[::-1], h, h, "LSTM", forward=False)
    # walking the reversed sequence backwards visits the original order: same states, outputs mirrored
    np.testing.assert_allclose(backward.outputs[::-1], forward.outputs, rtol=1e-6)
    np.testing.assert_allclose(backward.cell_state, forward.cell_state, rtol=1e-6)
    assert sequence._layout_back(forward.outputs, False).shape == (4, 3, 2)
