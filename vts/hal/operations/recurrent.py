"""Recurrent networks (LSTM and RNN variants, SVDF) and RANDOM_MULTINOMIAL.

Facts from Android 11's ``validateOperation`` switch (LSTM,
BIDIRECTIONAL_SEQUENCE_LSTM, QUANTIZED_16BIT_LSTM, RNN, SVDF,
RANDOM_MULTINOMIAL) and the ``UnidirectionalSequenceLSTM``,
``UnidirectionalSequenceRNN``, ``BidirectionalSequenceRNN`` and ``QLSTM``
validators.  Optional tensors (peepholes, projection, layer normalization)
are still present as NO_VALUE operands of the declared type, so every slot
keeps an exact type.
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
    QAS8,
    QS8,
    QS16,
    V10,
    V12,
    V13,
    OpSpec,
    Signature,
    scalar_of,
    sig,
)

_FLOATS = (F32, F16)


def _lstm() -> tuple[Signature, ...]:
    """23 inputs (1.0), or 27 with the four layer-normalization weights (1.2); 4 outputs."""
    result = []
    for t in _FLOATS:
        base = (t,) * 20 + (INT, scalar_of(t), scalar_of(t))
        result.append(sig(base, (t,) * 4, V10 if t == F32 else V12))
        result.append(sig(base + (t,) * 4, (t,) * 4, V12))
    return tuple(result)


def _bidirectional_lstm(n_in: int, n_out: int) -> list[Signature]:
    """61 inputs; 2 outputs (or 1 when merged), plus 4 final states from 1.3."""
    if n_in != 61 or n_out not in (1, 2, 5, 6):
        return []
    version = V13 if n_out in (5, 6) else V12
    return [
        sig((t,) * 48 + (INT, scalar_of(t), scalar_of(t), BOOL, BOOL) + (t,) * 8, (t,) * n_out, version)
        for t in _FLOATS
    ]


def _unidirectional_lstm() -> tuple[Signature, ...]:
    """28 inputs; the output, plus the final hidden and cell states from 1.3."""
    result = []
    for t in _FLOATS:
        inputs = (t,) * 20 + (INT, scalar_of(t), scalar_of(t), BOOL) + (t,) * 4
        result.append(sig(inputs, (t,), V12))
        result.append(sig(inputs, (t,) * 3, V13))
    return tuple(result)


def _bidirectional_rnn(n_in: int, n_out: int) -> list[Signature]:
    """15 inputs; 2 outputs (or 1 when merged), plus 2 final hidden states from 1.3."""
    if n_in != 15 or n_out not in (1, 2, 3, 4):
        return []
    version = V13 if n_out in (3, 4) else V12
    return [sig((t,) * 12 + (INT, BOOL, BOOL), (t,) * n_out, version) for t in _FLOATS]


def _quantized_16bit_lstm() -> tuple[Signature, ...]:
    inputs = (QA8,) * 9 + (I32,) * 4 + (QS16, QA8)
    return (sig(inputs, (QS16, QA8), V12),)


def _quantized_lstm() -> tuple[Signature, ...]:
    """QUANTIZED_LSTM (1.3): 32 inputs with fixed types, 3 outputs."""
    inputs = (
        (QAS8,)  # input
        + (QS8,) * 8  # input-to-gate and recurrent-to-gate weights
        + (QS16,) * 3  # cell-to-gate (peephole) weights
        + (I32,) * 4  # gate biases
        + (QS8, I32)  # projection weights and bias
        + (QAS8, QS16)  # previous output and cell state
        + (QS16,) * 4  # layer-normalization weights
        + (FLOAT,) * 6  # cell clip, projection clip, 4 intermediate scales
        + (INT, FLOAT)  # hidden state zero point and scale
    )
    return (sig(inputs, (QAS8, QS16, QAS8), V13),)


SPECS: dict[int, OpSpec] = {
    Op.LSTM: OpSpec(_lstm()),
    Op.BIDIRECTIONAL_SEQUENCE_LSTM: OpSpec(
        _bidirectional_lstm, arity="61 inputs and 1, 2, 5 or 6 outputs"
    ),
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: OpSpec(_unidirectional_lstm()),
    Op.RNN: OpSpec(tuple(sig((t,) * 5 + (INT,), (t, t), V10 if t == F32 else V12) for t in _FLOATS)),
    Op.BIDIRECTIONAL_SEQUENCE_RNN: OpSpec(_bidirectional_rnn, arity="15 inputs and 1, 2, 3 or 4 outputs"),
    Op.UNIDIRECTIONAL_SEQUENCE_RNN: OpSpec(tuple(
        sig((t,) * 5 + (INT, INT), (t,) * n_out, V12 if n_out == 1 else V13)
        for t in _FLOATS
        for n_out in (1, 2)
    )),
    Op.SVDF: OpSpec(tuple(sig((t,) * 5 + (INT, INT), (t, t), V10 if t == F32 else V12) for t in _FLOATS)),
    Op.QUANTIZED_16BIT_LSTM: OpSpec(_quantized_16bit_lstm()),
    Op.QUANTIZED_LSTM: OpSpec(_quantized_lstm()),
    Op.RANDOM_MULTINOMIAL: OpSpec(tuple(sig((t, INT, I32), (I32,), V12) for t in _FLOATS)),
}
