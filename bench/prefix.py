"""Parts of a model for the layer-by-layer cross-check (``mobilenet.py --layers``).

``prefix``: the first k operations, the last one's output as the model
output (how far two implementations have drifted apart after k layers);
``single``: one operation fed a given input (how much that layer alone
disagrees).  The final softmax alone hides or exaggerates both.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vts.hal.enums import OperandLifeTime
from vts.model.casemodel import CaseExample, CaseModel, CaseSubgraph, TensorData


def prefix(model: CaseModel, count: int) -> CaseModel:
    """``model`` cut after ``count`` operations; operands no kept operation uses are dropped."""
    main = model.main
    operations = main.operations[:count]
    output = operations[-1].outputs[0]
    used = sorted({*main.inputs, *(i for op in operations for i in (*op.inputs, *op.outputs))})
    renumber = {old: new for new, old in enumerate(used)}
    operands = []
    for old in used:
        operand = main.operands[old]
        if old == output:
            operand = dataclasses.replace(operand, lifetime=OperandLifeTime.SUBGRAPH_OUTPUT)
        elif operand.lifetime == OperandLifeTime.SUBGRAPH_OUTPUT:
            operand = dataclasses.replace(operand, lifetime=OperandLifeTime.TEMPORARY_VARIABLE)
        operands.append(operand)
    operations = tuple(
        dataclasses.replace(op, inputs=tuple(renumber[i] for i in op.inputs),
                            outputs=tuple(renumber[i] for i in op.outputs))
        for op in operations
    )
    graph = CaseSubgraph(tuple(operands), operations, tuple(renumber[i] for i in main.inputs), (renumber[output],))
    examples = tuple(dataclasses.replace(ex, outputs={}) for ex in model.examples)
    return dataclasses.replace(model, name=f"{model.name}_first{count}", main=graph, examples=examples)


def single(model: CaseModel, index: int, value: np.ndarray) -> CaseModel:
    """Operation ``index`` alone, its first input made the model input with example ``value``.

    Feeding two implementations the same intermediate tensor isolates one
    layer's disagreement from what the layers before it accumulated.
    """
    main = model.main
    op = main.operations[index]
    source, output = op.inputs[0], op.outputs[0]
    used = sorted({*op.inputs, *op.outputs})
    renumber = {old: new for new, old in enumerate(used)}
    operands = []
    for old in used:
        operand = main.operands[old]
        if old == source:
            operand = dataclasses.replace(operand, lifetime=OperandLifeTime.SUBGRAPH_INPUT, value=None)
        elif old == output:
            operand = dataclasses.replace(operand, lifetime=OperandLifeTime.SUBGRAPH_OUTPUT)
        operands.append(operand)
    operation = dataclasses.replace(op, inputs=tuple(renumber[i] for i in op.inputs),
                                    outputs=tuple(renumber[i] for i in op.outputs))
    graph = CaseSubgraph(tuple(operands), (operation,), (renumber[source],), (renumber[output],))
    example = CaseExample("", {0: TensorData(tuple(value.shape), value.reshape(-1))}, {})
    return dataclasses.replace(model, name=f"{model.name}_op{index}", main=graph, examples=(example,))
