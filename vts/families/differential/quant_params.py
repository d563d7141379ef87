"""Drawn quantization parameters: the scales and zero points the corpus never uses.

The corpus's quantized arithmetic uses a few parameter sets (zero points
of 128 or 0 with narrow output ranges), so an implementation whose
integer intermediates are too narrow saturates the same way as a correct
one on every case: a quant8 MUL that keeps ``(a - za) * (b - zb)`` in 16
bits is right wherever the corpus looks.  The scales and zero points are
part of the model, so varying them means new models: for models made
only of operations whose quantized operands may take any parameters
(ADD, SUB, MUL: HAL 1.0 quantized arithmetic; MUL's one rule is an output
scale above the product of the input scales), every quantized tensor
operand gets a drawn zero point (the first set at the type's ends, where
``x - zeroPoint`` is widest; the second anywhere) and a drawn scale,
outputs a wide one (up to 64 times the widest input scale, or 1024 times
the product for MUL, so that products past 16 bits land inside the
output's range), and the inputs are drawn over the type's
whole range.  The oracle computes each drawn model as it computes any.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as O
from vts.hal.enums import is_scalar_type
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, TensorData, dtype_of

#: Parameter sets drawn per eligible model (each its own preparation on the driver and the oracle).
QUANT_DRAWS = 3
_FREE = {int(O.ADD), int(O.SUB), int(O.MUL)}
_RANGES = {int(T.TENSOR_QUANT8_ASYMM): (0, 255), int(T.TENSOR_QUANT8_ASYMM_SIGNED): (-128, 127)}


def eligible(model: CaseModel) -> bool:
    """Only free-parameter quantized arithmetic, one subgraph, every tensor operand quant8 (asymm or signed)."""
    if model.referenced or model.expect_failure or not model.main.operations:
        return False
    if any(op.type not in _FREE for op in model.main.operations):
        return False
    tensors = [o for o in model.main.operands if isinstance(o.type, int) and not is_scalar_type(o.type)]
    return bool(tensors) and all(o.type in _RANGES for o in tensors)


def _zero_point(rng: np.random.Generator, kind: int, draw: int) -> int:
    """Draw 0: an end of the type's range (the widest ``x - zeroPoint``); 1: anywhere; later: any of those."""
    lo, hi = _RANGES[kind]
    style = draw if draw < 2 else int(rng.integers(3))
    if style == 0:
        return int(lo if rng.integers(2) else hi)
    if style == 1:
        return int(rng.integers(lo, hi + 1))
    return (lo + hi + 1) // 2


def _scale(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def drawn_model(model: CaseModel, rng: np.random.Generator, draw: int) -> CaseModel:
    """``model`` with every quant8 tensor operand given drawn parameters (sources first, in operation order)."""
    operands = list(model.main.operands)
    produced = {o for op in model.main.operations for o in op.outputs}

    def redraw(index: int, scale: float) -> None:
        operand = operands[index]
        operands[index] = dataclasses.replace(operand, scale=scale,
                                              zero_point=_zero_point(rng, int(operand.type), draw))  # type: ignore[arg-type]

    for index, operand in enumerate(operands):
        if index not in produced and operand.type in _RANGES:
            redraw(index, _scale(rng, 2.0 ** -8, 2.0))
    for op in model.main.operations:
        a, b = operands[op.inputs[0]].scale, operands[op.inputs[1]].scale
        if op.type == O.MUL:
            scale = _scale(rng, a * b * 1.5, a * b * 1024)
        else:
            scale = _scale(rng, max(a, b) / 2, max(a, b) * 64)
        redraw(op.outputs[0], scale)
    main = dataclasses.replace(model.main, operands=tuple(operands))
    return dataclasses.replace(model, name=f"{model.name}.quant_params{draw}", main=main)


def full_range_example(model: CaseModel, rng: np.random.Generator, name: str) -> CaseExample:
    """The first example's inputs redrawn over their type's whole range (outputs sized like the first's)."""
    base = model.examples[0]
    inputs = {}
    for position, data in base.inputs.items():
        operand: CaseOperand = model.main.operands[model.main.inputs[position]]
        if operand.type in _RANGES:
            lo, hi = _RANGES[int(operand.type)]  # type: ignore[arg-type]
            inputs[position] = TensorData(data.dims, rng.integers(lo, hi + 1, size=tuple(data.dims)).astype(
                dtype_of(operand.type)))
        else:
            inputs[position] = data
    return CaseExample(name, inputs, dict(base.outputs))


def describe(model: CaseModel) -> str:
    """The drawn parameters of the model's inputs and outputs, for a failure's reason."""
    main = model.main
    shown = [*main.inputs, *main.outputs]
    return ", ".join(f"{main.operands[i].name or i}: scale {main.operands[i].scale:g}, zero point "
                     f"{main.operands[i].zero_point}" for i in shown)
