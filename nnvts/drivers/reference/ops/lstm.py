"""LSTM: the float LSTM cell shared by LSTM and the sequence LSTM operations.

The cell follows Android's ``LSTMCell::LSTMStep`` (itself TFLite's float LSTM):
gates computed in float32 from the input, the optional auxiliary input and
the previous output state; optional peepholes (diagonal cell-to-gate
weights), coupled input-forget gate (CIFG: no input-gate weights, the input
gate is 1 − forget gate), layer normalization (from HAL 1.2: the gate bias is
then added after normalizing), cell clipping and a projection layer with its
own clipping.  An omitted optional tensor selects the variant, as in
``CheckInputTensorDimensions``.  TENSOR_FLOAT16 inputs are widened to
float32 and only the final outputs are rounded back (``LSTMEvalFloat16``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.ops.rnn import FLOAT_TYPES, apply_activation, expect_shape, float_input, sigmoid
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperationType as Op

LAYER_NORM_EPSILON = np.float32(1e-8)  # tflite kLayerNormEpsilon


@dataclass(frozen=True, slots=True)
class Gate:
    """Parameters of one gate: [cells, input] and [cells, output] weights, bias and optional extras."""

    input_weights: np.ndarray
    recurrent_weights: np.ndarray
    bias: np.ndarray
    peephole: np.ndarray | None = None
    layer_norm: np.ndarray | None = None
    aux_weights: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class LstmCell:
    """One direction's LSTM parameters; ``input_gate`` None means CIFG."""

    input_gate: Gate | None
    forget_gate: Gate
    cell_gate: Gate
    output_gate: Gate
    projection: np.ndarray | None
    projection_bias: np.ndarray | None
    activation: int
    cell_clip: float
    proj_clip: float

    @property
    def num_cells(self) -> int:
        return int(self.output_gate.input_weights.shape[0])

    @property
    def num_outputs(self) -> int:
        return int(self.output_gate.recurrent_weights.shape[1])


@dataclass(frozen=True, slots=True)
class LstmLayout:
    """Input positions of one LSTM direction in an operation's input list.

    ``weights`` is the index of input-to-input weights; the 17 tensors of a
    direction follow in NNAPI order (4 input weights, 4 recurrent weights,
    3 peepholes, 4 biases, projection weights and bias).  ``layer_norm``
    and ``aux`` (the 4 aux-input weights) are the first indices of those
    groups, or None when the operation has none.
    """

    weights: int
    layer_norm: int | None = None
    aux: int | None = None


def _optional(ctx: OpContext, index: int | None) -> np.ndarray | None:
    """An optional tensor as float32, or None when omitted (no value, absent, or no elements)."""
    if index is None or index >= ctx.num_inputs or not ctx.has(index) or ctx.array(index).size == 0:
        return None
    return float_input(ctx, index)


def _required(ctx: OpContext, index: int, what: str) -> np.ndarray:
    array = _optional(ctx, index)
    if array is None:
        raise op_failure(f"{ctx.name}: {what} (input {index}) has no value")
    return array


def read_cell(ctx: OpContext, layout: LstmLayout, activation: int, cell_clip: float, proj_clip: float) -> LstmCell:
    """Collect one direction's weights from the inputs; optional ones may be omitted."""
    base = layout.weights
    names = ("input", "forget", "cell", "output")
    gates: dict[str, Gate | None] = {}
    cifg = _optional(ctx, base) is None
    for k, name in enumerate(names):
        if name == "input" and cifg:
            gates[name] = None
            continue
        peephole_index = {"input": base + 8, "forget": base + 9, "output": base + 10}.get(name)
        gates[name] = Gate(
            input_weights=_required(ctx, base + k, f"input-to-{name} weights"),
            recurrent_weights=_required(ctx, base + 4 + k, f"recurrent-to-{name} weights"),
            bias=_required(ctx, base + 11 + k, f"{name} gate bias"),
            peephole=_optional(ctx, peephole_index),
            layer_norm=_optional(ctx, None if layout.layer_norm is None else layout.layer_norm + k),
            aux_weights=_optional(ctx, None if layout.aux is None else layout.aux + k),
        )
    if cell_clip < 0 or proj_clip < 0:
        raise op_failure(f"{ctx.name}: clipping thresholds must be non-negative")
    cell = LstmCell(gates["input"], gates["forget"], gates["cell"], gates["output"],  # type: ignore[arg-type]
                    _optional(ctx, base + 15), _optional(ctx, base + 16), activation, cell_clip, proj_clip)
    check_cell(ctx, cell)
    return cell


