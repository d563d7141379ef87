"""Sequence RNN and LSTM operations (HAL 1.2, final-state outputs from 1.3).

UNIDIRECTIONAL_SEQUENCE_RNN / _LSTM run one cell over every time step;
BIDIRECTIONAL_SEQUENCE_RNN / _LSTM run a forward and a backward cell and
either return both outputs or concatenate them along the last axis
(``merge_outputs``).  ``time_major`` false means [batch, time, features]:
the op transposes to time-major, runs, and transposes back, as Android's
``transposeFirstTwoDimensions`` does.

Bidirectional auxiliary inputs follow NeuralNetworks.h's three linking
modes: no aux input (plain), aux input with aux weights (cross linking: both
directions add aux·Wauxᵀ), aux input without aux weights (parallel linking:
the backward cell reads the aux input instead of the input).  From HAL 1.3
the final states may be requested as extra outputs.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.lstm import LstmCell, LstmLayout, check_states, lstm_sequence, read_cell
from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.ops.rnn import FLOAT_TYPES, expect_shape, float_input, optional_float_input, rnn_step
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperationType as Op


def _time_major_input(ctx: OpContext, index: int, time_major: bool) -> np.ndarray:
    x = float_input(ctx, index)
    if x.ndim != 3:
        raise op_failure(f"{ctx.name}: input {index} must be 3-D, got rank {x.ndim}")
    return x if time_major else x.transpose(1, 0, 2)


def _layout_back(outputs: np.ndarray, time_major: bool) -> np.ndarray:
    return outputs if time_major else outputs.transpose(1, 0, 2)


def _cast(ctx: OpContext, arrays: list[np.ndarray]) -> list[np.ndarray]:
    if len(arrays) != len(ctx.outputs):
        raise op_failure(f"{ctx.name}: model declares {len(ctx.outputs)} outputs, this form has {len(arrays)}")
    return [a.astype(ctx.output(i).dtype) for i, a in enumerate(arrays)]


# ----------------------------------------------------------------------------- RNN


def _rnn_over_time(ctx: OpContext, x: np.ndarray, hidden: np.ndarray, weights: np.ndarray, recurrent: np.ndarray,
                   bias: np.ndarray, activation: int, aux: np.ndarray | None = None,
                   aux_weights: np.ndarray | None = None, forward: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Time-major RNN loop; returns outputs [time, batch, units] and the final hidden state."""
    units = weights.shape[0]
    expect_shape(ctx, "weights", weights, (units, x.shape[2]))
    expect_shape(ctx, "recurrent weights", recurrent, (units, units))
    expect_shape(ctx, "bias", bias, (units,))
    expect_shape(ctx, "hidden state", hidden, (x.shape[1], units))
    if aux is not None and aux_weights is not None:
        expect_shape(ctx, "aux weights", aux_weights, (units, aux.shape[2]))
    outputs = np.zeros((x.shape[0], x.shape[1], units), dtype=np.float32)
    for t in range(x.shape[0]) if forward else range(x.shape[0] - 1, -1, -1):
        step_aux = None if aux is None else aux[t]
        hidden = rnn_step(x[t], hidden, weights, recurrent, bias, activation, ctx.name, step_aux, aux_weights)
        outputs[t] = hidden
    return outputs, hidden


@register_op(Op.UNIDIRECTIONAL_SEQUENCE_RNN, types=FLOAT_TYPES)
def unidirectional_sequence_rnn(ctx: OpContext) -> list[np.ndarray]:
    """Inputs: x, W, R, b, h₀, activation, time_major → outputs [, final hidden state (1.3)]."""
    time_major = bool(ctx.scalar(6))
    x = _time_major_input(ctx, 0, time_major)
    outputs, hidden = _rnn_over_time(ctx, x, float_input(ctx, 4), float_input(ctx, 1), float_input(ctx, 2),
                                     float_input(ctx, 3), int(ctx.scalar(5)))
    results = [_layout_back(outputs, time_major)]
    if len(ctx.outputs) > 1:
        results.append(hidden)
    return _cast(ctx, results)


