"""Random inputs for a model: reproducible, in range, in the operation's domain.

In the kit because two families draw them: ``differential`` judges the
driver against an oracle on them, and ``burst`` streams them through a held
slot's memory (a burst that keeps a stale copy answers the old inputs).

Every main input of a model is either *varied* (drawn afresh) or *held* at
the value of the model's first example, with a reason.  A value is varied
only where any value of its type and range is a legitimate input of the
operations that read it:

* float tensors are drawn uniformly from the range the examples' own
  inputs span at that position (widened, sign kept, when every example
  holds one value): the spec author's inputs are the best available
  statement of the operation's domain (positive for LOG, probabilities for
  scores, small exponents for EXP, ...).  Explicit rules tighten it where
  an operation is undefined: LOG, RSQRT and the base of POW strictly
  positive, SQRT non-negative, DIV divisors at least a tenth of the
  range's magnitude away from zero;
* quantized tensors are drawn, like floats, from the stored range the
  examples span (widened by 8 steps each way, within the type's range),
  kept above the zero point where the real value must be positive.  The
  whole range of the type would be valid too, but it saturates most
  fused activations and requantizations: every draw would give the same
  output, and a driver re-serving old outputs would go unseen;
* inputs of the comparisons (EQUAL, NOT_EQUAL, GREATER, ...) are drawn from
  the values the examples give any input of that type, so that ties occur
  (two independent random floats are never equal);
* TENSOR_BOOL8 tensors are drawn with a probability of true itself drawn
  per input set, so that ANY/ALL and LOGICAL_* see both all-false-ish and
  all-true-ish inputs;
* TENSOR_INT32 tensors are varied only where they are data: the inputs of
  integer arithmetic and comparisons (drawn from the examples' range, DIV
  divisors never 0), CAST, ARGMAX/ARGMIN, TOPK_V2, SELECT's operands, the
  values of GATHER, EMBEDDING_LOOKUP and HASHTABLE_LOOKUP, and
  index tensors whose valid range is known (GATHER indices in
  [0, input.dims[axis]), EMBEDDING_LOOKUP lookups in [0, values.dims[0])).
  Elsewhere an INT32 tensor is a shape, a size, padding, a begin/stride or
  a batch index: changing it changes the output shape or leaves the
  operation's domain, so it is held;
* scalars (axes, activations, flags) are held;
* box-like inputs are held (ROI_ALIGN/ROI_POOLING rois,
  AXIS_ALIGNED_BBOX_TRANSFORM rois and image info, GENERATE_PROPOSALS
  anchors and image info, BOX_WITH_NMS_LIMIT boxes, DETECTION_POSTPROCESSING
  anchors, HEATMAP_MAX_KEYPOINT boxes, HASHTABLE_LOOKUP keys (sorted)):
  random numbers are not valid boxes, so only the feature maps, scores and
  deltas around them vary.

An input read by several operations is varied only if every one of them
allows it.  A model with no varied input is skipped with the reasons.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as O
from vts.hal.enums import is_scalar_type
from vts.model.casemodel import CaseExample, CaseModel, CaseOperand, TensorData, dtype_of

_FLOATS = {int(T.TENSOR_FLOAT32), int(T.TENSOR_FLOAT16)}
_QUANT_RANGES = {
    int(T.TENSOR_QUANT8_ASYMM): (0, 255),
    int(T.TENSOR_QUANT8_ASYMM_SIGNED): (-128, 127),
    int(T.TENSOR_QUANT8_SYMM): (-127, 127),
    int(T.TENSOR_QUANT16_ASYMM): (0, 65535),
    int(T.TENSOR_QUANT16_SYMM): (-32768, 32767),
}

#: (operation, input index) whose real value must be > 0, >= 0, or != 0.
_POSITIVE = {(int(O.LOG), 0), (int(O.RSQRT), 0), (int(O.POW), 0)}
_NON_NEGATIVE = {(int(O.SQRT), 0)}
_NONZERO = {(int(O.DIV), 1)}

#: Comparisons: their inputs are drawn from the examples' own values, so that ties occur.
_COMPARISONS = {int(op) for op in (O.EQUAL, O.NOT_EQUAL, O.GREATER, O.GREATER_EQUAL, O.LESS, O.LESS_EQUAL)}

#: Box-like float inputs (any random value is not a valid box): held.
_BOXES = {
    (int(O.ROI_ALIGN), 1), (int(O.ROI_POOLING), 1),
    (int(O.AXIS_ALIGNED_BBOX_TRANSFORM), 0), (int(O.AXIS_ALIGNED_BBOX_TRANSFORM), 3),
    (int(O.GENERATE_PROPOSALS), 2), (int(O.GENERATE_PROPOSALS), 3),
    (int(O.BOX_WITH_NMS_LIMIT), 1), (int(O.DETECTION_POSTPROCESSING), 2),
    (int(O.HEATMAP_MAX_KEYPOINT), 1),
}

#: Operations whose TENSOR_INT32 inputs (at these indexes; None: every tensor input) are data.
_INT_DATA: dict[int, set[int] | None] = {
    int(op): None for op in (O.ADD, O.SUB, O.MUL, O.DIV, O.ABS, O.NEG, O.MAXIMUM, O.MINIMUM, O.EQUAL,
                             O.NOT_EQUAL, O.GREATER, O.GREATER_EQUAL, O.LESS, O.LESS_EQUAL, O.CAST)
}
_INT_DATA.update({int(O.ARGMAX): {0}, int(O.ARGMIN): {0}, int(O.TOPK_V2): {0}, int(O.SELECT): {1, 2},
                  int(O.HASHTABLE_LOOKUP): {2}, int(O.GATHER): {0}, int(O.EMBEDDING_LOOKUP): {1}})

#: Index inputs whose bound is an axis of another input: op -> index input.
_INDEXES = {int(O.GATHER): 2, int(O.EMBEDDING_LOOKUP): 0}


def seed_of(name: str) -> int:
    """A stable 64-bit seed from a case name (Python's ``hash`` is salted per process)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


@dataclass(frozen=True, slots=True)
class InputPlan:
    """How each main input is produced: ``varied[p]`` or held with ``held[p]`` giving the reason."""

    varied: dict[int, str]
    held: dict[int, str]

    @property
    def any_varied(self) -> bool:
        return bool(self.varied)


def _consumers(model: CaseModel, operand_index: int, depth: int = 0) -> list[tuple[int, int]]:
    """(operation type, input index) of every main operation reading ``operand_index``.

    An identity ADD (the other operand a constant of zeros, no activation:
    the corpus's ``all_inputs_as_internal`` variants route every input
    through one) is looked through: what matters is who reads its output.
    """
    found: list[tuple[int, int]] = []
    for op in model.main.operations:
        for j, i in enumerate(op.inputs):
            if i != operand_index:
                continue
            if depth < 4 and _is_identity_add(model, op, j):
                found += _consumers(model, op.outputs[0], depth + 1)
            else:
                found.append((int(op.type) if isinstance(op.type, int) else -1, j))
    return found


def _is_identity_add(model: CaseModel, op: object, position: int) -> bool:
    if getattr(op, "type", None) != O.ADD or position not in (0, 1) or len(op.inputs) != 3:  # type: ignore[attr-defined]
        return False
    operands = model.main.operands
    other = operands[op.inputs[1 - position]]  # type: ignore[attr-defined]
    activation = operands[op.inputs[2]]  # type: ignore[attr-defined]
    constant = other.value is not None and not isinstance(other.value, int)
    stored_zero = constant and bool(np.all(np.asarray(other.value) == other.zero_point))
    no_activation = activation.value is not None and int(np.asarray(activation.value).reshape(-1)[0]) == 0
    return stored_zero and no_activation


def plan_inputs(model: CaseModel) -> InputPlan:
    varied: dict[int, str] = {}
    held: dict[int, str] = {}
    example = model.examples[0]
    for position, index in enumerate(model.main.inputs):
        operand = model.main.operands[index]
        if position not in example.inputs:
            held[position] = "omitted in the examples"
            continue
        why = _hold_reason(model, operand, _consumers(model, index))
        if not why and operand.type == T.TENSOR_INT32 and _index_op(model, index) is not None \
                and not _index_bound(model, example, _index_op(model, index)):  # type: ignore[arg-type]
            why = "an index tensor whose bound is unknown"
        if why:
            held[position] = why
        else:
            varied[position] = T(operand.type).name  # type: ignore[arg-type]
    return InputPlan(varied, held)


def _hold_reason(model: CaseModel, operand: CaseOperand, consumers: list[tuple[int, int]]) -> str:
    kind = operand.type
    if not isinstance(kind, int):
        return "vendor extension type"
    if is_scalar_type(kind):
        return "scalar parameter"
    if not consumers:
        return "read by no main operation (control flow or unused)" if model.referenced else "unused"
    if any(c in _BOXES for c in consumers):
        return "boxes: random values are not valid boxes"
    if kind == T.TENSOR_INT32:
        for op, j in consumers:
            if _INDEXES.get(op) == j:
                continue
            allowed = _INT_DATA.get(op, set())
            if allowed is not None and j not in allowed:
                return "an INT32 shape, size, index or parameter tensor"
        return ""
    if kind in _FLOATS or kind in _QUANT_RANGES or kind == T.TENSOR_BOOL8:
        return ""
    return f"{T(kind).name} input"


def _golden_range(model: CaseModel, position: int) -> tuple[float, float]:
    values = [e.inputs[position].value for e in model.examples if position in e.inputs]
    flat = np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for v in values]) if values else np.zeros(1)
    flat = flat[np.isfinite(flat)]
    if flat.size == 0:
        return -1.0, 1.0
    return float(flat.min()), float(flat.max())


