"""Building a TFLite flatbuffer with the schema classes LiteRT ships (``ai_edge_litert.schema_py_generated``).

The object API of the generated schema (``ModelT``, ``TensorT``...) is
packed with ``flatbuffers``; this module keeps the bookkeeping a builder
needs (buffers, operator codes, tensor numbering) in one place so the
translation table reads as "which op, which tensors, which options".
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType

import numpy as np

#: TFLite ``BuiltinOperator`` codes above this are stored only in the newer ``builtinCode`` field.
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127


@functools.cache
def schema() -> ModuleType:
    """The generated TFLite schema module (imported on first use: ``nnvts`` must work without LiteRT)."""
    from ai_edge_litert import schema_py_generated

    return schema_py_generated


@functools.cache
def tensor_types() -> dict[np.dtype, int]:
    """numpy dtype -> TFLite ``TensorType`` for constant buffers."""
    tt = schema().TensorType
    return {np.dtype("float32"): tt.FLOAT32, np.dtype("float16"): tt.FLOAT16, np.dtype("int32"): tt.INT32,
            np.dtype("uint8"): tt.UINT8, np.dtype("int8"): tt.INT8, np.dtype("int16"): tt.INT16,
            np.dtype("uint16"): tt.UINT16, np.dtype("bool"): tt.BOOL, np.dtype("int64"): tt.INT64}


class FlatbufferBuilder:
    """One subgraph under construction: tensors, constant buffers, operators."""

    def __init__(self) -> None:
        fb = schema()
        self.fb = fb
        self.tensors: list[object] = []
        self.buffers: list[object] = [fb.BufferT()]  # buffer 0: the schema's "no data" sentinel
        self.operators: list[object] = []
        self._opcodes: dict[int, int] = {}
        self._codes: list[object] = []

    def tensor(self, shape: Sequence[int], tensor_type: int, quantization: object | None = None,
               data: np.ndarray | None = None, name: str = "") -> int:
        """A new tensor (a constant when ``data`` is given); returns its index."""
        t = self.fb.TensorT()
        t.shape = [int(d) for d in shape]
        t.type = tensor_type
        t.name = name or f"t{len(self.tensors)}"
        t.quantization = quantization
        if data is not None:
            buffer = self.fb.BufferT()
            buffer.data = np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<")).view(np.uint8).reshape(-1)
            self.buffers.append(buffer)
            t.buffer = len(self.buffers) - 1
        else:
            t.buffer = 0
        self.tensors.append(t)
        return len(self.tensors) - 1

    def constant(self, value: np.ndarray, quantization: object | None = None) -> int:
        value = np.asarray(value)
        return self.tensor(value.shape, tensor_types()[value.dtype], quantization, value)

    def quantization(self, scales: Sequence[float], zero_points: Sequence[int], axis: int = 0) -> object:
        q = self.fb.QuantizationParametersT()
        q.scale = [float(s) for s in scales]
        q.zeroPoint = [int(z) for z in zero_points]
        q.quantizedDimension = int(axis)
        return q

    def operator(self, name: str, inputs: Sequence[int], outputs: Sequence[int], options: str | None = None,
                 **fields: object) -> None:
        """Append builtin operator ``name`` (a ``BuiltinOperator`` member) with ``options`` table fields."""
        code = getattr(self.fb.BuiltinOperator, name)
        if code not in self._opcodes:
            opcode = self.fb.OperatorCodeT()
            opcode.builtinCode = code
            opcode.deprecatedBuiltinCode = min(code, _PLACEHOLDER_FOR_GREATER_OP_CODES)
            opcode.version = 1
            self._opcodes[code] = len(self._codes)
            self._codes.append(opcode)
        op = self.fb.OperatorT()
        op.opcodeIndex = self._opcodes[code]
        op.inputs = [int(i) for i in inputs]
        op.outputs = [int(i) for i in outputs]
        if options is not None:
            table = getattr(self.fb, options + "T")()
            for key, value in fields.items():
                if not hasattr(table, key):
                    raise AttributeError(f"{options} has no field {key}")
                setattr(table, key, value)
            op.builtinOptionsType = getattr(self.fb.BuiltinOptions, options)
            op.builtinOptions = table
        self.operators.append(op)

    def finish(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        import flatbuffers

        graph = self.fb.SubGraphT()
        graph.tensors = self.tensors
        graph.inputs = [int(i) for i in inputs]
        graph.outputs = [int(i) for i in outputs]
        graph.operators = self.operators
        graph.name = "main"
        model = self.fb.ModelT()
        model.version = 3
        model.operatorCodes = self._codes
        model.subgraphs = [graph]
        model.buffers = self.buffers
        model.description = "nnvts litert driver"
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())
