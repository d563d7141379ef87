"""Synthetic models built by nnvts itself, with closed-form goldens.

Device-level families need models of a known cost and a known answer
without a spec file: the caching suite's chain of 100 ADD operations (whose
output is input + 100), or a chain long enough that a 5 ms deadline cannot
be met, for the deadline and priority behaviour tests.  Goldens are
arithmetic on the chain (input + n * step), never a driver's output.
"""

from __future__ import annotations

import numpy as np

from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, CaseOperation, CaseSubgraph, TensorData


def add_chain(name: str, length: int, size: int, step: float = 1.0, start: float = 1.0,
              operand_type: OperandType = OperandType.TENSOR_FLOAT32) -> CaseModel:
    """``out = in + length * step`` computed by ``length`` ADD operations on ``[size]`` tensors.

    Float32 only for large chains: every intermediate is an integer below
    2**24, so the sum is exact and the golden needs no tolerance argument.
    """
    lifetime = OperandLifeTime
    operands = [
        CaseOperand("input", int(operand_type), (size,), lifetime.SUBGRAPH_INPUT),
        CaseOperand("step", int(operand_type), (1,), lifetime.CONSTANT_COPY, value=np.array([step], np.float32)),
        CaseOperand("act", int(OperandType.INT32), (), lifetime.CONSTANT_COPY, value=np.array([0], np.int32)),
    ]
    operations = []
    previous = 0
    for k in range(length):
        last = k == length - 1
        operands.append(CaseOperand("output" if last else f"t{k}", int(operand_type), (size,),
                                    lifetime.SUBGRAPH_OUTPUT if last else lifetime.TEMPORARY_VARIABLE))
        current = len(operands) - 1
        operations.append(CaseOperation(int(OperationType.ADD), (previous, 1, 2), (current,)))
        previous = current
    main = CaseSubgraph(tuple(operands), tuple(operations), (0,), (len(operands) - 1,))
    data = np.full(size, start, dtype=np.float32)
    golden = data + np.float32(length * step)
    example = CaseExample("", {0: TensorData((size,), data)}, {0: TensorData((size,), golden)})
    return CaseModel(spec="synthetic", name=name, hal_version=HalVersion.V1_0, main=main, referenced=(),
                     examples=(example,))
