"""Prefixes of a model: the first k operations, with the last one's output as the model output.

Used by the layer-by-layer cross-check (``mobilenet.py --layers``): comparing
two implementations after every operation shows where they start to differ,
which the final softmax alone hides or exaggerates.
"""

from __future__ import annotations

import dataclasses

from vts.hal.enums import OperandLifeTime
from vts.testmodel import TestModel, TestSubgraph


def prefix(model: TestModel, count: int) -> TestModel:
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
    graph = TestSubgraph(tuple(operands), operations, tuple(renumber[i] for i in main.inputs), (renumber[output],))
    examples = tuple(dataclasses.replace(ex, outputs={}) for ex in model.examples)
    return dataclasses.replace(model, name=f"{model.name}_first{count}", main=graph, examples=examples)
