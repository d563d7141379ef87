"""NNAPI model -> one XLA computation, compiled ahead of time; support asked of XLA one operation at a time.

``lower`` turns a list of NNAPI operations into a Python function of the
input arrays that ``jax.jit`` traces (the handlers are ``nnvts.drivers.xla.ops``);
``compile_program`` lowers it for the exact operand shapes and dtypes on the
backend's device and compiles it (``jax.jit(f).lower(*specs).compile()``):
all of XLA's work happens at preparation, none at the first execution.

Support: an operation is translated alone into a one-operation computation
and compiled; what the translator cannot express exactly (``Unsupported``) or
XLA refuses is the reason it is unsupported.  Unlike the other engine drivers
the probe runs in-process, not in a forked child: XLA reports refusals as
Python exceptions (it does not abort), and forking a process whose XLA
runtime already started its thread pools is unsafe (JAX warns that the child
may deadlock).

Memo: every compiled program is kept (bounded, least recently used first)
under a digest of what defines it: the operations, every operand they touch
(type, dims, quantization, constant bytes), the interface, the relaxed flag,
the backend and the precision.  Preparing the same model again costs a
digest; a one-operation model whose interface is the operation's own (most
of a conformance corpus) is compiled once, by the support probe, and reused
by ``prepare_model``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnvts.drivers.engine.device import EngineFailure, Program, Translator
from nnvts.drivers.engine.nnapi import ModelView, Unsupported
from nnvts.drivers.xla.backend import Backend, jax_module
from nnvts.drivers.xla.ops import HANDLERS, Lowering
from vts.hal.enums import NUMPY_DTYPE, OperandType, OperationType, enum_name, is_scalar_type
from vts.hal.types import Operation, SymmPerChannelQuantParams

#: Compiled programs kept by the memo.
MEMO_SIZE = 512


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


class XlaProgram(Program):
    """A compiled XLA executable for exact input shapes, on one device."""

    def __init__(self, compiled: Any, specs: Sequence[tuple[tuple[int, ...], np.dtype]], backend: Backend,
                 key: bytes) -> None:
        self.compiled = compiled
        self.specs = list(specs)
        self.backend = backend
        self.key = key
        self.jax = jax_module()

    def to_device(self, value: Any) -> Any:
        """``value`` on the program's device (a host array is transferred; a device array stays)."""
        if isinstance(value, self.jax.Array):
            return value
        return self.jax.device_put(np.asarray(value), self.backend.device)

    def dispatch(self, inputs: Sequence[Any]) -> list[Any]:
        """Start the computation; the returned device arrays are ready once ``block_until_ready`` returns."""
        if len(inputs) != len(self.specs):
            raise EngineFailure(f"{len(inputs)} inputs for a program of {len(self.specs)}")
        args = []
        for position, (value, (shape, dtype)) in enumerate(zip(inputs, self.specs, strict=True)):
            if tuple(value.shape) != shape or np.dtype(value.dtype) != dtype:
                raise EngineFailure(f"input {position}: {value.dtype}{list(value.shape)} given, the program was "
                                    f"compiled for {dtype}{list(shape)}")
            args.append(self.to_device(value))
        try:
            return list(self.compiled(*args))
        except Exception as error:  # XlaRuntimeError and friends
            raise EngineFailure(_first_line(error)) from None

    @staticmethod
    def wait(outputs: Sequence[Any]) -> None:
        try:
            for value in outputs:
                value.block_until_ready()
        except Exception as error:
            raise EngineFailure(_first_line(error)) from None

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        outputs = self.dispatch(inputs)
        self.wait(outputs)
        return [np.asarray(value) for value in outputs]


def _operand_doc(view: ModelView, index: int) -> list[Any]:
    operand = view.operand(index)
    extra: Any = None
    if isinstance(operand.extra_params, SymmPerChannelQuantParams):
        extra = [[float(s) for s in operand.extra_params.scales], int(operand.extra_params.channel_dim)]
    constant = None
    if view.is_constant(index):
        constant = hashlib.sha256(view.constant(index).tobytes()).hexdigest()
    return [int(operand.type), [int(d) for d in view.dims(index)], float(operand.scale), int(operand.zero_point),
            extra, view.is_omitted(index), constant]


def describe(view: ModelView, ops: Sequence[Operation], inputs: Sequence[int], outputs: Sequence[int],
             backend: Backend) -> bytes:
    """The digest that identifies a computation: equal digests compile to the same program."""
    touched = sorted({*inputs, *outputs, *(i for op in ops for i in (*op.inputs, *op.outputs))})
    doc = {
        "operands": {str(i): _operand_doc(view, i) for i in touched},
        "operations": [[int(op.type), list(map(int, op.inputs)), list(map(int, op.outputs))] for op in ops],
        "inputs": list(map(int, inputs)), "outputs": list(map(int, outputs)),
        "relaxed": bool(view.model.relax_computation_float32_to_float16),
        "backend": [backend.platform, str(backend.device), backend.precision],
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).digest()


def input_specs(view: ModelView, inputs: Sequence[int]) -> list[tuple[tuple[int, ...], np.dtype]]:
    """Exact (shape, dtype) of each input: XLA compiles for known shapes only."""
    specs = []
    for index in inputs:
        kind = view.type_of(index)
        if kind not in NUMPY_DTYPE:
            raise Unsupported(f"operand type {kind.name} has no XLA element type")
        dims = view.dims(index)
        if not is_scalar_type(kind) and (not dims or 0 in dims):
            raise Unsupported(f"operand {index} has dims {dims}: XLA compiles for exact shapes at preparation")
        specs.append((tuple(int(d) for d in dims), np.dtype(NUMPY_DTYPE[kind])))
    return specs


