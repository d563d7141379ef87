"""NNAPI model -> TFLite flatbuffer -> LiteRT interpreter, and asking LiteRT what it accepts.

Support is decided by the engine, not by a hand-kept list of type
combinations: ``unsupported_reason`` translates one operation into a
one-operator model and loads it into an interpreter (allocation runs every
kernel's Prepare, one invocation on zero-filled inputs runs its Eval, where
TFLite checks several type combinations).  An operation LiteRT would refuse
is therefore answered unsupported, never claimed and then refused at
preparation.  Probes are cached by the bytes of the one-operator model.

Interpreters use TFLite's own builtin kernels without the default XNNPACK
delegate (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``): those kernels are where
NNAPI's CPU semantics came from, so differences found here are TFLite's,
not a delegate's; and one thread, because a conformance run executes many
small models side by side.  A delegate is a driver option
(``nnvts.drivers.litert.delegates``): with one, the probe also asks whether the
delegate took the whole one-operator model, and an operation it leaves to
the CPU kernels is unsupported unless CPU fallback is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nnvts.drivers.engine.device import EngineFailure, Program, Translator
from nnvts.drivers.engine.nnapi import ModelView, Unsupported
from nnvts.drivers.litert.delegates import Delegate
from nnvts.drivers.litert.ops import HANDLERS, Graph
from vts.hal.types import Operation

#: No delegate: TFLite's builtin kernels, as before delegates were options.
BUILTIN = Delegate()


def _interpreter(content: bytes, delegate: Delegate = BUILTIN) -> object:
    return delegate.interpreter(content)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


class LiteRtProgram(Program):
    """An allocated interpreter; inputs whose shape changes (request dimensions) are resized first."""

    def __init__(self, content: bytes, delegate: Delegate = BUILTIN) -> None:
        self.content = content
        try:
            self.interpreter = _interpreter(content, delegate)
            self.interpreter.allocate_tensors()
        except (RuntimeError, ValueError) as error:
            raise EngineFailure(_first_line(error)) from None
        self.inputs = [d["index"] for d in self.interpreter.get_input_details()]
        self.outputs = [d["index"] for d in self.interpreter.get_output_details()]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        it = self.interpreter
        try:
            resized = False
            for index, value in zip(self.inputs, inputs, strict=True):
                if tuple(it.get_tensor_details()[index]["shape"]) != value.shape:
                    it.resize_tensor_input(index, list(value.shape), strict=False)
                    resized = True
            if resized:
                it.allocate_tensors()
            for index, value in zip(self.inputs, inputs, strict=True):
                it.set_tensor(index, value)
            it.invoke()
            return [np.array(it.get_tensor(index)) for index in self.outputs]
        except (RuntimeError, ValueError) as error:
            raise EngineFailure(_first_line(error)) from None


def _tensor_inputs(g: Graph, operation_inputs: Sequence[int]) -> list[int]:
    """The non-constant operands a translated operation reads: the inputs of its one-operator model."""
    seen: list[int] = []
    for index in operation_inputs:
        if index in g.tensor_of and not g.view.is_constant(index) and index not in seen:
            seen.append(index)
    return seen


def _known_dims(view: ModelView, index: int) -> bool:
    dims = view.dims(index)
    return bool(dims) and all(d > 0 for d in dims)


class LiteRtTranslator(Translator):
    target = "TFLite"
    handlers = HANDLERS

    def __init__(self, delegate: Delegate = BUILTIN) -> None:
        super().__init__()
        self.delegate = delegate

    def one_operation_model(self, view: ModelView, op: Operation) -> tuple[list[int], bytes]:
        g = Graph(view)
        HANDLERS[op.type](g, op)  # type: ignore[index]
        inputs = _tensor_inputs(g, op.inputs)
        return inputs, g.finish(inputs, op.outputs)

    def probe(self, view: ModelView, inputs: list[int], content: bytes) -> str | None:
        """None if LiteRT loads, allocates and runs the one-operator model; else its complaint."""
        try:
            interpreter = _interpreter(content, self.delegate)
            interpreter.allocate_tensors()
        except (RuntimeError, ValueError) as error:
            return f"LiteRT refused it: {_first_line(error)}"
        left = self.delegate.left_to_cpu(interpreter)
        if left is not None:
            return left
        if not all(_known_dims(view, i) for i in inputs):
            return None  # shapes come with the request: Prepare has run, Eval cannot yet
        details = interpreter.get_input_details()
        complaint = ""
        for fill in (0, 1):  # zeros first; ones where zeros are not a valid input (a divisor, say)
            try:
                for detail in details:
                    interpreter.set_tensor(detail["index"], np.full(detail["shape"], fill, detail["dtype"]))
                interpreter.invoke()
                return None
            except (RuntimeError, ValueError) as error:
                complaint = _first_line(error)
        return f"LiteRT cannot run it: {complaint}"

    def compile(self, view: ModelView) -> Program:
        try:
            content = translate(view)
        except Unsupported as error:
            raise EngineFailure(str(error)) from None
        return LiteRtProgram(content, self.delegate)


def translate(view: ModelView) -> bytes:
    """The TFLite flatbuffer of the whole main subgraph, inputs and outputs in NNAPI order."""
    g = Graph(view)
    for op in view.graph.operations:
        HANDLERS[op.type](g, op)  # type: ignore[index]
    return g.finish(view.graph.input_indexes, view.graph.output_indexes)
