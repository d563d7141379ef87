"""QUANTIZED_16BIT_LSTM (HAL 1.2) and QUANTIZED_LSTM (HAL 1.3): integer LSTM cells.

Both run entirely in integer arithmetic, so their goldens are reproducible
only bit for bit; the gate non-linearities are gemmlowp's 16-bit fixed-point
``logistic`` and ``tanh`` (int16 raw values: Q3.12 gate inputs, Q0.15
results), emulated here with C++ int16 semantics (wrapping adds, saturating
shifts, rounding-doubling high multiplies).

QUANTIZED_16BIT_LSTM follows Android's ``QuantizedLSTM.cpp`` (TFLite's
legacy ``LstmCell<4>``): uint8 input/output with scale 1/128 and zero point
128, a Q3.12 fully-connected stage, and an int16 cell state in Q4.11.

QUANTIZED_LSTM follows Android's ``QLSTM.cpp`` (TFLite's 8x8→16 integer LSTM
step): int8 gate matmuls requantized to int16 intermediates, optional
integer layer normalization, peepholes, CIFG, cell clipping and an int8
projection.  Where the Android revision read and TFLite's current kernel
differ, this driver follows TFLite (its goldens in specs/recurrent come from
TFLite): the gate bias joins the input matmul when there is no layer
normalization, and the hidden state adds its zero point.
"""

from __future__ import annotations

import math

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    inv_sqrt_quantized_multiplier_exp,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
)
from nnvts.drivers.reference.tensor import OpContext, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1

# ---------------------------------------------------------------------------
# gemmlowp FixedPoint<int16_t, N> arithmetic (raw values held in int64 arrays)
# ---------------------------------------------------------------------------


def wrap16(x: np.ndarray) -> np.ndarray:
    """Plain int16 ``+``/``-``/unary ``-``: two's-complement wrap-around."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def saturate16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.int64), INT16_MIN, INT16_MAX)


def srdhm16(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """int16 ``SaturatingRoundingDoublingHighMul`` (Q0.15 product, as ARM VQRDMULH)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    product = a * b
    total = product + np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    quotient = np.where(total >= 0, total >> 15, -((-total) >> 15))  # C++ division truncates
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, quotient)


def mul_by_pot16(x: np.ndarray, exponent: int) -> np.ndarray:
    """int16 ``SaturatingRoundingMultiplyByPOT``: saturating left shift or rounding right shift."""
    x = np.asarray(x, dtype=np.int64)
    if exponent > 0:
        threshold = (1 << (15 - exponent)) - 1
        return np.where(x > threshold, INT16_MAX, np.where(x < -threshold, INT16_MIN, x << exponent))
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return x


def constant16(raw32: int) -> int:
    """gemmlowp ``RescaleConstantInitializer``: a Q0.31 constant rounded to 16 bits."""
    return int(rounding_divide_by_pot(np.int64(raw32), 16))