def _widen(lo: float, hi: float) -> tuple[float, float]:
    """A degenerate range widened without changing sign."""
    if hi > lo:
        return lo, hi
    if lo > 0:
        return lo / 2, lo * 2
    if lo < 0:
        return lo * 2, lo / 2
    return -1.0, 1.0


def _float_values(rng: np.random.Generator, lo: float, hi: float, shape: Sequence[int],
                  rules: set[str]) -> np.ndarray:
    lo, hi = _widen(lo, hi)
    if "positive" in rules:
        floor = max(hi, 1.0) * 1e-2
        lo, hi = max(lo, floor), max(hi, floor * 4)
    elif "non_negative" in rules:
        lo, hi = max(lo, 0.0), max(hi, 1.0 if hi <= 0 else hi)
    values = rng.uniform(lo, hi, size=tuple(shape))
    if "nonzero" in rules:
        magnitude = max(abs(lo), abs(hi)) / 10 or 0.1
        sign = np.where(values < 0, -1.0, 1.0)
        values = np.where(np.abs(values) < magnitude, sign * magnitude, values)
    return values


def _rules(consumers: list[tuple[int, int]]) -> set[str]:
    rules = set()
    if any(c in _POSITIVE for c in consumers):
        rules.add("positive")
    if any(c in _NON_NEGATIVE for c in consumers):
        rules.add("non_negative")
    if any(c in _NONZERO for c in consumers):
        rules.add("nonzero")
    return rules


