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
* any other model gets its own examples only; a caller needing more
  requests repeats them (their results then cannot be told apart by value,
  only by where they land: each request has pools of its own).
"""

from __future__ import annotations

import numpy as np

from vts.hal.enums import OperandLifeTime, OperationType, is_scalar_type
from vts.testmodel import TensorData, TestExample, TestModel, element_count

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


def shared_dims(model: TestModel, example: TestExample) -> tuple[int, ...] | None:
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


def rolled(model: TestModel, example: TestExample, k: int) -> TestExample:
    """``example`` with every tensor input and golden rolled by ``k`` elements (elementwise models only)."""
    main = model.main
    inputs = {pos: data if _is_scalar(main.operands[main.inputs[pos]].type) else _roll(data, k)
              for pos, data in example.inputs.items()}
    outputs = {pos: _roll(data, k) for pos, data in example.outputs.items()}
    return TestExample(f"{example.name}+roll{k}" if example.name else f"roll{k}", inputs, outputs)


def _same_goldens(a: TestExample, b: TestExample) -> bool:
    return all(np.array_equal(np.asarray(a.outputs[pos].value), np.asarray(b.outputs[pos].value))
               for pos in a.outputs)


def request_variants(model: TestModel, wanted: int) -> list[TestExample]:
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


def distinct_goldens(variants: list[TestExample]) -> bool:
    return len(variants) > 1 and not _same_goldens(variants[0], variants[1])
