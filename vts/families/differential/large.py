"""Realistic sizes: models shaped like real networks' layers, against the oracle.

Every model of the specs and the corpus is small (a few hundred elements
at most), so a kernel wrong only past some size (a 20-bit index, a tile
count that overflows, a second pass only large tensors take) passes them
all.  These device-level cases run operations at the sizes real networks
use: millions of elements, hundreds of channels, 112x112 feature maps,
batches above 1, with random inputs (seeded by the case name) and the
oracle's answers as the expected ones (the differential family's
mechanism and tolerances).

They are bounded by a time budget (``RunOptions.large_budget``, ``nnvts
run --large-budget SECONDS``; 0 skips them): cases run, cheapest first,
until the budget one run (or one ``-j`` worker) spends on them is gone;
the rest are skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, CaseOperation, CaseSubgraph, TensorData

_IN, _OUT, _CONST = OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.SUBGRAPH_OUTPUT, OperandLifeTime.CONSTANT_COPY
_REF = OperandLifeTime.CONSTANT_REFERENCE
F32, QA8, I32 = int(OperandType.TENSOR_FLOAT32), int(OperandType.TENSOR_QUANT8_ASYMM), int(OperandType.INT32)


def _scalar(name: str, value: int) -> CaseOperand:
    return CaseOperand(name, I32, (), _CONST, value=np.array([value], np.int32))


def _model(name: str, operands: list[CaseOperand], op: int, op_inputs: tuple[int, ...],
           inputs: tuple[int, ...], rng: np.random.Generator, draw: Callable[[CaseOperand], np.ndarray]) -> CaseModel:
    """One operation whose last operand is the model's output; the example holds random inputs, zero outputs."""
    out = len(operands) - 1
    main = CaseSubgraph(tuple(operands), (CaseOperation(op, op_inputs, (out,)),), inputs, (out,))
    values = {p: TensorData(operands[i].dims, draw(operands[i])) for p, i in enumerate(inputs)}
    sized = {0: TensorData(operands[out].dims, np.zeros(0, np.float32))}
    return CaseModel("large", name, HalVersion.V1_2, main, (), (CaseExample("random", values, sized),))


def _uniform(rng: np.random.Generator) -> Callable[[CaseOperand], np.ndarray]:
    def draw(operand: CaseOperand) -> np.ndarray:
        if operand.type == QA8:
            return rng.integers(0, 256, size=operand.dims).astype(np.uint8)
        return rng.uniform(-2.0, 2.0, size=operand.dims).astype(np.float32)
    return draw


def add_float32(rng: np.random.Generator) -> CaseModel:
    """ADD of two [4, 128, 128, 64] float32 tensors: 4 194 304 elements (a residual connection at batch 4)."""
    dims = (4, 128, 128, 64)
    operands = [CaseOperand("a", F32, dims, _IN), CaseOperand("b", F32, dims, _IN), _scalar("act", 0),
                CaseOperand("out", F32, dims, _OUT)]
    return _model("add_float32_4x128x128x64", operands, int(OperationType.ADD), (0, 1, 2), (0, 1), rng,
                  _uniform(rng))


def mul_quant8(rng: np.random.Generator) -> CaseModel:
    """Quant8 MUL of [2, 64, 128, 128] tensors (2 097 152 elements), zero points 0 and 255, a wide output scale."""
    dims = (2, 64, 128, 128)
    operands = [CaseOperand("a", QA8, dims, _IN, scale=0.05, zero_point=0),
                CaseOperand("b", QA8, dims, _IN, scale=0.02, zero_point=255), _scalar("act", 0),
                CaseOperand("out", QA8, dims, _OUT, scale=0.2, zero_point=100)]
    return _model("mul_quant8_2x64x128x128", operands, int(OperationType.MUL), (0, 1, 2), (0, 1), rng,
                  _uniform(rng))


def conv_float32(rng: np.random.Generator) -> CaseModel:
    """CONV_2D 3x3, SAME, 64 -> 128 channels on [2, 112, 112, 64] (a ResNet stage at batch 2): 3.2M outputs."""
    in_dims, channels = (2, 112, 112, 64), 128
    filt = rng.uniform(-0.1, 0.1, size=(channels, 3, 3, in_dims[3])).astype(np.float32)
    bias = rng.uniform(-1, 1, size=(channels,)).astype(np.float32)
    operands = [CaseOperand("input", F32, in_dims, _IN),
                CaseOperand("filter", F32, filt.shape, _REF, value=filt),
                CaseOperand("bias", F32, bias.shape, _REF, value=bias),
                _scalar("padding", 1), _scalar("stride_w", 1), _scalar("stride_h", 1), _scalar("act", 0),
                CaseOperand("out", F32, (2, 112, 112, channels), _OUT)]
    return _model("conv_2d_float32_2x112x112x64_to_128", operands, int(OperationType.CONV_2D),
                  (0, 1, 2, 3, 4, 5, 6), (0,), rng, _uniform(rng))


@dataclass(frozen=True, slots=True)
class LargeModel:
    name: str
    build: Callable[[np.random.Generator], CaseModel]


#: Cheapest first: the budget cuts the expensive ones.
LARGE_MODELS = (LargeModel("mul_quant8_2x64x128x128", mul_quant8),
                LargeModel("add_float32_4x128x128x64", add_float32),
                LargeModel("conv_2d_float32_2x112x112x64_to_128", conv_float32))
