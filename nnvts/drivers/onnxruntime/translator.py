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

On an execution provider other than the CPU one (``providers``), models
are built as accelerators take them: quantized operations in the QDQ form,
float16 kept float16 (``Graph.qdq``, ``Graph.half``).  Where the provider
does not take an operation's float16 form, the float16-through-float32 form
is tried next, for the probe and for the whole model alike.  A relaxed
model is marked in the ONNX model (its ``doc_string``), so its probes are
cached apart from a non-relaxed twin's: the provider options differ.
Compiled sessions are cached per machine (``nnvts.drivers.onnxruntime.cache``).

``translate`` is also what ``bench/onnx_export.py`` exports MobileNet with:
one translation for the driver and the benchmark.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnvts.drivers.engine.device import EngineFailure, Program, Translator
from nnvts.drivers.engine.nnapi import ModelView, Unsupported
from nnvts.drivers.onnxruntime.ops import HANDLERS, MS_DOMAIN, OPSET, Graph, onnx_type
from nnvts.drivers.onnxruntime.providers import CPU, Provider
from nnvts.drivers.onnxruntime.providers import session as provider_session
from vts.hal.enums import NUMPY_DTYPE, OperationType, enum_name
from vts.hal.enums import OperandType as T
from vts.hal.types import Operation


@functools.cache
def _ort() -> Any:
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    return onnxruntime


#: The CPU provider, as every session was before providers were options.
CPU_PROVIDER = Provider("cpu", CPU)


def session(content: bytes) -> Any:
    """An ONNX Runtime CPU session on one thread."""
    _ort()
    return provider_session(CPU_PROVIDER, content)


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
        half = g.view.type_of(index) == T.TENSOR_FLOAT16 and not g.half
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
    if g.view.model.relax_computation_float32_to_float16:
        model.doc_string = "relaxed"
    return model


def translate(view: ModelView, qdq: bool = False, half: bool = False) -> Any:
    """The ONNX model of the whole main subgraph: NNAPI inputs and outputs, in NNAPI order and layout."""
    g = Graph(view, qdq=qdq, half=half)
    for op in view.graph.operations:
        handler = HANDLERS.get(op.type)  # type: ignore[call-overload]
        if handler is None:
            raise Unsupported(f"{enum_name(OperationType, op.type)}: no ONNX translation")
        handler(g, op)
    return build(g, view.graph.input_indexes, view.graph.output_indexes)


def _pack(models: list[bytes]) -> bytes:
    """Several serialized models as one probe key: each one length-prefixed."""
    return b"".join(struct.pack("<Q", len(m)) + m for m in models)


def _unpack(content: bytes) -> list[bytes]:
    models, at = [], 0
    while at < len(content):
        (size,) = struct.unpack_from("<Q", content, at)
        models.append(content[at + 8:at + 8 + size])
        at += 8 + size
    return models


def _has_half(view: ModelView) -> bool:
    return any(operand.type == T.TENSOR_FLOAT16 for operand in view.graph.operands)


class OrtProgram(Program):
    def __init__(self, content: bytes, provider: Provider = CPU_PROVIDER, relaxed: bool = False,
                 config: dict[str, str] | None = None) -> None:
        try:
            self.session = provider_session(provider, content, relaxed, config)
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

    def __init__(self, provider: Provider = CPU_PROVIDER, cache: Any = None) -> None:
        super().__init__()
        self.provider = provider
        self.cache = cache  # a nnvts.drivers.onnxruntime.cache.SessionCache, or None
        # A forked child of a process that has run a QNN session hangs in the plugin (every probe after the
        # first preparation waited out the 20 s limit): providers are probed in process.  One that aborts
        # takes the driver down, a crash verdict (the harness's guard), never a silent "unsupported".
        self.fork_probes = provider.is_cpu

    def forms(self, view: ModelView) -> list[tuple[bool, bool]]:
        """(qdq, half) translations to try, in order: the accelerator's form first, float16 widened next."""
        if self.provider.is_cpu:
            return [(False, False)]
        return [(True, True), (True, False)] if _has_half(view) else [(True, False)]

    def one_operation_model(self, view: ModelView, op: Operation) -> tuple[list[int], bytes]:
        """The operation alone in each form (``forms``), packed as one key: the probe tries them in order."""
        models, inputs = [], []
        for qdq, half in self.forms(view):
            g = Graph(view, qdq=qdq, half=half)
            HANDLERS[op.type](g, op)  # type: ignore[index]
            inputs = _interface(g, op)
            models.append(build(g, inputs, op.outputs).SerializeToString())
        return inputs, _pack(models)

    def probe(self, view: ModelView, inputs: list[int], content: bytes) -> str | None:
        """None if some form of the one-operation model runs on the provider; else the first form's complaint."""
        forms = _unpack(content)
        complaints = [self._probe_one(view, inputs, form) for form in forms]
        return None if None in complaints else complaints[0]

    def _probe_one(self, view: ModelView, inputs: list[int], content: bytes) -> str | None:
        relaxed = bool(view.model.relax_computation_float32_to_float16)
        try:
            probe = provider_session(self.provider, content, relaxed)
        except Exception as error:
            return f"{self._engine()} refused it: {_first_line(error)}"
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
        return f"{self._engine()} cannot run it: {complaint}"

    def _engine(self) -> str:
        return "ONNX Runtime" if self.provider.is_cpu else f"ONNX Runtime's {self.provider.name} provider"

    def compile(self, view: ModelView) -> Program:
        """The whole model in the first form the provider takes (``forms``); the last form's complaint else."""
        relaxed = bool(view.model.relax_computation_float32_to_float16)
        failure = EngineFailure("no translation")
        for qdq, half in self.forms(view):
            try:
                content = translate(view, qdq=qdq, half=half).SerializeToString()
            except Unsupported as error:
                raise EngineFailure(str(error)) from None
            try:
                if self.cache is not None:
                    return self.cache.program(content, relaxed)
                return OrtProgram(content, self.provider, relaxed)
            except EngineFailure as error:
                failure = error
        raise failure