def check_cell(ctx: OpContext, cell: LstmCell) -> None:
    """Shape and all-or-none checks of ``LSTMCell::CheckInputTensorDimensions``."""
    n_cell, n_output = cell.num_cells, cell.num_outputs
    n_input = cell.output_gate.input_weights.shape[1]
    gates = [g for g in (cell.input_gate, cell.forget_gate, cell.cell_gate, cell.output_gate) if g is not None]
    for gate in gates:
        expect_shape(ctx, "input weights", gate.input_weights, (n_cell, n_input))
        expect_shape(ctx, "recurrent weights", gate.recurrent_weights, (n_cell, n_output))
        expect_shape(ctx, "gate bias", gate.bias, (n_cell,))
        expect_shape(ctx, "peephole weights", gate.peephole, (n_cell,))
        expect_shape(ctx, "layer norm weights", gate.layer_norm, (n_cell,))
        if gate.aux_weights is not None and gate.aux_weights.shape[0] != n_cell:
            raise op_failure(f"{ctx.name}: aux input weights have {gate.aux_weights.shape[0]} rows, not {n_cell}")
    peepholes = [cell.forget_gate.peephole is not None, cell.output_gate.peephole is not None]
    if cell.input_gate is not None:
        peepholes.append(cell.input_gate.peephole is not None)
    if any(peepholes) and not all(peepholes):
        raise op_failure(f"{ctx.name}: peephole weights must be all present or all omitted")
    norms = [g.layer_norm is not None for g in gates]
    if any(norms) and not all(norms):
        raise op_failure(f"{ctx.name}: layer normalization weights must be all present or all omitted")
    if cell.projection is not None:
        expect_shape(ctx, "projection weights", cell.projection, (n_output, n_cell))
    elif cell.projection_bias is not None:
        raise op_failure(f"{ctx.name}: projection bias given without projection weights")
    elif n_output != n_cell:
        raise op_failure(f"{ctx.name}: output size {n_output} differs from {n_cell} cells without projection")
    expect_shape(ctx, "projection bias", cell.projection_bias, (n_output,))


def _mean_stddev_normalize(x: np.ndarray) -> np.ndarray:
    """tflite ``MeanStddevNormalization`` over the cells of each batch row, in float32."""
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
    variance = np.square(x - mean).mean(axis=-1, keepdims=True, dtype=np.float32)
    return ((x - mean) / np.sqrt(variance + LAYER_NORM_EPSILON)).astype(np.float32)


def _gate_input(gate: Gate, x: np.ndarray, aux: np.ndarray | None, h: np.ndarray,
                c: np.ndarray | None) -> np.ndarray:
    """A gate's pre-activation: matmuls, peephole, then (layer norm · weight + bias) or + bias."""
    total = x @ gate.input_weights.T
    if aux is not None and gate.aux_weights is not None:
        total = total + aux @ gate.aux_weights.T
    total = total + h @ gate.recurrent_weights.T
    if gate.peephole is not None and c is not None:
        total = total + gate.peephole * c
    if gate.layer_norm is not None:
        return (_mean_stddev_normalize(total.astype(np.float32)) * gate.layer_norm + gate.bias).astype(np.float32)
    return (total + gate.bias).astype(np.float32)


@dataclass(frozen=True, slots=True)
class StepResult:
    output: np.ndarray  # [batch, n_output], also the new output state
    cell_state: np.ndarray  # [batch, n_cell]
    scratch: np.ndarray  # [batch, 3 or 4 · n_cell], laid out gate-major as Android's scratch buffer