def _linking(ctx: OpContext, aux_input: int, aux_weights: tuple[int, ...]) -> str:
    """NeuralNetworks.h linking mode from which auxiliary tensors are present."""
    has_input = optional_float_input(ctx, aux_input) is not None
    has_weights = [optional_float_input(ctx, i) is not None for i in aux_weights]
    if any(has_weights) and not has_input:
        raise op_failure(f"{ctx.name}: auxiliary weights given without an auxiliary input")
    if not has_input:
        return "none"
    return "cross" if any(has_weights) else "parallel"


@register_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, types=FLOAT_TYPES)
def bidirectional_sequence_rnn(ctx: OpContext) -> list[np.ndarray]:
    """15 inputs: x; fw W, R, b, h; bw W, R, b, h; aux x, fw aux W, bw aux W; act, time_major, merge."""
    activation, time_major, merge = int(ctx.scalar(12)), bool(ctx.scalar(13)), bool(ctx.scalar(14))
    x = _time_major_input(ctx, 0, time_major)
    mode = _linking(ctx, 9, (10, 11))
    aux = _time_major_input(ctx, 9, time_major) if mode != "none" else None
    if aux is not None and aux.shape[:2] != x.shape[:2]:
        raise op_failure(f"{ctx.name}: aux input time/batch dims differ from the input's")
    if mode == "cross" and (optional_float_input(ctx, 10) is None or optional_float_input(ctx, 11) is None):
        raise op_failure(f"{ctx.name}: cross linking needs both forward and backward aux weights")
    fw_aux_w = optional_float_input(ctx, 10) if mode == "cross" else None
    bw_aux_w = optional_float_input(ctx, 11) if mode == "cross" else None
    fw_out, fw_h = _rnn_over_time(ctx, x, float_input(ctx, 4), float_input(ctx, 1), float_input(ctx, 2),
                                  float_input(ctx, 3), activation, aux if mode == "cross" else None, fw_aux_w)
    bw_x = aux if mode == "parallel" and aux is not None else x
    bw_out, bw_h = _rnn_over_time(ctx, bw_x, float_input(ctx, 8), float_input(ctx, 5), float_input(ctx, 6),
                                  float_input(ctx, 7), activation, aux if mode == "cross" else None, bw_aux_w,
                                  forward=False)
    results = _directional_outputs(fw_out, bw_out, merge, time_major)
    if len(ctx.outputs) > len(results):
        results += [fw_h, bw_h]
    return _cast(ctx, results)


def _directional_outputs(fw: np.ndarray, bw: np.ndarray, merge: bool, time_major: bool) -> list[np.ndarray]:
    if merge:
        return [_layout_back(np.concatenate([fw, bw], axis=2), time_major)]
    return [_layout_back(fw, time_major), _layout_back(bw, time_major)]


# ----------------------------------------------------------------------------- LSTM


def _check_lstm_input(ctx: OpContext, cell: LstmCell, x: np.ndarray, what: str) -> None:
    expected = cell.output_gate.input_weights.shape[1]
    if x.shape[2] != expected:
        raise op_failure(f"{ctx.name}: {what} has {x.shape[2]} features, weights expect {expected}")


@register_op(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, types=FLOAT_TYPES)
def unidirectional_sequence_lstm(ctx: OpContext) -> list[np.ndarray]:
    """28 inputs: LSTM's 0-19, activation, cell clip, proj clip, time_major, 4 layer-norm weights.

    Outputs: output [, final output state, final cell state (1.3)].
    """
    time_major = bool(ctx.scalar(23))
    x = _time_major_input(ctx, 0, time_major)
    layout = LstmLayout(weights=1, layer_norm=24 if ctx.num_inputs >= 28 else None)
    cell = read_cell(ctx, layout, int(ctx.scalar(20)), float(ctx.scalar(21)), float(ctx.scalar(22)))
    _check_lstm_input(ctx, cell, x, "input")
    h, c = float_input(ctx, 18), float_input(ctx, 19)
    check_states(ctx, cell, x.shape[1], h, c)
    result = lstm_sequence(cell, x, h, c, ctx.name)
    results = [_layout_back(result.outputs, time_major)]
    if len(ctx.outputs) > 1:
        results += [result.output_state, result.cell_state]
    return _cast(ctx, results)