def lower(view: ModelView, ops: Sequence[Operation], inputs: Sequence[int], outputs: Sequence[int],
          precision: Any) -> Any:
    """A function of the input arrays computing ``outputs`` through ``ops`` (for ``jax.jit``)."""

    def computation(*args: Any) -> list[Any]:
        L = Lowering(view, precision)
        for index, value in zip(inputs, args, strict=True):
            L.values[index] = value
            L.view.shapes[index] = tuple(value.shape)
        for op in ops:
            handler = HANDLERS.get(op.type)
            if handler is None:
                raise Unsupported(f"{enum_name(OperationType, op.type)}: no XLA translation")
            handler(L, op)
        return [L.raw(index) for index in outputs]

    return computation


def compile_program(view: ModelView, ops: Sequence[Operation], inputs: Sequence[int], outputs: Sequence[int],
                    backend: Backend, key: bytes) -> XlaProgram:
    """Lower and compile for the exact shapes; ``Unsupported`` from the translation, ``EngineFailure`` from XLA."""
    jax = jax_module()
    specs = input_specs(view, inputs)
    sharding = jax.sharding.SingleDeviceSharding(backend.device)
    shapes = [jax.ShapeDtypeStruct(shape, dtype, sharding=sharding) for shape, dtype in specs]
    precision = backend.lax_precision(bool(view.model.relax_computation_float32_to_float16))
    function = lower(view, ops, inputs, outputs, precision)
    try:
        lowered = jax.jit(function).lower(*shapes)
    except Unsupported:
        raise
    except Exception as error:  # a tracing error is a translation this driver cannot make
        raise Unsupported(f"XLA cannot trace it: {_first_line(error)}") from None
    try:
        compiled = lowered.compile()
    except Exception as error:
        raise EngineFailure(f"XLA refused to compile it: {_first_line(error)}") from None
    return XlaProgram(compiled, specs, backend, key)


def _interface(view: ModelView, op: Operation) -> list[int]:
    seen: list[int] = []
    for index in op.inputs:
        if not view.is_constant(index) and not view.is_omitted(index) and index not in seen:
            seen.append(index)
    return seen


class XlaTranslator(Translator):
    """Support, compilation and the memo of compiled programs, for one backend."""

    target = "XLA"
    handlers = HANDLERS

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        self.backend = backend
        self._memo: OrderedDict[bytes, XlaProgram] = OrderedDict()
        self._memo_lock = threading.Lock()
        self.compilations = 0  # XLA compilations this translator ran (tests and the report read it)

    # -- memo -----------------------------------------------------------------

    def _remember(self, program: XlaProgram) -> None:
        with self._memo_lock:
            self._memo[program.key] = program
            self._memo.move_to_end(program.key)
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)

    def memo_get(self, key: bytes) -> XlaProgram | None:
        with self._memo_lock:
            program = self._memo.get(key)
            if program is not None:
                self._memo.move_to_end(key)
            return program

    def _compiled(self, view: ModelView, ops: Sequence[Operation], inputs: Sequence[int],
                  outputs: Sequence[int]) -> XlaProgram:
        key = describe(view, ops, inputs, outputs, self.backend)
        program = self.memo_get(key)
        if program is None:
            program = compile_program(view, ops, inputs, outputs, self.backend, key)
            self.compilations += 1
            self._remember(program)
        return program

    # -- support ----------------------------------------------------------------

    def unsupported_reason(self, view: ModelView, op_index: int) -> str | None:
        """Translate and compile the operation alone (in-process; see the module docstring), cached."""
        op = view.graph.operations[op_index]
        name = enum_name(OperationType, op.type)
        if op.type not in self.handlers:
            return f"{name}: no {self.target} translation"
        try:
            inputs, key = self.one_operation_model(view, op)
        except Unsupported as error:
            return f"{name}: {error}"
        if key not in self._probes:
            self._probes[key] = self.probe(view, inputs, key, op)
        reason = self._probes[key]
        return None if reason is None else f"{name}: {reason}"

    def one_operation_model(self, view: ModelView, op: Operation) -> tuple[list[int], bytes]:
        inputs = _interface(view, op)
        input_specs(view, inputs)  # exact shapes needed
        return inputs, describe(view, [op], inputs, op.outputs, self.backend)

    def probe(self, view: ModelView, inputs: list[int], content: bytes, op: Operation | None = None) -> str | None:
        assert op is not None
        try:
            self._compiled(view, [op], inputs, op.outputs)
        except Unsupported as error:
            return str(error)
        except EngineFailure as error:
            return str(error)
        except Exception as error:  # anything else XLA or JAX raises is a refusal of this operation
            return f"XLA refused it: {_first_line(error)}"
        return None

    def compile(self, view: ModelView) -> XlaProgram:
        graph = view.graph
        try:
            return self._compiled(view, graph.operations, graph.input_indexes, graph.output_indexes)
        except Unsupported as error:
            raise EngineFailure(str(error)) from None


def check_operand_types(view: ModelView) -> None:
    """Every model input/output has an element type XLA can hold."""
    for index in (*view.graph.input_indexes, *view.graph.output_indexes):
        if view.type_of(index) not in NUMPY_DTYPE or view.type_of(index) == OperandType.SUBGRAPH:
            raise Unsupported(f"operand type {view.type_of(index).name}")
