"""What every model mutator builds on: the ``Mutation`` record, the copy-on-write clone, labels and sizes.

Separate from the mutators themselves (``operand_mutations``,
``operation_mutations``, ``operand_substitution``) because all of them share
these rules: a mutation is plain data (a case is re-runnable by its name), a
mutator changes a clone's operand or operation only after taking its own copy
(``own_operand``, ``own_operation``), and a description names what it broke
in the words a vendor reads in the failure message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from vts.hal.enums import (
    ELEMENT_SIZE,
    ExecutionPreference,
    OperandLifeTime,
    OperandType,
    OperationType,
    Priority,
    enum_name,
)
from vts.hal.types import DataLocation, Model, Operand, Operation, Subgraph

T = OperandType
L = OperandLifeTime

#: The scalar operand types (no dimensions).
SCALAR_TYPES = (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL)


@dataclass(frozen=True, slots=True)
class Mutation:
    """One model mutation as plain data: a case carries it to a worker and re-runs it alone by name."""

    kind: str
    args: tuple[int, ...]
    slug: str  # stable, name-safe: part of the case name
    description: str  # what was broken, in words
    query_support: bool = True  # preference/priority mutations only reach prepare_model
    preference: int = int(ExecutionPreference.FAST_SINGLE_ANSWER)
    priority: int = int(Priority.MEDIUM)
    #: The rule's key in ``vts.families._kit.version_rules`` when it is not ``kind`` ("": the kind's).
    check: str = ""


MutatorEnumerate = Callable[[Model], Iterator[Mutation]]
MutatorApply = Callable[[Model, Mutation], None]
#: Mutators by kind: (enumerate, apply) pairs.
Mutators = dict[str, tuple[MutatorEnumerate, MutatorApply]]


def clone_model(model: Model) -> Model:
    """A copy of the main subgraph's lists whose operands and operations are still the original's.

    A mutator may reorder, add and remove entries of the lists, but changes an operand or an
    operation only through ``own_operand`` or ``own_operation``, which put a copy of it in the
    list first: the original model is never changed (tests/families/test_validation_sharing.py).
    """
    main = model.main
    return Model(Subgraph(list(main.operands), list(main.operations), list(main.input_indexes),
                          list(main.output_indexes)),
                 model.referenced, model.operand_values, model.pools, model.relax_computation_float32_to_float16,
                 model.extension_name_to_prefix)


def own_operand(model: Model, index: int) -> Operand:
    """Operand ``index`` of a clone, made the clone's own (a copy) so that it can be changed."""
    o = model.main.operands[index]
    copy = Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale, o.zero_point, o.lifetime,
                   DataLocation(o.location.pool_index, o.location.offset, o.location.length), o.extra_params)
    model.main.operands[index] = copy
    return copy


def own_operation(model: Model, index: int) -> Operation:
    """Operation ``index`` of a clone, made the clone's own (a copy) so that it can be changed."""
    op = model.main.operations[index]
    copy = Operation(op.type, list(op.inputs), list(op.outputs))
    model.main.operations[index] = copy
    return copy


# Names of enum values, memoised: every case name of a validation sweep is decided by enumerating the
# mutations of its model (a shard or a -j worker enumerates them all to keep its own), and an enum
# lookup per label was most of that cost.


@lru_cache(maxsize=1024)
def type_label(value: int) -> str:
    return enum_name(OperandType, value) if 0 <= value <= 0xFFFF else str(value)


@lru_cache(maxsize=1024)
def _operation_label(value: int) -> str:
    return enum_name(OperationType, value)


@lru_cache(maxsize=64)
def lifetime_label(value: int) -> str:
    return enum_name(L, value)


def operand_label(model: Model, index: int) -> str:
    operand = model.main.operands[index]
    return f"operand {index} ({type_label(operand.type)})"


def op_label(model: Model, index: int) -> str:
    return f"operation {index} ({_operation_label(model.main.operations[index].type)})"


def byte_size(operand: Operand) -> int | None:
    """Exact byte size, or None when a dimension or the rank is unknown."""
    try:
        element = ELEMENT_SIZE[OperandType(operand.type)]
    except (ValueError, KeyError):
        return None
    if operand.type in (T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.FLOAT16):
        return element
    if not operand.dimensions or 0 in operand.dimensions:
        return None
    size = element
    for d in operand.dimensions:
        size *= d
    return size


def becomes_constant(model: Model, index: int) -> bool:
    """Point operand ``index`` at offset 0 of operand_values, growing it if needed (False if size unknown)."""
    operand = own_operand(model, index)
    size = byte_size(operand)
    if size is None:
        return False
    if len(model.operand_values) < size:
        model.operand_values = model.operand_values + bytes(size - len(model.operand_values))
    operand.lifetime = int(L.CONSTANT_COPY)
    operand.location = DataLocation(0, 0, size)
    return True


def new_temporary(model: Model, like: int) -> int:
    original = model.main.operands[like]
    model.main.operands.append(Operand(original.type, list(original.dimensions), 0, original.scale,
                                       original.zero_point, int(L.TEMPORARY_VARIABLE), DataLocation(),
                                       original.extra_params))
    return len(model.main.operands) - 1


def new_scalar(model: Model, lifetime: L) -> int:
    model.main.operands.append(Operand(int(T.INT32), [], 1, 0.0, 0, int(lifetime), DataLocation(), None))
    return len(model.main.operands) - 1