def _index_op(model: CaseModel, operand_index: int) -> int | None:
    """The main operation reading ``operand_index`` as its index tensor (GATHER, EMBEDDING_LOOKUP)."""
    for op_index, op in enumerate(model.main.operations):
        kind = int(op.type) if isinstance(op.type, int) else -1
        if kind in _INDEXES and op.inputs[_INDEXES[kind]] == operand_index:
            return op_index
    return None


def _index_bound(model: CaseModel, example: CaseExample, op_index: int) -> int | None:
    """The exclusive upper bound of an index input: input.dims[axis] (GATHER) or values.dims[0]."""
    op = model.main.operations[op_index]
    if op.type == O.GATHER:
        dims = _dims_of(model, example, op.inputs[0])
        axis = _scalar_value(model, example, op.inputs[1], model.main.operands[op.inputs[1]])
        if dims is None or axis is None:
            return None
        axis = axis + len(dims) if axis < 0 else axis
        return dims[axis] if 0 <= axis < len(dims) else None
    dims = _dims_of(model, example, op.inputs[1])
    return dims[0] if dims else None


def _dims_of(model: CaseModel, example: CaseExample, operand_index: int) -> tuple[int, ...] | None:
    if operand_index in model.main.inputs:
        data = example.inputs.get(model.main.inputs.index(operand_index))
        return tuple(data.dims) if data is not None else None
    dims = model.main.operands[operand_index].dims
    return tuple(dims) if dims and 0 not in dims else None


