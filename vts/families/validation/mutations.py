"""Model mutations of the HAL validation suite (test-catalogue §4.2), one small mutator each.

Every mutator has two halves: ``enumerate`` lists the mutations it can make
to a model as plain ``Mutation`` records (so a case is data, re-runnable by
name), and ``apply`` makes one of them on a fresh copy of the model.  The
copy shares the original's operands and operations until a mutator changes
one (``_own_operand``, ``_own_operation``): copying a model of a hundred
operands for a mutation that changes one was a quarter of the harness's
time in the sweep, and an out-of-process driver's proxy sends the operands
still shared as the original's bytes (``Connection.model_sent_unchanged``).  Each
mutation describes in words what it broke; that sentence is what a vendor
reads in the failure message.

The set, order and skips follow the 1.3 suite, so the single-operation ADD
model yields exactly the suite's 126 preparation cases (122 with a support
query).  The suite's operand removal does not renumber the surviving
references (they end up pointing one operand further along); that quirk is
kept on purpose, because renumbering correctly turns some removals into
valid models (drop one of two CONCATENATION inputs and the model is a legal
one-input concatenation), which would no longer test anything.
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
    OperandTypeRange,
    OperationType,
    OperationTypeRange,
    Priority,
    enum_name,
    is_extension_type,
)
from vts.hal.types import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams

T = OperandType
L = OperandLifeTime
Op = OperationType


@dataclass(frozen=True, slots=True)
class Mutation:
    kind: str
    args: tuple[int, ...]
    slug: str  # stable, name-safe: part of the case name
    description: str  # what was broken, in words
    query_support: bool = True  # preference/priority mutations only reach prepare_model
    preference: int = int(ExecutionPreference.FAST_SINGLE_ANSWER)
    priority: int = int(Priority.MEDIUM)


# ---------------------------------------------------------------------------
# Copying and small helpers


def clone_model(model: Model) -> Model:
    """A copy of the main subgraph's lists whose operands and operations are still the original's.

    A mutator may reorder, add and remove entries of the lists, but changes an operand or an
    operation only through ``_own_operand`` or ``_own_operation``, which put a copy of it in the
    list first: the original model is never changed (tests/families/test_validation_sharing.py).
    """
    main = model.main
    return Model(Subgraph(list(main.operands), list(main.operations), list(main.input_indexes),
                          list(main.output_indexes)),
                 model.referenced, model.operand_values, model.pools, model.relax_computation_float32_to_float16,
                 model.extension_name_to_prefix)


def _own_operand(model: Model, index: int) -> Operand:
    """Operand ``index`` of a clone, made the clone's own (a copy) so that it can be changed."""
    o = model.main.operands[index]
    copy = Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale, o.zero_point, o.lifetime,
                   DataLocation(o.location.pool_index, o.location.offset, o.location.length), o.extra_params)
    model.main.operands[index] = copy
    return copy


def _own_operation(model: Model, index: int) -> Operation:
    """Operation ``index`` of a clone, made the clone's own (a copy) so that it can be changed."""
    op = model.main.operations[index]
    copy = Operation(op.type, list(op.inputs), list(op.outputs))
    model.main.operations[index] = copy
    return copy


# Names of enum values, memoised: every case name of a validation sweep is decided by enumerating the
# mutations of its model (a shard or a -j worker enumerates them all to keep its own), and an enum
# lookup per label was most of that cost.


@lru_cache(maxsize=1024)
def _type_label(value: int) -> str:
    return enum_name(OperandType, value) if 0 <= value <= 0xFFFF else str(value)


@lru_cache(maxsize=1024)
def _operation_label(value: int) -> str:
    return enum_name(OperationType, value)


@lru_cache(maxsize=64)
def _lifetime_label(value: int) -> str:
    return enum_name(L, value)


def _operand_label(model: Model, index: int) -> str:
    operand = model.main.operands[index]
    return f"operand {index} ({_type_label(operand.type)})"


