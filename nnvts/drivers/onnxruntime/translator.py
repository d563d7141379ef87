"""NNAPI model -> ONNX graph -> ONNX Runtime session, and asking ONNX Runtime what it accepts.

As with LiteRT, support is decided by the engine: ``unsupported_reason``
translates one operation into a one-node-group model, creates a session
(ONNX Runtime resolves a kernel for every node's types there) and runs it
once on zero-filled inputs; an operation the engine refuses is answered
unsupported, never claimed and then refused.  Probes are cached by the
serialized one-operation model.

Sessions run on one intra-op and one inter-op thread, sequentially, with
ONNX Runtime's default graph optimisations: a conformance run executes many
small models side by side, and a vendor ships the optimised engine.

``translate`` is also what ``bench/onnx_export.py`` exports MobileNet with:
one translation for the driver and the benchmark.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnvts.drivers.engine.device import EngineFailure, Program, Translator
from nnvts.drivers.engine.nnapi import ModelView, Unsupported
from nnvts.drivers.onnxruntime.ops import HANDLERS, MS_DOMAIN, OPSET, Graph, onnx_type
from vts.hal.enums import NUMPY_DTYPE, OperationType, enum_name
from vts.hal.enums import OperandType as T
from vts.hal.types import Operation


@functools.cache
def _ort() -> Any:
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    return onnxruntime


def session(content: bytes) -> Any:
    """An ONNX Runtime CPU session on one thread."""
    ort = _ort()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(content, options, providers=["CPUExecutionProvider"])


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def _value_info(view: ModelView, index: int, name: str) -> Any:
    from onnx import helper

    dims = [d if d > 0 else None for d in view.dims(index)]
    return helper.make_tensor_value_info(name, onnx_type(view.type_of(index)), dims)


def build(g: Graph, inputs: Sequence[int], outputs: Sequence[int], name: str = "nnapi") -> Any:
    """The ONNX model of graph ``g`` with NNAPI operands ``inputs`` and ``outputs`` as its interface.

    ONNX Runtime's CPU provider has float16 kernels for few operators, so
    float16 operands compute in float32: a float16 input is widened by a
    Cast first and a float16 output rounded back by a Cast last (more
    precise than float16 arithmetic, which the HAL's tolerance allows).
    """
    from onnx import TensorProto, helper

    def boundary(index: int) -> str:
        half = g.view.type_of(index) == T.TENSOR_FLOAT16
        return f"{g.name(index)}_f16" if half else g.name(index)

    widen = [helper.make_node("Cast", [boundary(i)], [g.name(i)], to=TensorProto.FLOAT)
             for i in inputs if boundary(i) != g.name(i)]
    narrow = [helper.make_node("Cast", [g.name(o)], [boundary(o)], to=TensorProto.FLOAT16)
              for o in outputs if boundary(o) != g.name(o)]
    graph = helper.make_graph(widen + g.nodes + narrow, name, [_value_info(g.view, i, boundary(i)) for i in inputs],
                              [_value_info(g.view, o, boundary(o)) for o in outputs], g.initializers)
    opsets = [helper.make_opsetid("", OPSET)]
    if g.uses_ms_domain:
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="nnvts-onnxruntime-driver")
    model.ir_version = 8
    return model


def translate(view: ModelView) -> Any:
    """The ONNX model of the whole main subgraph: NNAPI inputs and outputs, in NNAPI order and layout."""
    g = Graph(view)
    for op in view.graph.operations:
        handler = HANDLERS.get(op.type)  # type: ignore[call-overload]
        if handler is None:
            raise Unsupported(f"{enum_name(OperationType, op.type)}: no ONNX translation")
        handler(g, op)
    return build(g, view.graph.input_indexes, view.graph.output_indexes)


class OrtProgram(Program):
    def __init__(self, content: bytes) -> None:
        try:
            self.session = session(content)
        except Exception as error:  # onnxruntime raises its own exception classes (Fail, InvalidGraph...)
            raise EngineFailure(_first_line(error)) from None
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        try:
            return [np.asarray(v) for v in self.session.run(None, dict(zip(self.input_names, inputs, strict=True)))]
        except Exception as error:
            raise EngineFailure(_first_line(error)) from None


def _interface(g: Graph, op: Operation) -> list[int]:
    seen: list[int] = []
    for index in op.inputs:
        if not g.view.is_constant(index) and not g.view.is_omitted(index) and index not in seen:
            seen.append(index)
    return seen


class OrtTranslator(Translator):
    target = "ONNX"
    handlers = HANDLERS

    def one_operation_model(self, view: ModelView, op: Operation) -> tuple[list[int], bytes]:
        g = Graph(view)
        HANDLERS[op.type](g, op)  # type: ignore[index]
        inputs = _interface(g, op)
        return inputs, build(g, inputs, op.outputs).SerializeToString()

    def probe(self, view: ModelView, inputs: list[int], content: bytes) -> str | None:
        """None if ONNX Runtime creates a session and runs the one-operation model; else its complaint."""
        try:
            probe = session(content)
        except Exception as error:
            return f"ONNX Runtime refused it: {_first_line(error)}"
        if not all(view.dims(i) and all(d > 0 for d in view.dims(i)) for i in inputs):
            return None  # shapes come with the request: kernels resolved, cannot run yet
        complaint = ""
        for fill in (0, 1):
            feed = {}
            for meta, index in zip(probe.get_inputs(), inputs, strict=True):
                feed[meta.name] = np.full(view.dims(index), fill, np.dtype(NUMPY_DTYPE[view.type_of(index)]))
            try:
                probe.run(None, feed)
                return None
            except Exception as error:
                complaint = _first_line(error)
        return f"ONNX Runtime cannot run it: {complaint}"

    def compile(self, view: ModelView) -> Program:
        try:
            content = translate(view).SerializeToString()
        except Unsupported as error:
            raise EngineFailure(str(error)) from None
        return OrtProgram(content)