# Input positions of BIDIRECTIONAL_SEQUENCE_LSTM (61 inputs).
_FW, _BW = 1, 18
_FW_H, _FW_C, _BW_H, _BW_C = 35, 36, 37, 38
_AUX_INPUT, _FW_AUX, _BW_AUX = 39, 40, 44
_ACTIVATION, _CELL_CLIP, _PROJ_CLIP, _MERGE, _TIME_MAJOR = 48, 49, 50, 51, 52
_FW_NORM, _BW_NORM = 53, 57


@register_op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, types=FLOAT_TYPES)
def bidirectional_sequence_lstm(ctx: OpContext) -> list[np.ndarray]:
    """61 inputs → fw output [, bw output unless merged] [, fw h, fw c, bw h, bw c (1.3)].

    Each direction keeps its own variant (CIFG, peephole, projection,
    layer norm) decided by which of its tensors are present.
    """
    time_major, merge = bool(ctx.scalar(_TIME_MAJOR)), bool(ctx.scalar(_MERGE))
    activation = int(ctx.scalar(_ACTIVATION))
    cell_clip, proj_clip = float(ctx.scalar(_CELL_CLIP)), float(ctx.scalar(_PROJ_CLIP))
    x = _time_major_input(ctx, 0, time_major)
    mode = _linking(ctx, _AUX_INPUT, tuple(range(_FW_AUX, _FW_AUX + 8)))
    aux = _time_major_input(ctx, _AUX_INPUT, time_major) if mode != "none" else None
    if aux is not None and aux.shape[:2] != x.shape[:2]:
        raise op_failure(f"{ctx.name}: aux input time/batch dims differ from the input's")
    has_norm = ctx.num_inputs >= 61
    fw_layout = LstmLayout(_FW, _FW_NORM if has_norm else None, _FW_AUX if mode == "cross" else None)
    bw_layout = LstmLayout(_BW, _BW_NORM if has_norm else None, _BW_AUX if mode == "cross" else None)
    fw_cell = read_cell(ctx, fw_layout, activation, cell_clip, proj_clip)
    bw_cell = read_cell(ctx, bw_layout, activation, cell_clip, proj_clip)
    bw_x = aux if mode == "parallel" and aux is not None else x
    _check_lstm_input(ctx, fw_cell, x, "input")
    _check_lstm_input(ctx, bw_cell, bw_x, "backward input")
    cross_aux = aux if mode == "cross" else None
    if cross_aux is not None:
        _check_aux_weights(ctx, fw_cell, cross_aux)
        _check_aux_weights(ctx, bw_cell, cross_aux)
    fw_h, fw_c = float_input(ctx, _FW_H), float_input(ctx, _FW_C)
    bw_h, bw_c = float_input(ctx, _BW_H), float_input(ctx, _BW_C)
    check_states(ctx, fw_cell, x.shape[1], fw_h, fw_c)
    check_states(ctx, bw_cell, x.shape[1], bw_h, bw_c)
    fw = lstm_sequence(fw_cell, x, fw_h, fw_c, ctx.name, cross_aux)
    bw = lstm_sequence(bw_cell, bw_x, bw_h, bw_c, ctx.name, cross_aux, forward=False)
    results = _directional_outputs(fw.outputs, bw.outputs, merge, time_major)
    if len(ctx.outputs) > len(results):
        results += [fw.output_state, fw.cell_state, bw.output_state, bw.cell_state]
    return _cast(ctx, results)


def _check_aux_weights(ctx: OpContext, cell: LstmCell, aux: np.ndarray) -> None:
    gates = [g for g in (cell.input_gate, cell.forget_gate, cell.cell_gate, cell.output_gate) if g is not None]
    if any(g.aux_weights is None for g in gates):
        raise op_failure(f"{ctx.name}: auxiliary weights must be given for every gate in use")
    for gate in gates:
        expect_shape(ctx, "aux input weights", gate.aux_weights, (cell.num_cells, aux.shape[2]))