def _op_label(model: Model, index: int) -> str:
    return f"operation {index} ({_operation_label(model.main.operations[index].type)})"


def _byte_size(operand: Operand) -> int | None:
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


def _becomes_constant(model: Model, index: int) -> bool:
    """Point operand ``index`` at offset 0 of operand_values, growing it if needed (False if size unknown)."""
    operand = _own_operand(model, index)
    size = _byte_size(operand)
    if size is None:
        return False
    if len(model.operand_values) < size:
        model.operand_values = model.operand_values + bytes(size - len(model.operand_values))
    operand.lifetime = int(L.CONSTANT_COPY)
    operand.location = DataLocation(0, 0, size)
    return True


def _writes(op: Operation, index: int) -> bool:
    return index in op.outputs


# ---------------------------------------------------------------------------
# Mutators: (enumerate, apply) pairs


MutatorEnumerate = Callable[[Model], Iterator[Mutation]]
MutatorApply = Callable[[Model, Mutation], None]


def _execution_order(model: Model) -> Iterator[Mutation]:
    main = model.main
    for k, op in enumerate(main.operations):
        reads_temp = any(main.operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)
                         for i in op.inputs if 0 <= i < len(main.operands))
        if reads_temp:
            yield Mutation("execution_order", (k, 0), f"execution_order_{k}_first",
                           f"{_op_label(model, k)} moved before the operations that write its inputs")
        writes_used = any(main.operands[i].number_of_consumers > 0 for i in op.outputs if 0 <= i < len(main.operands))
        if writes_used:
            yield Mutation("execution_order", (k, 1), f"execution_order_{k}_last",
                           f"{_op_label(model, k)} moved after the operations that read its outputs")


def _apply_execution_order(model: Model, m: Mutation) -> None:
    k, to_end = m.args
    op = model.main.operations.pop(k)
    if to_end:
        model.main.operations.append(op)
    else:
        model.main.operations.insert(0, op)


INVALID_OPERAND_TYPES = (
    OperandTypeRange.FUNDAMENTAL_MIN - 1,
    OperandTypeRange.FUNDAMENTAL_MAX + 1,
    OperandTypeRange.OEM_MIN - 1,
    OperandTypeRange.OEM_MAX + 1,
)


def _operand_type(model: Model) -> Iterator[Mutation]:
    for i in range(len(model.main.operands)):
        for value in INVALID_OPERAND_TYPES:
            yield Mutation("operand_type", (i, value), f"operand_type_{i}_to_{value}",
                           f"{_operand_label(model, i)} type changed to invalid value {value}")


def _apply_operand_type(model: Model, m: Mutation) -> None:
    _own_operand(model, m.args[0]).type = m.args[1]


_SCALAR_TYPES = (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL)