def lstm_step(cell: LstmCell, x: np.ndarray, h: np.ndarray, c: np.ndarray, name: str,
              aux: np.ndarray | None = None) -> StepResult:
    """One time step for all batches (``LSTMCell::LSTMStep``)."""
    forget = sigmoid(_gate_input(cell.forget_gate, x, aux, h, c))
    candidate = apply_activation(_gate_input(cell.cell_gate, x, aux, h, None), cell.activation, name)
    if cell.input_gate is None:
        input_gate = np.float32(1.0) - forget
    else:
        input_gate = sigmoid(_gate_input(cell.input_gate, x, aux, h, c))
    new_c = (forget * c + input_gate * candidate).astype(np.float32)
    if cell.cell_clip > 0:
        new_c = np.clip(new_c, -np.float32(cell.cell_clip), np.float32(cell.cell_clip))
    out_gate = sigmoid(_gate_input(cell.output_gate, x, aux, h, new_c))
    activated = apply_activation(new_c, cell.activation, name)
    hidden = (out_gate * activated).astype(np.float32)
    if cell.projection is not None:
        output = hidden @ cell.projection.T
        if cell.projection_bias is not None:
            output = output + cell.projection_bias
        output = output.astype(np.float32)
        if cell.proj_clip > 0:
            output = np.clip(output, -np.float32(cell.proj_clip), np.float32(cell.proj_clip))
    else:
        output = hidden
    parts = [activated, input_gate if cell.input_gate is None else forget, hidden]
    if cell.input_gate is not None:
        parts.insert(0, input_gate)
    scratch = np.concatenate([p.reshape(-1) for p in parts]).reshape(x.shape[0], -1)
    return StepResult(output.astype(np.float32), new_c, scratch)


@dataclass(frozen=True, slots=True)
class SequenceResult:
    outputs: np.ndarray  # [time, batch, n_output], time-major, in input time order
    output_state: np.ndarray
    cell_state: np.ndarray
    scratch: np.ndarray


def lstm_sequence(cell: LstmCell, x: np.ndarray, h: np.ndarray, c: np.ndarray, name: str,
                  aux: np.ndarray | None = None, forward: bool = True) -> SequenceResult:
    """Run the cell over time-major input [time, batch, in]; ``forward=False`` walks time backwards.

    The state is carried in float32 between steps, as ``LSTMEvalFloat16``
    does even for half-precision models.
    """
    steps = range(x.shape[0]) if forward else range(x.shape[0] - 1, -1, -1)
    outputs = np.zeros((x.shape[0], x.shape[1], cell.num_outputs), dtype=np.float32)
    scratch = np.zeros((x.shape[1], (3 if cell.input_gate is None else 4) * cell.num_cells), dtype=np.float32)
    for t in steps:
        step = lstm_step(cell, x[t], h, c, name, None if aux is None else aux[t])
        outputs[t], h, c, scratch = step.output, step.output, step.cell_state, step.scratch
    return SequenceResult(outputs, h, c, scratch)


def check_states(ctx: OpContext, cell: LstmCell, batch: int, h: np.ndarray, c: np.ndarray) -> None:
    expect_shape(ctx, "output state", h, (batch, cell.num_outputs))
    expect_shape(ctx, "cell state", c, (batch, cell.num_cells))


@register_op(Op.LSTM, types=FLOAT_TYPES)
def lstm(ctx: OpContext) -> list[np.ndarray]:
    """LSTM (one step): 23 inputs, or 27 with layer normalization (HAL 1.2).

    Outputs: scratch buffer [batch, 3|4 · cells], output state, cell state,
    output.  Inputs 20-22 are the activation, cell clip and projection clip.
    """
    x = float_input(ctx, 0)
    if x.ndim != 2:
        raise op_failure(f"{ctx.name}: input must be 2-D, got rank {x.ndim}")
    layout = LstmLayout(weights=1, layer_norm=23 if ctx.num_inputs >= 27 else None)
    cell = read_cell(ctx, layout, int(ctx.scalar(20)), float(ctx.scalar(21)), float(ctx.scalar(22)))
    expect_shape(ctx, "input", x, (x.shape[0], cell.output_gate.input_weights.shape[1]))
    h, c = float_input(ctx, 18), float_input(ctx, 19)
    check_states(ctx, cell, x.shape[0], h, c)
    step = lstm_step(cell, x, h, c, ctx.name)
    return [step.scratch.astype(ctx.output(0).dtype), step.output.astype(ctx.output(1).dtype),
            step.cell_state.astype(ctx.output(2).dtype), step.output.astype(ctx.output(3).dtype)]
