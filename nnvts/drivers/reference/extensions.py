"""The reference driver's vendor extension: Android's sample ``com.example.fibonacci``.

A model names extension types by a per-model prefix (high 16 bits) and the
type's id inside the extension (low 16 bits); ``Model.extensionNameToPrefix``
says which prefix is which extension (Android's TypeManager.cpp).  ``ModelExtensions``
decodes that for one model and answers the driver's three questions:

* is the model valid for the extensions this driver declares?  An unknown
  type id, a constant whose length is not ``byteSize`` per element, or
  missing/malformed quantization parameters is INVALID_ARGUMENT -- a driver
  that reads such a model anyway reads past a buffer;
* which operations can it run (the declared extension's known operations);
* how to read an extension operand (its numpy dtype) and run the operation.

An extension the driver does not declare is not an error in the model
(HAL validation cannot know it): its operations are simply unsupported.

Semantics follow Android's FibonacciDriver: input n is an EXAMPLE_INT64
scalar or a one-element TENSOR_FLOAT32 (truncated to an integer) and must be
at least 1; the output ``[n]`` holds 1, 1, 2, 3, 5, ... as TENSOR_FLOAT32
(computed in float32) or EXAMPLE_TENSOR_QUANT64_ASYMM, quantized as
``trunc(fib / scale + zeroPoint)`` with ``{double scale; int64 zeroPoint}``
from the operand's extension parameters.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import (
    EXTENSION_TYPE_HIGH_BITS_PREFIX,
    ErrorStatus,
    OperandLifeTime,
    OperandType,
    is_extension_type,
)
from vts.hal.errors import DriverError
from vts.hal.types import Extension, Model, Operand, OperandTypeInformation, Operation, Subgraph

FIBONACCI_NAME = "com.example.fibonacci"
EXAMPLE_INT64 = 0
EXAMPLE_TENSOR_QUANT64_ASYMM = 1
EXAMPLE_FIBONACCI = 0
#: ``struct {double scale; int64_t zeroPoint;}``, little-endian.
QUANT64_PARAMS = struct.Struct("<dq")

_TYPE_MASK = (1 << EXTENSION_TYPE_HIGH_BITS_PREFIX) - 1
_OPERAND_TYPES = {
    EXAMPLE_INT64: (OperandTypeInformation(EXAMPLE_INT64, False, 8), np.dtype("<i8")),
    EXAMPLE_TENSOR_QUANT64_ASYMM: (OperandTypeInformation(EXAMPLE_TENSOR_QUANT64_ASYMM, True, 8), np.dtype("<u8")),
}


def supported_extensions() -> list[Extension]:
    return [Extension(FIBONACCI_NAME, tuple(info for info, _ in _OPERAND_TYPES.values()))]


def _invalid(message: str) -> DriverError:
    return DriverError(ErrorStatus.INVALID_ARGUMENT, message)


@dataclass(frozen=True, slots=True)
class _OpName:
    name: str


@dataclass(frozen=True, slots=True)
class ExtensionOp:
    """Duck-types ``OpDef`` for the executor: ``type.name`` and ``run``."""

    type: _OpName
    run: Callable[[OpContext], Sequence[np.ndarray]]


class ModelExtensions:
    """How one model's extension types map onto the extensions this driver implements."""

    def __init__(self, model: Model) -> None:
        self.names = {entry.prefix: entry.name for entry in model.extension_name_to_prefix}

    def _ours(self, value: int) -> int | None:
        """The type id inside com.example.fibonacci, or None for base types and other extensions."""
        if not is_extension_type(value) or self.names.get(value >> EXTENSION_TYPE_HIGH_BITS_PREFIX) != FIBONACCI_NAME:
            return None
        return value & _TYPE_MASK

    def dtype(self, operand_type: int) -> np.dtype:
        type_id = self._ours(operand_type)
        return _OPERAND_TYPES[type_id][1] if type_id in _OPERAND_TYPES else np.dtype("u1")

    def is_int64(self, operand_type: int) -> bool:
        return self._ours(operand_type) == EXAMPLE_INT64

    def is_quant64(self, operand_type: int) -> bool:
        return self._ours(operand_type) == EXAMPLE_TENSOR_QUANT64_ASYMM

    # -- validation ---------------------------------------------------------

    def validate(self, model: Model) -> None:
        """INVALID_ARGUMENT for a model that misuses the extension this driver declares."""
        for label, graph in (("main", model.main), *((f"referenced[{i}]", g) for i, g in enumerate(model.referenced))):
            for index, operand in enumerate(graph.operands):
                self._validate_operand(operand, f"{label} operand {index}")
            for index, operation in enumerate(graph.operations):
                type_id = self._ours(operation.type)
                if type_id is None:
                    continue
                if type_id != EXAMPLE_FIBONACCI:
                    raise _invalid(f"{label} operation {index}: {FIBONACCI_NAME} has no operation type {type_id}")
                self._validate_fibonacci(graph, operation, f"{label} operation {index}")

    def _validate_operand(self, operand: Operand, where: str) -> None:
        type_id = self._ours(operand.type)
        if type_id is None:
            return
        if type_id not in _OPERAND_TYPES:
            raise _invalid(f"{where}: {FIBONACCI_NAME} has no operand type {type_id}")
        info, _ = _OPERAND_TYPES[type_id]
        dims = list(operand.dimensions)
        if not info.is_tensor and dims:
            raise _invalid(f"{where}: EXAMPLE_INT64 is a scalar, got dimensions {dims}")
        if type_id == EXAMPLE_TENSOR_QUANT64_ASYMM:
            quant64_params(operand, where)
        if operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            if info.is_tensor and (not dims or 0 in dims):
                raise _invalid(f"{where}: constant extension tensor must be fully specified, got {dims}")
            expected = info.byte_size * math.prod(dims)
            if operand.location.length != expected:
                raise _invalid(f"{where}: constant of {FIBONACCI_NAME} type {type_id} needs {expected} bytes "
                               f"({info.byte_size} per element), location length is {operand.location.length}")

    def _validate_fibonacci(self, graph: Subgraph, operation: Operation, where: str) -> None:
        if len(operation.inputs) != 1 or len(operation.outputs) != 1:
            raise _invalid(f"{where}: EXAMPLE_FIBONACCI takes 1 input and 1 output, got "
                           f"{len(operation.inputs)} and {len(operation.outputs)}")
        source = graph.operands[operation.inputs[0]]
        target = graph.operands[operation.outputs[0]]
        if not (self.is_int64(source.type) or source.type == OperandType.TENSOR_FLOAT32):
            raise _invalid(f"{where}: EXAMPLE_FIBONACCI input must be EXAMPLE_INT64 or TENSOR_FLOAT32")
        if source.type == OperandType.TENSOR_FLOAT32 and source.dimensions and math.prod(source.dimensions) != 1:
            raise _invalid(f"{where}: a TENSOR_FLOAT32 n must hold exactly one element, dims {source.dimensions}")
        if not (self.is_quant64(target.type) or target.type == OperandType.TENSOR_FLOAT32):
            raise _invalid(f"{where}: EXAMPLE_FIBONACCI output must be EXAMPLE_TENSOR_QUANT64_ASYMM or TENSOR_FLOAT32")
        if target.dimensions and len(target.dimensions) != 1:
            raise _invalid(f"{where}: EXAMPLE_FIBONACCI output is 1-D, got dims {target.dimensions}")

    # -- support and execution ---------------------------------------------

    def supports(self, operation: Operation) -> bool:
        return self._ours(operation.type) == EXAMPLE_FIBONACCI

    def bind(self, operation: Operation, graph: Subgraph) -> ExtensionOp | None:
        """The runnable form of an operation of the declared extension (None when not ours)."""
        if not self.supports(operation):
            return None
        target = graph.operands[operation.outputs[0]]
        if self.is_quant64(target.type):
            scale, zero_point = quant64_params(target, "EXAMPLE_FIBONACCI output")
        else:
            scale, zero_point = None, 0

        def run(ctx: OpContext) -> list[np.ndarray]:
            return [fibonacci(_read_n(ctx), scale, zero_point)]

        return ExtensionOp(_OpName("EXAMPLE_FIBONACCI"), run)


