"""Several requests for one model, each with a golden known without running anything.

Concurrency, burst and multi-client cases need requests that differ: a
driver that hands one request's results to another is invisible when every
request has the same answer.  Corpus models carry one example each, and a
golden may never come from a driver, so the extra requests are derived by an
exact identity:

* an **elementwise** model (every operation maps element i of its inputs to
  element i of its outputs: ADD, MUL, RELU, CAST, SELECT, ...; every tensor
  input and output of one shape; no tensor constants except uniform ones,
  since a constant does not move with the inputs; no per-channel
  quantization, whose scale depends on the position) computes ``f(roll(x, k)) = roll(f(x), k)``: rolling every
  input tensor's elements by ``k`` rolls every golden output by ``k``, bit
  for bit.  Each roll that changes some golden is one more variant;
* a model with earlier *siblings* in its spec file (the same graph and
  constants, other examples: ``SiblingExamples``) gets their examples too,
  with the Android authors' goldens;
* any other model gets its own examples only; a caller needing more
  requests repeats them (their results then cannot be told apart by value,
  only by where they land: each request has pools of its own).
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from vts.hal.enums import OperandLifeTime, OperationType, is_scalar_type
from vts.model.casemodel import CaseExample, CaseModel, TensorData, element_count

#: Operations that compute each output element from the same-index input elements only.
ELEMENTWISE = frozenset(int(op) for op in (
    OperationType.ADD, OperationType.MUL, OperationType.SUB, OperationType.DIV, OperationType.MAXIMUM,
    OperationType.MINIMUM, OperationType.POW, OperationType.FLOOR, OperationType.RELU, OperationType.RELU1,
    OperationType.RELU6, OperationType.LOGISTIC, OperationType.TANH, OperationType.ABS, OperationType.EXP,
    OperationType.LOG, OperationType.NEG, OperationType.SQRT, OperationType.RSQRT, OperationType.SIN,
    OperationType.DEQUANTIZE, OperationType.QUANTIZE, OperationType.CAST, OperationType.EQUAL,
    OperationType.NOT_EQUAL, OperationType.GREATER, OperationType.GREATER_EQUAL, OperationType.LESS,
    OperationType.LESS_EQUAL, OperationType.LOGICAL_AND, OperationType.LOGICAL_OR, OperationType.LOGICAL_NOT,
    OperationType.SELECT, OperationType.ELU, OperationType.HARD_SWISH,
))
_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _is_scalar(operand_type: int | str) -> bool:
    return isinstance(operand_type, int) and is_scalar_type(operand_type)


def _uniform(value: object) -> bool:
    """A constant every element of which is equal looks the same rolled (the corpus's "inputs as internal"
    variations feed each input through ADD with a zero tensor)."""
    array = np.asarray(value)
    return array.size > 0 and bool(np.all(array.reshape(-1) == array.reshape(-1)[0]))


def shared_dims(model: CaseModel, example: CaseExample) -> tuple[int, ...] | None:
    """The one shape of every tensor input and output when ``model`` is elementwise, else None."""
    main = model.main
    if model.referenced or model.multinomial_tolerance > 0 or not main.operations:
        return None
    if any(op.type not in ELEMENTWISE for op in main.operations):
        return None
    if any(o.lifetime in _CONSTANT and not _is_scalar(o.type) and not _uniform(o.value) for o in main.operands):
        return None
    if any(o.channel_quant is not None for o in main.operands):
        return None  # a per-channel scale depends on the element's position: rolling changes the answer
    shapes = {data.dims for pos, data in example.inputs.items() if not _is_scalar(main.operands[main.inputs[pos]].type)}
    shapes |= {data.dims for data in example.outputs.values()}
    if len(shapes) != 1:
        return None
    (dims,) = shapes
    if element_count(dims) < 2 or len(example.outputs) != len(main.outputs):
        return None
    return dims


def _roll(data: TensorData, k: int) -> TensorData:
    flat = np.asarray(data.value).reshape(-1)
    return TensorData(data.dims, np.roll(flat, k).reshape(np.asarray(data.value).shape))


def rolled(model: CaseModel, example: CaseExample, k: int) -> CaseExample:
    """``example`` with every tensor input and golden rolled by ``k`` elements (elementwise models only)."""
    main = model.main
    inputs = {pos: data if _is_scalar(main.operands[main.inputs[pos]].type) else _roll(data, k)
              for pos, data in example.inputs.items()}
    outputs = {pos: _roll(data, k) for pos, data in example.outputs.items()}
    return CaseExample(f"{example.name}+roll{k}" if example.name else f"roll{k}", inputs, outputs)


def _same_goldens(a: CaseExample, b: CaseExample) -> bool:
    return all(np.array_equal(np.asarray(a.outputs[pos].value), np.asarray(b.outputs[pos].value))
               for pos in a.outputs)


def request_variants(model: CaseModel, wanted: int) -> list[CaseExample]:
    """Up to ``wanted`` examples with pairwise different goldens (at least the model's own)."""
    variants = list(model.examples)
    for example in model.examples:
        dims = shared_dims(model, example)
        if dims is None:
            continue
        for k in range(1, element_count(dims)):
            if len(variants) >= wanted:
                return variants
            candidate = rolled(model, example, k)
            if not any(_same_goldens(candidate, other) for other in variants):
                variants.append(candidate)
    return variants


def distinct_goldens(variants: list[CaseExample]) -> bool:
    return len(variants) > 1 and not _same_goldens(variants[0], variants[1])


def graph_fingerprint(model: CaseModel) -> str:
    """Everything that decides a model's answers: graphs, constants, quantization, precision, tolerances."""
    parts: list[object] = [model.relaxed, model.tolerance, model.multinomial_tolerance,
                           model.extensions]
    for graph in model.subgraphs():
        for o in graph.operands:
            value = hashlib.sha256(np.asarray(o.value).tobytes()).hexdigest() if o.value is not None else ""
            parts.append((o.type, o.dims, int(o.lifetime), o.scale, o.zero_point, value, repr(o.channel_quant),
                          o.ignored, o.extension_params))
        parts.extend((op.type, op.inputs, op.outputs) for op in graph.operations)
        parts.append((graph.inputs, graph.outputs))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


class SiblingExamples:
    """Examples of earlier models of the same spec file with the very same graph.

    The corpus stores each example of an Android test model as a model of its
    own (``conv_1_h3_w2_SAME`` and ``conv_1_h3_w2_SAME.2``): the same graph
    and constants with other inputs and the Android authors' goldens for
    them.  A later sibling can use the earlier ones' examples as requests
    with goldens of their own; nothing is computed.
    """

    def __init__(self) -> None:
        self._spec = ""
        self._seen: dict[str, tuple[CaseExample, ...]] = {}

    def remember(self, model: CaseModel, spec_path: str) -> tuple[CaseExample, ...]:
        """The examples of earlier identical models of ``spec_path``; records ``model``'s."""
        if spec_path != self._spec:
            self._spec, self._seen = spec_path, {}
        key = graph_fingerprint(model)
        earlier = self._seen.get(key, ())
        self._seen[key] = earlier + model.examples
        return earlier


def with_examples(model: CaseModel, extra: tuple[CaseExample, ...]) -> CaseModel:
    """``model`` with ``extra`` examples after its own (named apart so reports can tell them)."""
    if not extra:
        return model
    named = tuple(CaseExample(e.name or f"sibling{i}", e.inputs, e.outputs) for i, e in enumerate(extra, 1))
    return dataclasses.replace(model, examples=model.examples + named)
