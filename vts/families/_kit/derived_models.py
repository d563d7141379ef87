"""Model transformations the HAL suite derives at run time (VTS GeneratedTestHarness.cpp).

* ``with_unknown_output_dims``: every main output's dims become 0 (rank
  kept), so the driver must report the shapes (DynamicOutputShapeTest).
* ``signed_twin``: every TENSOR_QUANT8_ASYMM operand becomes
  TENSOR_QUANT8_ASYMM_SIGNED with zero point - 128 and every stored byte
  - 128, inputs, constants and goldens alike (QuantizationCouplingTest).

Goldens stay attached: the twin's expected outputs are the original's
shifted by -128, an exact identity, not something a driver computed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vts.hal.enums import OperandType, OperationType
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, CaseSubgraph, TensorData

QA8 = int(OperandType.TENSOR_QUANT8_ASYMM)
QAS8 = int(OperandType.TENSOR_QUANT8_ASYMM_SIGNED)
#: Operations whose QA8 operands are not "coupled" in the suite (their signed forms do not exist).
_UNCOUPLED = {int(o) for o in (OperationType.HASHTABLE_LOOKUP, OperationType.LSH_PROJECTION, OperationType.PAD_V2,
                               OperationType.CAST, OperationType.QUANTIZED_16BIT_LSTM)}


def with_unknown_output_dims(model: CaseModel) -> CaseModel:
    main = model.main
    outputs = set(main.outputs)
    operands = tuple(dataclasses.replace(o, dims=tuple(0 for _ in o.dims)) if i in outputs else o
                     for i, o in enumerate(main.operands))
    return dataclasses.replace(model, main=dataclasses.replace(main, operands=operands))


def is_coupled(model: CaseModel) -> bool:
    """A single operation with a QA8 input or output, of a kind that has a signed form."""
    main = model.main
    if model.referenced or len(main.operations) != 1:
        return False
    op = main.operations[0]
    if op.type in _UNCOUPLED:
        return False
    return any(main.operands[i].type == QA8 for i in (*op.inputs, *op.outputs))


def _shift(values: np.ndarray) -> np.ndarray:
    return (values.astype(np.int16) - 128).astype(np.int8)


def _twin_operand(operand: CaseOperand) -> CaseOperand:
    if operand.type != QA8:
        return operand
    value = _shift(operand.value) if isinstance(operand.value, np.ndarray) else operand.value
    return dataclasses.replace(operand, type=QAS8, zero_point=operand.zero_point - 128, value=value)


def _twin_side(side: dict[int, TensorData], graph: CaseSubgraph, io: tuple[int, ...]) -> dict[int, TensorData]:
    return {pos: TensorData(data.dims, _shift(data.value)) if graph.operands[io[pos]].type == QA8 else data
            for pos, data in side.items()}


def signed_twin(model: CaseModel) -> CaseModel:
    main = model.main
    twin_main = dataclasses.replace(main, operands=tuple(_twin_operand(o) for o in main.operands))
    examples = tuple(
        CaseExample(e.name, _twin_side(e.inputs, main, main.inputs), _twin_side(e.outputs, main, main.outputs))
        for e in model.examples
    )
    return dataclasses.replace(model, name=f"{model.name}_signed", main=twin_main, examples=examples)