def quant64_params(operand: Operand, where: str) -> tuple[float, int]:
    params = operand.extra_params
    if not isinstance(params, bytes | bytearray) or len(params) != QUANT64_PARAMS.size:
        size = len(params) if isinstance(params, bytes | bytearray) else "no"
        raise _invalid(f"{where}: EXAMPLE_TENSOR_QUANT64_ASYMM needs {QUANT64_PARAMS.size} bytes of extension "
                       f"parameters (double scale, int64 zeroPoint), got {size}")
    scale, zero_point = QUANT64_PARAMS.unpack(bytes(params))
    if not math.isfinite(scale) or scale <= 0:
        raise _invalid(f"{where}: EXAMPLE_TENSOR_QUANT64_ASYMM scale must be positive, got {scale}")
    return scale, zero_point


def _read_n(ctx: OpContext) -> int:
    tensor = ctx.tensor(0)
    value = tensor.value.reshape(-1)
    if value.size != 1:
        raise op_failure(f"EXAMPLE_FIBONACCI: n must be one value, got {value.size}")
    if tensor.type == OperandType.TENSOR_FLOAT32:
        real = float(value[0])
        if not math.isfinite(real):
            raise op_failure(f"EXAMPLE_FIBONACCI: n = {real} is not finite")
        return int(real)  # C's static_cast<int64_t>: truncation toward zero
    return int(value[0])


#: Beyond this many elements the output would not fit any request pool worth running.
_MAX_N = 1 << 24


def fibonacci(n: int, scale: float | None, zero_point: int) -> np.ndarray:
    """The first ``n`` Fibonacci numbers (1, 1, 2, ...), float32 or quantized uint64."""
    if n < 1 or n > _MAX_N:
        raise op_failure(f"EXAMPLE_FIBONACCI: n = {n} is outside [1, {_MAX_N}]")
    if scale is None:
        out = np.empty(n, np.float32)
        a, b = np.float32(1), np.float32(1)
        with np.errstate(over="ignore"):
            for i in range(n):
                out[i] = a
                a, b = b, np.float32(a + b)
        return out
    values = []
    a, b = 1, 1
    for _ in range(n):
        values.append(a)
        a, b = b, (a + b) & 0xFFFF_FFFF_FFFF_FFFF  # uint64 arithmetic wraps
    # Android: output[i] = output[i] / scale + zeroPoint, stored back into a uint64 (truncation).
    quantized = [math.trunc(v / scale + zero_point) for v in values]
    return np.array([q % (1 << 64) if q >= 0 else 0 for q in quantized], dtype=np.uint64)