def _rounding_half_sum16(a: np.ndarray, b: int) -> np.ndarray:
    total = np.asarray(a, dtype=np.int64) + b
    total = total + np.where(total >= 0, 1, -1)
    return np.where(total >= 0, total // 2, -((-total) // 2))


def _exp_on_quarter_interval16(a: np.ndarray) -> np.ndarray:
    """exp(a) for Q0.15 a in [-1/4, 0): Taylor expansion around -1/8."""
    constant_term = constant16(1895147668)
    one_third = constant16(715827883)
    x = wrap16(a + (1 << 12))  # a + 1/8
    x2 = srdhm16(x, x)
    x3 = srdhm16(x2, x)
    x4 = srdhm16(x2, x2)
    x4_over_4 = mul_by_pot16(x4, -2)
    poly = mul_by_pot16(wrap16(srdhm16(wrap16(x4_over_4 + x3), one_third) + x2), -1)
    return saturate16(constant_term + srdhm16(constant_term, wrap16(x + poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp ``exp_on_negative_values`` for FixedPoint<int16, integer_bits>; Q0.15 result."""
    a = np.asarray(a, dtype=np.int64)
    fractional_bits = 15 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod = wrap16((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_quarter_interval16(mul_by_pot16(a_mod, integer_bits))
    remainder = wrap16(a_mod - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = 1 << (fractional_bits + exponent)
            result = np.where(remainder & bit, srdhm16(result, constant16(multiplier)), result)
    return np.where(a == 0, INT16_MAX, result)


def _newton_reciprocal16(a: np.ndarray) -> np.ndarray:
    """Q2.13 approximation of 2 / (1 + a) for Q0.15 a in [0, 1): three Newton-Raphson steps."""
    half_denominator = _rounding_half_sum16(a, INT16_MAX)
    x = wrap16(constant16(1515870810) + srdhm16(half_denominator, constant16(-1010580540)))
    for _ in range(3):
        one_minus = wrap16((1 << 13) - srdhm16(half_denominator, x))
        x = wrap16(x + mul_by_pot16(srdhm16(x, one_minus), 2))
    return x


def logistic16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp ``logistic`` on FixedPoint<int16, integer_bits> → Q0.15."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    magnitude = np.where(positive, a, wrap16(-a))
    if_positive = mul_by_pot16(_newton_reciprocal16(exp_on_negative_values16(wrap16(-magnitude), integer_bits)), 1)
    if_negative = wrap16(INT16_MAX - if_positive)
    return np.where(a == 0, constant16(1 << 30), np.where(positive, if_positive, if_negative))


def tanh16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp ``tanh`` on FixedPoint<int16, integer_bits> → Q0.15."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    non_positive = np.where(negative, a, wrap16(-a))
    exp2x = exp_on_negative_values16(non_positive, integer_bits + 1)  # exp(2n): one more integer bit
    t = mul_by_pot16(wrap16(_newton_reciprocal16(exp2x) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(negative, wrap16(-t), t))


# ---------------------------------------------------------------------------
# QUANTIZED_16BIT_LSTM
# ---------------------------------------------------------------------------


def _check(ctx: OpContext, condition: bool, message: str) -> None:
    if not condition:
        raise op_failure(f"{ctx.name}: {message}")


def _int(t: Tensor) -> np.ndarray:
    return t.value.astype(np.int64)


@register_op(Op.QUANTIZED_16BIT_LSTM, types=(T.TENSOR_QUANT8_ASYMM,))
def quantized_16bit_lstm(ctx: OpContext) -> list[np.ndarray]:
    """15 inputs: x, 4 input-to-gate and 4 recurrent weights (i, f, c, o), 4 int32 biases, c(t−1), h(t−1).

    Outputs: cell state (QUANT16_SYMM, scale 2⁻¹¹) and output (QUANT8_ASYMM,
    scale 1/128, zero point 128).  The fully-connected stage accumulates
    ([x | h] − 128)·(W − w_zp) in int32 over Android's concatenated weight
    rows and requantizes by 4096·bias_scale into Q3.12; gates then run in
    gemmlowp int16 fixed point.
    """
    x, prev_c, prev_h = ctx.tensor(0), ctx.tensor(13), ctx.tensor(14)
    _check(ctx, x.rank == 2 and prev_h.rank == 2 and prev_c.rank == 2, "input and states must be 2-D")
    _check(ctx, x.scale == 1.0 / 128.0 and x.zero_point == 128, "input must have scale 1/128, zero point 128")
    _check(ctx, prev_h.scale == 1.0 / 128.0 and prev_h.zero_point == 128,
           "previous output must have scale 1/128, zero point 128")
    batch, n_out = prev_h.shape
    _check(ctx, x.shape[0] == batch and prev_c.shape == (batch, n_out), "batch or output size mismatch")
    weights = [ctx.tensor(i) for i in range(1, 9)]
    biases = [ctx.tensor(i) for i in range(9, 13)]
    w_scale, w_zp = weights[0].scale, weights[0].zero_point
    for k, w in enumerate(weights):
        _check(ctx, w.shape == (n_out, x.shape[1] if k < 4 else n_out), f"weights {k + 1} have the wrong shape")
        _check(ctx, w.scale == w_scale and w.zero_point == w_zp, "all weights must share scale and zero point")
    for b in biases:
        _check(ctx, b.shape == (n_out,) and b.scale == biases[0].scale and b.zero_point == 0, "bad gate bias")
    _check(ctx, w_scale != 0 and biases[0].scale == w_scale / 128.0, "bias scale must be weights scale / 128")
    _check(ctx, prev_c.zero_point == 0 and prev_c.scale == 2.0 ** -11, "cell state must be Q4.11 (scale 2^-11)")

    multiplier, shift = quantize_multiplier(4096.0 * biases[0].scale)
    # Android concatenates the activations as [x | h(t-1)] but each gate's weight row as
    # [recurrent | input] (``concatenateWeights``); the goldens follow that exact pairing.
    concat = np.concatenate([_int(x), _int(prev_h)], axis=1) - 128

    def gate(k: int) -> np.ndarray:
        row = np.concatenate([_int(weights[4 + k]), _int(weights[k])], axis=1) - w_zp
        acc = _int(biases[k]) + concat @ row.T
        return saturate16(multiply_by_quantized_multiplier(acc, multiplier, shift))

    input_gate, forget_gate = logistic16(gate(0), 3), logistic16(gate(1), 3)
    modulation, output_gate = tanh16(gate(2), 3), logistic16(gate(3), 3)
    new_state = saturate16(mul_by_pot16(srdhm16(input_gate, modulation), -4) + srdhm16(forget_gate, _int(prev_c)))
    activation = srdhm16(output_gate, tanh16(mul_by_pot16(new_state, 1), 3))
    output = np.clip(rounding_divide_by_pot(activation, 8), -128, 127) + 128
    return [new_state.astype(np.int16), output.astype(np.uint8)]


# ---------------------------------------------------------------------------
# QUANTIZED_LSTM (HAL 1.3)
# ---------------------------------------------------------------------------

_Q_INPUT, _Q_INPUT_WEIGHTS, _Q_RECURRENT_WEIGHTS, _Q_PEEPHOLES, _Q_BIASES = 0, 1, 5, 9, 12
_Q_PROJECTION, _Q_PROJECTION_BIAS, _Q_PREV_OUTPUT, _Q_PREV_CELL, _Q_LAYER_NORM = 16, 17, 18, 19, 20
_Q_CELL_CLIP, _Q_PROJ_CLIP, _Q_INTERMEDIATE_SCALES, _Q_HIDDEN_ZP, _Q_HIDDEN_SCALE = 24, 25, 26, 30, 31
_GATES = ("input", "forget", "cell", "output")


def _optional_tensor(ctx: OpContext, index: int) -> Tensor | None:
    if not ctx.has(index) or ctx.array(index).size == 0:
        return None
    return ctx.tensor(index)


def _f32(value: float) -> np.float32:
    return np.float32(value)


def _checked_log2(value: float) -> int | None:
    """TFLite ``CheckedLog2``: the exponent when ``value`` is a power of two (within 1e-3), else None."""
    if value <= 0:
        return None
    exponent = math.log(value) / math.log(2.0)
    rounded = round(exponent)
    return rounded if abs(exponent - rounded) < 1e-3 else None


def _matmul_accumulate(vectors: np.ndarray, effective_bias: np.ndarray, weights: np.ndarray,
                       multiplier_shift: tuple[int, int], output_zp: int, accumulator: np.ndarray,
                       bounds: tuple[int, int]) -> np.ndarray:
    """tflite ``MatrixBatchVectorMultiplyAccumulate`` (int8 × int8 → requantized, added, saturated)."""
    acc = effective_bias + vectors @ weights.T
    acc = multiply_by_quantized_multiplier(acc, *multiplier_shift) + output_zp + accumulator
    return np.clip(acc, *bounds)


def _layer_norm(values: np.ndarray, weights: np.ndarray, bias: np.ndarray, scale: tuple[int, int],
                variance_limit: int) -> np.ndarray:
    """tflite ``ApplyLayerNorm`` on int16 gate values (mean/variance in 2^10-scaled integers)."""
    n = values.shape[1]
    total = values.sum(axis=1, keepdims=True)
    total_sq = np.square(values).sum(axis=1, keepdims=True)
    mean = _trunc_div(total * 1024, n)
    variance = total_sq * ((1 << 20) // n) - mean * mean
    variance = _trunc_div(variance, 1 << 20)
    variance = np.where(variance < 1, variance_limit, variance)
    inv_a, inv_b = inv_sqrt_quantized_multiplier_exp(variance, -1)
    rescaled = multiply_by_quantized_multiplier(1024 * values - mean, inv_a, inv_b)
    weighted = rescaled * weights + bias
    rounded = _trunc_div(np.where(weighted > 0, weighted + 512, weighted - 512), 1024)
    return saturate16(multiply_by_quantized_multiplier(rounded, scale[0], scale[1] + 12))


def _peephole_accumulate(weights: np.ndarray, cell_state: np.ndarray, gate: np.ndarray,
                         multiplier_shift: tuple[int, int], vector_size: int) -> np.ndarray:
    """``VectorBatchVectorCwiseProductAccumulate`` as QLSTM.cpp and TFLite call it: with the *output* size.

    Both pass n_output as the vector length, so over the flattened [batch, units]
    buffers only the first batch·n_output elements are updated, element k using
    weight k mod n_output.  With no projection (n_output = units) this is the plain
    diagonal peephole; with a narrower projection it is the kernels' exact behaviour.
    """
    flat_gate = gate.reshape(-1).copy()
    count = gate.shape[0] * vector_size
    k = np.arange(count)
    product = weights[k % vector_size] * cell_state.reshape(-1)[:count]
    flat_gate[:count] = saturate16(multiply_by_quantized_multiplier(product, *multiplier_shift) + flat_gate[:count])
    return flat_gate.reshape(gate.shape)


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """C++ integer division (truncates toward zero)."""
    a = np.asarray(a, dtype=np.int64)
    return np.where(a >= 0, a // b, -((-a) // b))


class _QuantizedLstm:
    """State of one QUANTIZED_LSTM execution: operands, effective scales and biases."""

    def __init__(self, ctx: OpContext) -> None:
        self.ctx = ctx
        self.x = ctx.tensor(_Q_INPUT)
        self.prev_h = ctx.tensor(_Q_PREV_OUTPUT)
        self.prev_c = ctx.tensor(_Q_PREV_CELL)
        _check(ctx, self.x.rank == 2, "input must be 2-D")
        self.input_w = {g: _optional_tensor(ctx, _Q_INPUT_WEIGHTS + k) for k, g in enumerate(_GATES)}
        self.recurrent_w = {g: _optional_tensor(ctx, _Q_RECURRENT_WEIGHTS + k) for k, g in enumerate(_GATES)}
        self.peephole = dict(zip(("input", "forget", "output"),
                                 (_optional_tensor(ctx, _Q_PEEPHOLES + k) for k in range(3)), strict=True))
        self.bias = {g: _optional_tensor(ctx, _Q_BIASES + k) for k, g in enumerate(_GATES)}
        self.norm = {g: _optional_tensor(ctx, _Q_LAYER_NORM + k) for k, g in enumerate(_GATES)}
        self.projection = _optional_tensor(ctx, _Q_PROJECTION)
        self.projection_bias = _optional_tensor(ctx, _Q_PROJECTION_BIAS)
        self.cifg = self.input_w["input"] is None
        self.hidden_zp = int(ctx.scalar(_Q_HIDDEN_ZP))
        self.hidden_scale = _f32(ctx.scalar(_Q_HIDDEN_SCALE))
        self.intermediate = {g: _f32(ctx.scalar(_Q_INTERMEDIATE_SCALES + k)) for k, g in enumerate(_GATES)}
        self._check_shapes()
        cell_shift = _checked_log2(self.prev_c.scale)
        _check(ctx, cell_shift is not None and -15 <= cell_shift <= -9,
               "cell state scale must be a power of two between 2^-15 and 2^-9")
        self.cell_shift = int(cell_shift)  # type: ignore[arg-type]

    def _check_shapes(self) -> None:
        ctx = self.ctx
        batch, n_input = self.x.shape
        for g in ("forget", "cell", "output"):
            _check(ctx, self.input_w[g] is not None and self.recurrent_w[g] is not None and self.bias[g] is not None,
                   f"{g} gate weights and bias are required")
        n_units, n_output = self.recurrent_w["output"].shape  # type: ignore[union-attr]
        _check(ctx, (self.input_w["input"] is None) == (self.recurrent_w["input"] is None),
               "input gate weights must be all present (or all omitted for CIFG)")
        _check(ctx, (self.bias["input"] is None) == self.cifg, "input gate bias must be omitted exactly with CIFG")
        for g in _GATES:
            expected = ((self.input_w[g], (n_units, n_input)), (self.recurrent_w[g], (n_units, n_output)),
                        (self.bias[g], (n_units,)), (self.norm[g], (n_units,)), (self.peephole.get(g), (n_units,)))
            for t, shape in expected:
                _check(ctx, t is None or t.shape == shape, f"{g} gate tensor has shape {t and list(t.shape)}")
        peepholes = [self.peephole[g] is not None for g in ("forget", "output")]
        if not self.cifg:
            peepholes.append(self.peephole["input"] is not None)
        _check(ctx, all(peepholes) or not any(peepholes), "peephole weights must be all present or all omitted")
        norms = [self.norm[g] is not None for g in _GATES if g != "input" or not self.cifg]
        _check(ctx, all(norms) or not any(norms), "layer normalization weights must be all present or all omitted")
        if self.projection is not None:
            _check(ctx, self.projection.shape == (n_output, n_units), "projection weights have the wrong shape")
        else:
            _check(ctx, self.projection_bias is None and n_output == n_units, "no projection: output size = units")
        _check(ctx, self.projection_bias is None or self.projection_bias.shape == (n_output,), "bad projection bias")
        _check(ctx, self.prev_h.shape == (batch, n_output), "previous output has the wrong shape")
        _check(ctx, self.prev_c.shape == (batch, n_units), "previous cell state has the wrong shape")

    # -- gate pre-activations -------------------------------------------------

    def _gate(self, gate: str, cell_state: np.ndarray) -> np.ndarray:
        """int16 gate input: input and recurrent matmuls, peephole, layer norm (``QLSTM.cpp`` order)."""
        x, h = self.x, self.prev_h
        w_in, w_rec = self.input_w[gate], self.recurrent_w[gate]
        assert w_in is not None and w_rec is not None
        inter = self.intermediate[gate]
        norm = self.norm[gate]
        bias = self.bias[gate]
        in_bias = -x.zero_point * _int(w_in).sum(axis=1)
        if norm is None and bias is not None:
            in_bias = in_bias + _int(bias)  # without layer norm the gate bias joins the input matmul (TFLite)
        zeros = np.zeros((x.shape[0], w_in.shape[0]), dtype=np.int64)
        acc = _matmul_accumulate(_int(x), in_bias, _int(w_in),
                                 quantize_multiplier(float(_f32(w_in.scale) * _f32(x.scale) / inter)), 0, zeros,
                                 (INT16_MIN, INT16_MAX))
        acc = _matmul_accumulate(_int(h), -h.zero_point * _int(w_rec).sum(axis=1), _int(w_rec),
                                 quantize_multiplier(float(_f32(w_rec.scale) * _f32(h.scale) / inter)), 0, acc,
                                 (INT16_MIN, INT16_MAX))
        peephole = self.peephole.get(gate)
        if peephole is not None:
            scale = np.float32(2.0 ** self.cell_shift * float(_f32(peephole.scale)) / float(inter))
            acc = _peephole_accumulate(_int(peephole), cell_state, acc, quantize_multiplier(float(scale)),
                                       self.prev_h.shape[1])
        if norm is not None:
            limit = min(1, int(10000 * _f32(norm.scale)))
            gate_bias = _int(bias) if bias is not None else np.zeros(acc.shape[1], dtype=np.int64)
            acc = _layer_norm(acc, _int(norm), gate_bias, quantize_multiplier(float(_f32(norm.scale))), limit)
        return acc

    # -- the step --------------------------------------------------------------

    def run(self) -> list[np.ndarray]:
        prev_c = _int(self.prev_c)
        forget = logistic16(self._gate("forget", prev_c), 3)
        modulation = tanh16(self._gate("cell", prev_c), 3)
        input_gate = wrap16(INT16_MAX - forget) if self.cifg else logistic16(self._gate("input", prev_c), 3)
        cell = saturate16(rounding_divide_by_pot(forget * prev_c, 15)
                          + rounding_divide_by_pot(input_gate * modulation, 30 + self.cell_shift))
        cell_clip = float(self.ctx.scalar(_Q_CELL_CLIP))
        if cell_clip > 0:
            limit = int(min(max(_f32(cell_clip) / _f32(self.prev_c.scale), -32768.0), 32767.0))
            cell = np.clip(cell, -limit, limit)
        output_gate = logistic16(self._gate("output", cell), 3)
        hidden = self._hidden(output_gate, tanh16(cell, 15 + self.cell_shift))
        output = self._project(hidden) if self.projection is not None else hidden
        return [output.astype(np.int8), cell.astype(np.int16), output.astype(np.int8)]

    def _hidden(self, output_gate: np.ndarray, cell_tanh: np.ndarray) -> np.ndarray:
        """int8 hidden state: o · tanh(c) requantized to the hidden scale, plus the hidden zero point.

        TFLite's kernel adds the zero point (as NNAPI's quantization defines it);
        the QLSTM.cpp revision read for this driver subtracted it and added, rather
        than subtracted, zp·rowsum in the projection bias.  The two agree whenever
        a projection follows; without one they differ for a non-zero hidden zero
        point, and this driver follows TFLite.
        """
        scale = np.float32(2.0 ** -15 / float(self.hidden_scale) * 2.0 ** -15)
        value = multiply_by_quantized_multiplier(output_gate * cell_tanh, *quantize_multiplier(float(scale)))
        return np.clip(value + self.hidden_zp, -128, 127)

    def _project(self, hidden: np.ndarray) -> np.ndarray:
        projection = self.projection
        assert projection is not None
        weights = _int(projection)
        bias = -self.hidden_zp * weights.sum(axis=1)
        if self.projection_bias is not None:
            bias = bias + _int(self.projection_bias)
        scale = _f32(projection.scale) * self.hidden_scale / _f32(self.prev_h.scale)
        zeros = np.zeros((hidden.shape[0], weights.shape[0]), dtype=np.int64)
        output = _matmul_accumulate(hidden, bias, weights, quantize_multiplier(float(scale)), self.prev_h.zero_point,
                                    zeros, (-128, 127))
        proj_clip = float(self.ctx.scalar(_Q_PROJ_CLIP))
        if proj_clip > 0:
            # Android quantizes the projection clip with the projection weights' scale.
            limit = int(min(max(_f32(proj_clip) / _f32(projection.scale), -128.0), 127.0))
            output = np.clip(output, -limit, limit)
        return output


@register_op(Op.QUANTIZED_LSTM, types=(T.TENSOR_QUANT8_ASYMM_SIGNED,))
def quantized_lstm(ctx: OpContext) -> list[np.ndarray]:
    """QUANTIZED_LSTM: one integer LSTM step → output state, cell state, output (see ``_QuantizedLstm``)."""
    return _QuantizedLstm(ctx).run()