def _scalar_value(model: CaseModel, example: CaseExample, operand_index: int, operand: CaseOperand) -> int | None:
    if operand_index in model.main.inputs:
        data = example.inputs.get(model.main.inputs.index(operand_index))
        return int(np.asarray(data.value).reshape(-1)[0]) if data is not None else None
    return int(np.asarray(operand.value).reshape(-1)[0]) if operand.value is not None else None


def random_example(model: CaseModel, plan: InputPlan, rng: np.random.Generator, name: str) -> CaseExample:
    """The first example with every varied input drawn afresh (outputs empty: the oracle fills them)."""
    base = model.examples[0]
    inputs: dict[int, TensorData] = {}
    for position, data in base.inputs.items():
        if position not in plan.varied:
            inputs[position] = data
            continue
        index = model.main.inputs[position]
        operand = model.main.operands[index]
        consumers = _consumers(model, index)
        inputs[position] = TensorData(data.dims, _draw(model, base, operand, position, index, consumers, rng))
    return CaseExample(name, inputs, {})


def _draw(model: CaseModel, base: CaseExample, operand: CaseOperand, position: int, index: int,
          consumers: list[tuple[int, int]], rng: np.random.Generator) -> np.ndarray:
    shape = base.inputs[position].dims
    kind = int(operand.type)  # type: ignore[arg-type]
    dtype = dtype_of(kind)
    rules = _rules(consumers)
    if kind in _FLOATS:
        return _float_values(rng, *_golden_range(model, position), shape, rules).astype(dtype)
    if kind == T.TENSOR_BOOL8:
        return (rng.random(size=tuple(shape)) < rng.random()).astype(dtype)
    if any(op in _COMPARISONS for op, _ in consumers):
        # Every value the examples give any input of this type: both sides of a comparison share the pool.
        same_type = [p for p, i in enumerate(model.main.inputs) if model.main.operands[i].type == operand.type]
        pool = np.unique(np.concatenate([np.asarray(e.inputs[p].value).reshape(-1)
                                         for e in model.examples for p in same_type if p in e.inputs]))
        return rng.choice(pool, size=tuple(shape)).astype(dtype)
    if kind in _QUANT_RANGES:
        type_lo, type_hi = _QUANT_RANGES[kind]
        golden_lo, golden_hi = _golden_range(model, position)
        lo, hi = max(type_lo, int(golden_lo) - 8), min(type_hi, int(golden_hi) + 8)
        if "positive" in rules or "non_negative" in rules:
            lo = max(lo, operand.zero_point + ("positive" in rules))
            hi = max(hi, min(type_hi, lo + 16))
        values = rng.integers(lo, hi + 1, size=tuple(shape))
        if "nonzero" in rules:
            values = np.where(values == operand.zero_point, min(operand.zero_point + 1, hi), values)
        return values.astype(dtype)
    # TENSOR_INT32: an index tensor (its bound known: plan_inputs), or integer data in the examples' range.
    op_index = _index_op(model, index)
    if op_index is not None:
        bound = _index_bound(model, base, op_index) or 1
        return rng.integers(0, bound, size=tuple(shape)).astype(dtype)
    lo, hi = _golden_range(model, position)
    lo, hi = (int(np.floor(lo)), int(np.ceil(hi))) if hi > lo else (int(lo) - 2, int(lo) + 2)
    values = rng.integers(lo, hi + 1, size=tuple(shape))
    if "nonzero" in rules:
        values = np.where(values == 0, 1, values)
    return values.astype(dtype)