def _operand_rank(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        if operand.type in _SCALAR_TYPES:
            yield Mutation("operand_rank", (i,), f"operand_rank_{i}",
                           f"{_operand_label(model, i)} is a scalar but was given dims [0]")


def _apply_operand_rank(model: Model, m: Mutation) -> None:
    _own_operand(model, m.args[0]).dimensions = [0]


_SCALE_ONE = (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32,
              T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.SUBGRAPH)


def _invalid_scale(operand_type: int) -> float:
    if operand_type in _SCALE_ONE or is_extension_type(operand_type):  # extension operands need scale 0
        return 1.0
    if operand_type == T.TENSOR_INT32:
        return -1.0
    return 0.0


def _operand_scale(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        scale = _invalid_scale(operand.type)
        yield Mutation("operand_scale", (i,), f"operand_scale_{i}",
                       f"{_operand_label(model, i)} scale changed from {operand.scale:g} to {scale:g}")


def _apply_operand_scale(model: Model, m: Mutation) -> None:
    operand = _own_operand(model, m.args[0])
    operand.scale = _invalid_scale(operand.type)


def _invalid_zero_points(operand_type: int) -> tuple[int, ...]:
    if operand_type in (*_SCALE_ONE, T.TENSOR_INT32):
        return (1,)
    return {
        T.TENSOR_QUANT8_ASYMM: (-1, 256),
        T.TENSOR_QUANT8_SYMM: (-129, -1, 1, 128),
        T.TENSOR_QUANT16_ASYMM: (-1, 65536),
        T.TENSOR_QUANT16_SYMM: (-32769, -1, 1, 32768),
    }.get(operand_type, ())  # type: ignore[call-overload]


def _operand_zero_point(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        for zp in _invalid_zero_points(operand.type):
            yield Mutation("operand_zero_point", (i, zp), f"operand_zero_point_{i}_to_{zp}",
                           f"{_operand_label(model, i)} zero point changed from {operand.zero_point} to {zp}")


def _apply_operand_zero_point(model: Model, m: Mutation) -> None:
    _own_operand(model, m.args[0]).zero_point = m.args[1]


def _lifetime_targets(operand: Operand) -> tuple[int, ...]:
    if operand.lifetime in (L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE):
        targets = [L.SUBGRAPH_INPUT]
        if _byte_size(operand) is not None:
            targets.append(L.CONSTANT_COPY)
        return tuple(int(t) for t in targets)
    if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT):
        return (int(L.TEMPORARY_VARIABLE), int(L.SUBGRAPH_OUTPUT))
    return ()


def _operand_lifetime(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        for target in _lifetime_targets(operand):
            yield Mutation("operand_lifetime", (i, target), f"operand_lifetime_{i}_to_{_lifetime_label(target)}",
                           f"{_operand_label(model, i)} lifetime changed from "
                           f"{_lifetime_label(operand.lifetime)} to {_lifetime_label(target)}")


def _apply_operand_lifetime(model: Model, m: Mutation) -> None:
    """Flip writer-ness while keeping the input/output lists consistent with the new lifetime."""
    index, target = m.args
    main = model.main
    operand = _own_operand(model, index)
    if index in main.input_indexes:
        main.input_indexes.remove(index)
    if index in main.output_indexes:
        main.output_indexes.remove(index)
    operand.location = DataLocation()
    operand.lifetime = target
    if target == L.CONSTANT_COPY:
        _becomes_constant(model, index)
    elif target == L.SUBGRAPH_INPUT:
        main.input_indexes.append(index)
    elif target == L.SUBGRAPH_OUTPUT:
        main.output_indexes.append(index)


def _input_output_target(operand: Operand) -> int | None:
    lifetime = operand.lifetime
    if lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        return int(L.SUBGRAPH_INPUT)
    if lifetime == L.SUBGRAPH_INPUT:
        return int(L.CONSTANT_COPY) if _byte_size(operand) is not None else None
    if lifetime == L.SUBGRAPH_OUTPUT:
        return int(L.TEMPORARY_VARIABLE)
    if lifetime == L.TEMPORARY_VARIABLE:
        return int(L.SUBGRAPH_OUTPUT)
    return None


def _operand_input_output(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        target = _input_output_target(operand)
        if target is not None:
            yield Mutation("operand_input_output", (i, target), f"operand_io_{i}_to_{_lifetime_label(target)}",
                           f"{_operand_label(model, i)} lifetime changed from {_lifetime_label(operand.lifetime)} "
                           f"to {_lifetime_label(target)} without updating the model's input/output lists")


def _apply_operand_input_output(model: Model, m: Mutation) -> None:
    index, target = m.args
    operand = _own_operand(model, index)
    operand.location = DataLocation()
    operand.lifetime = target
    if target == L.CONSTANT_COPY:
        _becomes_constant(model, index)


def _operand_consumers(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        n = operand.number_of_consumers
        for value in ((1,) if n == 0 else (n - 1, n + 1)):
            yield Mutation("operand_consumers", (i, value), f"operand_consumers_{i}_to_{value}",
                           f"{_operand_label(model, i)} number of consumers changed from {n} to {value}")


def _apply_operand_consumers(model: Model, m: Mutation) -> None:
    _own_operand(model, m.args[0]).number_of_consumers = m.args[1]


def _new_temporary(model: Model, like: int) -> int:
    original = model.main.operands[like]
    model.main.operands.append(Operand(original.type, list(original.dimensions), 0, original.scale,
                                       original.zero_point, int(L.TEMPORARY_VARIABLE), DataLocation(),
                                       original.extra_params))
    return len(model.main.operands) - 1


def _add_writer(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j, output in enumerate(op.outputs):
            yield Mutation("add_writer", (k, j), f"add_writer_{k}_{j}",
                           f"a copy of {_op_label(model, k)} also writes operand {output}: two writers")


def _apply_add_writer(model: Model, m: Mutation) -> None:
    k, j = m.args
    op = model.main.operations[k]
    outputs = [out if position == j else _new_temporary(model, out) for position, out in enumerate(op.outputs)]
    for i in op.inputs:
        _own_operand(model, i).number_of_consumers += 1
    model.main.operations.append(Operation(op.type, list(op.inputs), outputs))


_FUNDAMENTAL_TYPES = tuple(range(OperandTypeRange.FUNDAMENTAL_MIN, OperandTypeRange.FUNDAMENTAL_MAX + 1))
_CAST_LIKE = (Op.CAST, Op.ARGMAX, Op.ARGMIN)
_CAST_LIKE_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                    T.TENSOR_QUANT8_ASYMM_SIGNED)
_CONVOLUTIONS = (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D)
_TENSOR_TYPES = tuple(t for t in _FUNDAMENTAL_TYPES if t not in (*_SCALAR_TYPES, T.SUBGRAPH))


#: How an operation uses an operand: (operation type, input slot), the slot -1 for an output.
Use = tuple[int, int]


def _operand_uses(model: Model) -> dict[int, list[Use]]:
    """Every use of each operand, gathered once per model (the rules below look at one operand's uses)."""
    uses: dict[int, list[Use]] = {}
    for op in model.main.operations:
        for slot, operand in enumerate(op.inputs):
            uses.setdefault(operand, []).append((op.type, slot))
        for operand in op.outputs:
            uses.setdefault(operand, []).append((op.type, -1))
    return uses


def _substitute_is_legal(uses: list[Use], model_has_cast_like: bool, new_type: int) -> bool:
    """Where another type is legal for the operand, the suite skips it (catalogue §4.2 row 10).

    ``uses`` are the operand's uses (``_operand_uses``); ``model_has_cast_like``
    whether any operation of the model is CAST, ARGMAX or ARGMIN.
    """
    if model_has_cast_like and new_type in _CAST_LIKE_TYPES:
        return True  # the suite skips these for every operand of such a model
    for op_type, slot in uses:
        if is_extension_type(op_type):
            return True  # an extension operation's signature is the vendor's: nnvts cannot call a type illegal
        if slot >= 0:
            if op_type == Op.LSH_PROJECTION and slot == 1:
                return True
            if op_type == Op.QUANTIZE and slot == 0 and new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
                return True
            if op_type == Op.RANDOM_MULTINOMIAL and slot == 0 and new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
                return True
            if op_type == Op.DEQUANTIZE and slot == 0 and new_type in (
                    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                    T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
                return True
            if op_type in _CONVOLUTIONS and slot == 1 and new_type in (
                    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
                return True
            if op_type == Op.AXIS_ALIGNED_BBOX_TRANSFORM and slot == 1 and new_type in (
                    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
                return True
            if op_type == Op.RANK and slot == 0 and new_type in _TENSOR_TYPES:
                return True
        else:
            if op_type == Op.QUANTIZE and new_type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
                return True
            if op_type == Op.DEQUANTIZE and new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
                return True
    return False


def _operation_operand_type(model: Model) -> Iterator[Mutation]:
    uses = _operand_uses(model)
    cast_like = any(op.type in _CAST_LIKE for op in model.main.operations)
    for i, operand in enumerate(model.main.operands):
        operand_uses = uses.get(i, [])
        for new_type in _FUNDAMENTAL_TYPES:
            if new_type == operand.type or _substitute_is_legal(operand_uses, cast_like, new_type):
                continue
            name = _type_label(new_type)
            yield Mutation("operation_operand_type", (i, new_type),
                           f"operation_operand_type_{i}_to_{name}",
                           f"{_operand_label(model, i)} changed to {name} (a type its operation "
                           "does not accept), with dims and quantization made consistent")


def _apply_operation_operand_type(model: Model, m: Mutation) -> None:
    """Change the type and make the operand self-consistent for the new type, as the suite does."""
    index, new_type = m.args
    operand = _own_operand(model, index)
    dims = list(operand.dimensions) or [1]
    operand.type = new_type
    if new_type in _SCALAR_TYPES:
        operand.dimensions, operand.scale, operand.zero_point = [], 0.0, 0
    elif new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_BOOL8):
        operand.dimensions, operand.scale, operand.zero_point = dims, 0.0, 0
    elif new_type == T.TENSOR_INT32:
        operand.dimensions, operand.zero_point = dims, 0
    elif new_type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM):
        operand.dimensions = dims
        operand.scale = operand.scale if operand.scale != 0.0 else 1.0
    elif new_type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        operand.dimensions, operand.scale, operand.zero_point = dims, 0.0, 0
        channels = operand.dimensions[0] if operand.dimensions else 0
        operand.extra_params = SymmPerChannelQuantParams([1.0] * channels, 0)


INVALID_OPERATION_TYPES = (OperationTypeRange.FUNDAMENTAL_MAX + 1, OperationTypeRange.OEM_MIN - 1,
                           OperationTypeRange.OEM_MAX + 1)


def _operation_type(model: Model) -> Iterator[Mutation]:
    for k in range(len(model.main.operations)):
        for value in INVALID_OPERATION_TYPES:
            yield Mutation("operation_type", (k, value), f"operation_type_{k}_to_{value}",
                           f"{_op_label(model, k)} type changed to invalid value {value}")


def _apply_operation_type(model: Model, m: Mutation) -> None:
    _own_operation(model, m.args[0]).type = m.args[1]


def _operation_input_index(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.inputs)):
            yield Mutation("operation_input_index", (k, j), f"operation_input_index_{k}_{j}",
                           f"{_op_label(model, k)} input {j} points past the last operand")


def _apply_operation_input_index(model: Model, m: Mutation) -> None:
    k, j = m.args
    _own_operation(model, k).inputs[j] = len(model.main.operands)


def _operation_output_index(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.outputs)):
            yield Mutation("operation_output_index", (k, j), f"operation_output_index_{k}_{j}",
                           f"{_op_label(model, k)} output {j} points past the last operand")


def _apply_operation_output_index(model: Model, m: Mutation) -> None:
    k, j = m.args
    _own_operation(model, k).outputs[j] = len(model.main.operands)


def _remove_write(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j, output in enumerate(op.outputs):
            if model.main.operands[output].number_of_consumers > 0:
                yield Mutation("remove_write", (k, j), f"remove_write_{k}_{j}",
                               f"{_op_label(model, k)} no longer writes operand {output}, which is still read")


def _apply_remove_write(model: Model, m: Mutation) -> None:
    k, j = m.args
    op = _own_operation(model, k)
    op.outputs[j] = _new_temporary(model, op.outputs[j])


_VARIABLE_OUTPUTS = (Op.SPLIT, Op.BIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_RNN,
                     Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.UNIDIRECTIONAL_SEQUENCE_RNN)


def _remove_operand(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        if operand.number_of_consumers == 0:
            continue
        if any(op.type in _VARIABLE_OUTPUTS and i in op.outputs for op in model.main.operations):
            continue
        yield Mutation("remove_operand", (i,), f"remove_operand_{i}",
                       f"{_operand_label(model, i)} removed with every reference to it")


def _apply_remove_operand(model: Model, m: Mutation) -> None:
    """Delete the operand and every reference to it; later references keep their (now shifted) numbers."""
    (index,) = m.args
    main = model.main
    del main.operands[index]

    def drop(indexes: list[int]) -> list[int]:
        return [i for i in indexes if i != index]

    for k, op in enumerate(main.operations):
        if index in op.inputs or index in op.outputs:
            op = _own_operation(model, k)
            op.inputs = drop(op.inputs)
            op.outputs = drop(op.outputs)
    main.input_indexes = drop(main.input_indexes)
    main.output_indexes = drop(main.output_indexes)


def _remove_operation(model: Model) -> Iterator[Mutation]:
    for k in range(len(model.main.operations)):
        yield Mutation("remove_operation", (k,), f"remove_operation_{k}", f"{_op_label(model, k)} removed")


def _apply_remove_operation(model: Model, m: Mutation) -> None:
    op = model.main.operations.pop(m.args[0])
    for i in op.inputs:
        _own_operand(model, i).number_of_consumers -= 1


def _removal_leaves_valid_signature(op: Operation, slot: int) -> bool:
    """Input removals that leave a still-valid signature are skipped by the suite (catalogue §4.2 row 17)."""
    n = len(op.inputs)
    t = op.type
    if is_extension_type(t):
        return True  # an extension operation's signature is the vendor's: nnvts cannot call a removal invalid
    if t == Op.CONCATENATION and n > 2 and slot != n - 1:
        return True
    if t == Op.DEPTHWISE_CONV_2D and (n, slot) in ((12, 11), (9, 8)):
        return True
    if t in (Op.CONV_2D, Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D) and (n, slot) in ((11, 10), (8, 7)):
        return True
    if t == Op.RESIZE_BILINEAR and n >= 4 and slot >= 3:
        return True
    if t == Op.RESIZE_NEAREST_NEIGHBOR and n >= 5 and slot >= 3:
        return True
    if t in (Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE, Op.BATCH_TO_SPACE_ND) and (n, slot) == (3, 2):
        return True
    if t == Op.SPACE_TO_BATCH_ND and (n, slot) == (4, 3):
        return True
    if t == Op.L2_NORMALIZATION and (n, slot) == (2, 1):
        return True
    if t == Op.LOCAL_RESPONSE_NORMALIZATION and (n, slot) == (6, 5):
        return True
    return t == Op.SOFTMAX and (n, slot) == (3, 2)


def _remove_operation_input(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.inputs)):
            if not _removal_leaves_valid_signature(op, j):
                yield Mutation("remove_operation_input", (k, j), f"remove_operation_input_{k}_{j}",
                               f"{_op_label(model, k)} input {j} removed")


def _apply_remove_operation_input(model: Model, m: Mutation) -> None:
    k, j = m.args
    removed = _own_operation(model, k).inputs.pop(j)
    _own_operand(model, removed).number_of_consumers -= 1


def _remove_operation_output(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.outputs)):
            yield Mutation("remove_operation_output", (k, j), f"remove_operation_output_{k}_{j}",
                           f"{_op_label(model, k)} output {j} removed")


def _apply_remove_operation_output(model: Model, m: Mutation) -> None:
    k, j = m.args
    _own_operation(model, k).outputs.pop(j)


def _input_addition_leaves_valid_signature(op: Operation) -> bool:
    n = len(op.inputs)
    if is_extension_type(op.type):
        return True  # an extension operation's signature is the vendor's: nnvts cannot call an addition invalid
    return ((op.type == Op.L2_NORMALIZATION and n == 1) or (op.type == Op.LOCAL_RESPONSE_NORMALIZATION and n == 5)
            or (op.type == Op.SOFTMAX and n == 2)
            or (op.type in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR) and n < 6))


def _add_operation_input(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        if not _input_addition_leaves_valid_signature(op):
            yield Mutation("add_operation_input", (k,), f"add_operation_input_{k}",
                           f"{_op_label(model, k)} got an extra INT32 input")


def _new_scalar(model: Model, lifetime: L) -> int:
    model.main.operands.append(Operand(int(T.INT32), [], 1, 0.0, 0, int(lifetime), DataLocation(), None))
    return len(model.main.operands) - 1


def _apply_add_operation_input(model: Model, m: Mutation) -> None:
    index = _new_scalar(model, L.SUBGRAPH_INPUT)
    _own_operation(model, m.args[0]).inputs.append(index)
    model.main.input_indexes.append(index)


def _add_operation_output(model: Model) -> Iterator[Mutation]:
    for k in range(len(model.main.operations)):
        yield Mutation("add_operation_output", (k,), f"add_operation_output_{k}",
                       f"{_op_label(model, k)} got an extra INT32 output")


def _apply_add_operation_output(model: Model, m: Mutation) -> None:
    index = _new_scalar(model, L.SUBGRAPH_OUTPUT)
    _own_operation(model, m.args[0]).outputs.append(index)
    model.main.output_indexes.append(index)


def _execution_preference(model: Model) -> Iterator[Mutation]:
    for value in (ExecutionPreference.LOW_POWER - 1, ExecutionPreference.SUSTAINED_SPEED + 1):
        yield Mutation("execution_preference", (value,), f"execution_preference_{value}",
                       f"execution preference {value} (valid: 0..2)", query_support=False, preference=value)


def _execution_priority(model: Model) -> Iterator[Mutation]:
    for value in (Priority.LOW - 1, Priority.HIGH + 1):
        yield Mutation("execution_priority", (value,), f"execution_priority_{value}",
                       f"priority {value} (valid: 0..2)", query_support=False, priority=value)


def _no_change(model: Model, m: Mutation) -> None:
    """Preference and priority mutations leave the model intact."""


#: In the suite's order (ValidateModel.cpp's validateModel).
MUTATORS: dict[str, tuple[MutatorEnumerate, MutatorApply]] = {
    "execution_order": (_execution_order, _apply_execution_order),
    "operand_type": (_operand_type, _apply_operand_type),
    "operand_rank": (_operand_rank, _apply_operand_rank),
    "operand_scale": (_operand_scale, _apply_operand_scale),
    "operand_zero_point": (_operand_zero_point, _apply_operand_zero_point),
    "operand_lifetime": (_operand_lifetime, _apply_operand_lifetime),
    "operand_input_output": (_operand_input_output, _apply_operand_input_output),
    "operand_consumers": (_operand_consumers, _apply_operand_consumers),
    "add_writer": (_add_writer, _apply_add_writer),
    "operation_operand_type": (_operation_operand_type, _apply_operation_operand_type),
    "operation_type": (_operation_type, _apply_operation_type),
    "operation_input_index": (_operation_input_index, _apply_operation_input_index),
    "operation_output_index": (_operation_output_index, _apply_operation_output_index),
    "remove_write": (_remove_write, _apply_remove_write),
    "remove_operand": (_remove_operand, _apply_remove_operand),
    "remove_operation": (_remove_operation, _apply_remove_operation),
    "remove_operation_input": (_remove_operation_input, _apply_remove_operation_input),
    "remove_operation_output": (_remove_operation_output, _apply_remove_operation_output),
    "add_operation_input": (_add_operation_input, _apply_add_operation_input),
    "add_operation_output": (_add_operation_output, _apply_add_operation_output),
    "execution_preference": (_execution_preference, _no_change),
    "execution_priority": (_execution_priority, _no_change),
}


def enumerate_mutations(model: Model) -> Iterator[Mutation]:
    for enumerate_fn, _ in MUTATORS.values():
        yield from enumerate_fn(model)


def apply_mutation(model: Model, mutation: Mutation) -> Model:
    """A mutated copy of ``model`` (the original is untouched; what the mutation did not change is shared)."""
    mutated = clone_model(model)
    MUTATORS[mutation.kind][1](mutated, mutation)
    return mutated
