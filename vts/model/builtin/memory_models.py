"""The memory-domain suite's test models, built by nnvts itself (VTS MemoryDomainTests.cpp's fixture).

VTS's MemoryDomainTest builds two tiny models around one test operand,
``[1, 32, 32, 8]`` of the parameter type (scale 0.5 and zero point 0 for the
quantized types):

* a CONV_2D model (``copies`` independent convolutions, each with its own
  input and output, so a 2-copy model has inputs {0, 1} and outputs {0, 1});
  output dims and quantization equal the input's;
* an ADD model whose activation is a model *input* (a scalar role, ioIndex 2)
  and whose tensors can take any rank.

The memory-domain tests never check values, so constants are zeros; the
conv filter is CONSTANT_COPY as in VTS (``to_hal_model`` must be called with
``ConstantPolicy(mode="as_written")`` to keep it there).
"""

from __future__ import annotations

import numpy as np

from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType
from vts.model.casemodel import CaseModel, CaseOperand, CaseOperation, CaseSubgraph

#: The four parameter types of the suite, in VTS order.
TEST_TYPES = (
    OperandType.TENSOR_FLOAT32,
    OperandType.TENSOR_FLOAT16,
    OperandType.TENSOR_QUANT8_ASYMM,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
)
TEST_DIMS = (1, 32, 32, 8)
#: ConflictOperandType's partner type for each test type.
CONFLICT_TYPE = {
    OperandType.TENSOR_FLOAT32: OperandType.TENSOR_FLOAT16,
    OperandType.TENSOR_FLOAT16: OperandType.TENSOR_FLOAT32,
    OperandType.TENSOR_QUANT8_ASYMM: OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: OperandType.TENSOR_QUANT8_ASYMM,
}
_ELEMENT_BYTES = {
    OperandType.TENSOR_FLOAT32: 4,
    OperandType.TENSOR_FLOAT16: 2,
    OperandType.TENSOR_QUANT8_ASYMM: 1,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 1,
}
_DTYPES = {
    OperandType.TENSOR_FLOAT32: np.float32,
    OperandType.TENSOR_FLOAT16: np.float16,
    OperandType.TENSOR_QUANT8_ASYMM: np.uint8,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: np.int8,
}


def is_quantized(operand_type: OperandType) -> bool:
    return operand_type in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


class OperandSpec:
    """The suite's test operand: type, dims, scale, zero point (a value object)."""

    __slots__ = ("dims", "scale", "type", "zero_point")

    def __init__(self, operand_type: OperandType, dims: tuple[int, ...] = TEST_DIMS, scale: float | None = None,
                 zero_point: int = 0) -> None:
        self.type = OperandType(operand_type)
        self.dims = tuple(dims)
        self.scale = (0.5 if is_quantized(self.type) else 0.0) if scale is None else scale
        self.zero_point = zero_point

    def replace(self, **changes: object) -> OperandSpec:
        values = {"operand_type": self.type, "dims": self.dims, "scale": self.scale, "zero_point": self.zero_point}
        values.update(changes)
        return OperandSpec(**values)  # type: ignore[arg-type]

    @property
    def element_bytes(self) -> int:
        return _ELEMENT_BYTES[self.type]

    def size_of(self, dims: tuple[int, ...] | None = None) -> int:
        """Bytes of a tensor of ``dims`` (default: the operand's own)."""
        return int(np.prod(dims or self.dims)) * self.element_bytes

    @property
    def data_size(self) -> int:
        """kTestOperandDataSize: 8192 elements of the type (batch taken as 1 if unknown)."""
        return self.size_of(tuple(d or 1 for d in self.dims))

    def operand(self, name: str, lifetime: OperandLifeTime) -> CaseOperand:
        return CaseOperand(name, int(self.type), self.dims, lifetime, self.scale, self.zero_point)


def _constant(name: str, operand_type: OperandType, dims: tuple[int, ...], scale: float = 0.0,
              zero_point: int = 0) -> CaseOperand:
    dtype = _DTYPES.get(operand_type, np.int32)
    value = np.zeros(int(np.prod(dims)) if dims else 1, dtype=dtype)
    return CaseOperand(name, int(operand_type), dims, OperandLifeTime.CONSTANT_COPY, scale, zero_point, value)


def _scalar(name: str, value: int) -> CaseOperand:
    return CaseOperand(name, int(OperandType.INT32), (), OperandLifeTime.CONSTANT_COPY,
                       value=np.array([value], dtype=np.int32))


def conv_model(spec: OperandSpec, copies: int = 1) -> CaseModel:
    """``copies`` independent CONV_2D(input, filter [8,3,3,8], bias [8], SAME, stride 1, no activation)."""
    channels = spec.dims[-1]
    quant = is_quantized(spec.type)
    operands: list[CaseOperand] = []
    operations = []
    inputs, outputs = [], []
    for copy in range(copies):
        base = len(operands)
        operands += [
            spec.operand(f"input{copy}", OperandLifeTime.SUBGRAPH_INPUT),
            _constant(f"filter{copy}", spec.type, (8, 3, 3, channels), 1.0 if quant else 0.0, 0),
            _constant(f"bias{copy}", OperandType.TENSOR_INT32 if quant else spec.type, (8,),
                      spec.scale * 1.0 if quant else 0.0),
            _scalar(f"padding{copy}", 1),  # ANEURALNETWORKS_PADDING_SAME
            _scalar(f"stride_w{copy}", 1),
            _scalar(f"stride_h{copy}", 1),
            _scalar(f"activation{copy}", 0),
            spec.operand(f"output{copy}", OperandLifeTime.SUBGRAPH_OUTPUT),
        ]
        operations.append(CaseOperation(int(OperationType.CONV_2D), tuple(range(base, base + 7)), (base + 7,)))
        inputs.append(base)
        outputs.append(base + 7)
    main = CaseSubgraph(tuple(operands), tuple(operations), tuple(inputs), tuple(outputs))
    return CaseModel(spec="memory_domain", name=f"conv_x{copies}", hal_version=HalVersion.V1_3, main=main,
                     referenced=(), examples=())


def add_model(spec: OperandSpec) -> CaseModel:
    """ADD(input0, input1, activation) with the activation an INT32 scalar *model input* (ioIndex 2)."""
    operands = (
        spec.operand("input0", OperandLifeTime.SUBGRAPH_INPUT),
        spec.operand("input1", OperandLifeTime.SUBGRAPH_INPUT),
        CaseOperand("activation", int(OperandType.INT32), (), OperandLifeTime.SUBGRAPH_INPUT),
        spec.operand("output", OperandLifeTime.SUBGRAPH_OUTPUT),
    )
    main = CaseSubgraph(operands, (CaseOperation(int(OperationType.ADD), (0, 1, 2), (3,)),), (0, 1, 2), (3,))
    return CaseModel(spec="memory_domain", name="add", hal_version=HalVersion.V1_3, main=main, referenced=(),
                     examples=())
