"""The caching family's models (VTS CompilationCachingTests.cpp's fixture), built by nnvts with independent goldens.

* MobileNet v1 (float32 and uint8), where the suite uses the corpus's
  ``mobilenet_224_gender_basic_fixed`` and ``mobilenet_quantized``: the
  deterministic builders of ``vts.model.builtin.mobilenet`` at 64x64, width 0.5
  (every layer kind, ~1 MB of constants for the data cache, fast enough for
  a hundred save/restore cycles), goldens from ``vts.model.builtin.mobilenet_oracle``.
* The TOCTOU/replace chains: 100 ADD (or MUL) operations on ``[1]`` tensors,
  each with a ``[1]`` constant of logical value 1 and one shared activation
  constant 0.  ADD turns input 1 into 101, MUL leaves it at 1, so a model
  restored from the wrong cache shows at once.  Quant8: ADD's constant has
  scale 1.0 (stored 1), MUL's scale 0.5 (stored 2); every tensor scale 1.0,
  zero point 0.
"""

from __future__ import annotations

import functools

import numpy as np

from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType
from vts.model.builtin.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8
from vts.model.builtin.mobilenet_oracle import with_golden
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, CaseOperation, CaseSubgraph, TensorData

MOBILENET_SIZE = 64
MOBILENET_ALPHA = 0.5
CHAIN_LENGTH = 100


@functools.lru_cache(maxsize=2)
def mobilenet(quantized: bool) -> CaseModel:
    build = build_mobilenet_v1_quant8 if quantized else build_mobilenet_v1_float
    return with_golden(build(MOBILENET_SIZE, alpha=MOBILENET_ALPHA), MOBILENET_SIZE, alpha=MOBILENET_ALPHA)


@functools.lru_cache(maxsize=4)
def chain(operation: str, quantized: bool, length: int = CHAIN_LENGTH) -> CaseModel:
    """``length`` ADD or MUL operations, each with a constant of logical value 1 (see module docstring)."""
    life = OperandLifeTime
    tensor = int(OperandType.TENSOR_QUANT8_ASYMM if quantized else OperandType.TENSOR_FLOAT32)
    dtype = np.uint8 if quantized else np.float32
    scale = 1.0 if quantized else 0.0
    if quantized and operation == "MUL":
        constant = CaseOperand("one", tensor, (1,), life.CONSTANT_COPY, 0.5, 0, np.array([2], dtype))
    else:
        constant = CaseOperand("one", tensor, (1,), life.CONSTANT_COPY, scale, 0, np.array([1], dtype))
    operands = [
        CaseOperand("input", tensor, (1,), life.SUBGRAPH_INPUT, scale),
        constant,
        CaseOperand("act", int(OperandType.INT32), (), life.CONSTANT_COPY, value=np.array([0], np.int32)),
    ]
    op_type = int(OperationType[operation])
    operations = []
    previous = 0
    for k in range(length):
        last = k == length - 1
        operands.append(CaseOperand("output" if last else f"t{k}", tensor, (1,),
                                    life.SUBGRAPH_OUTPUT if last else life.TEMPORARY_VARIABLE, scale))
        operations.append(CaseOperation(op_type, (previous, 1, 2), (len(operands) - 1,)))
        previous = len(operands) - 1
    main = CaseSubgraph(tuple(operands), tuple(operations), (0,), (previous,))
    result = 1 + length if operation == "ADD" else 1
    example = CaseExample("", {0: TensorData((1,), np.array([1], dtype))},
                          {0: TensorData((1,), np.array([result], dtype))})
    return CaseModel("caching", f"{operation.lower()}_chain_{'quant8' if quantized else 'float32'}",
                     HalVersion.V1_0, main, (), (example,))
