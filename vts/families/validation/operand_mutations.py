"""Operand mutations of the HAL validation suite: one field of one operand made invalid.

VTS ValidateModel.cpp's mutateOperandTypeTest, mutateOperandRankTest,
mutateOperandScaleTest, mutateOperandZeroPointTest, mutateOperandLifeTimeTest,
mutateOperandInputOutputTest and mutateOperandNumberOfConsumersTest.  Separate
from the operation mutations because each of these changes one operand alone,
judged by the operand rules of the HAL (``vts.hal.validation``), never by an
operation's signature.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families.validation.mutator_base import (
    SCALAR_TYPES,
    Mutation,
    Mutators,
    becomes_constant,
    byte_size,
    lifetime_label,
    operand_label,
    own_operand,
)
from vts.hal.enums import OperandLifeTime, OperandType, OperandTypeRange, is_extension_type
from vts.hal.types import DataLocation, Model, Operand

T = OperandType
L = OperandLifeTime


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
                           f"{operand_label(model, i)} type changed to invalid value {value}")


def _apply_operand_type(model: Model, m: Mutation) -> None:
    own_operand(model, m.args[0]).type = m.args[1]


def _operand_rank(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        if operand.type in SCALAR_TYPES:
            yield Mutation("operand_rank", (i,), f"operand_rank_{i}",
                           f"{operand_label(model, i)} is a scalar but was given dims [0]")


def _apply_operand_rank(model: Model, m: Mutation) -> None:
    own_operand(model, m.args[0]).dimensions = [0]


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
                       f"{operand_label(model, i)} scale changed from {operand.scale:g} to {scale:g}")


def _apply_operand_scale(model: Model, m: Mutation) -> None:
    operand = own_operand(model, m.args[0])
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
                           f"{operand_label(model, i)} zero point changed from {operand.zero_point} to {zp}")


def _apply_operand_zero_point(model: Model, m: Mutation) -> None:
    own_operand(model, m.args[0]).zero_point = m.args[1]


def _lifetime_targets(operand: Operand) -> tuple[int, ...]:
    if operand.lifetime in (L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE):
        targets = [L.SUBGRAPH_INPUT]
        if byte_size(operand) is not None:
            targets.append(L.CONSTANT_COPY)
        return tuple(int(t) for t in targets)
    if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT):
        return (int(L.TEMPORARY_VARIABLE), int(L.SUBGRAPH_OUTPUT))
    return ()


def _operand_lifetime(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        for target in _lifetime_targets(operand):
            yield Mutation("operand_lifetime", (i, target), f"operand_lifetime_{i}_to_{lifetime_label(target)}",
                           f"{operand_label(model, i)} lifetime changed from "
                           f"{lifetime_label(operand.lifetime)} to {lifetime_label(target)}")


def _apply_operand_lifetime(model: Model, m: Mutation) -> None:
    """Flip writer-ness while keeping the input/output lists consistent with the new lifetime."""
    index, target = m.args
    main = model.main
    operand = own_operand(model, index)
    if index in main.input_indexes:
        main.input_indexes.remove(index)
    if index in main.output_indexes:
        main.output_indexes.remove(index)
    operand.location = DataLocation()
    operand.lifetime = target
    if target == L.CONSTANT_COPY:
        becomes_constant(model, index)
    elif target == L.SUBGRAPH_INPUT:
        main.input_indexes.append(index)
    elif target == L.SUBGRAPH_OUTPUT:
        main.output_indexes.append(index)


def _input_output_target(operand: Operand) -> int | None:
    lifetime = operand.lifetime
    if lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        return int(L.SUBGRAPH_INPUT)
    if lifetime == L.SUBGRAPH_INPUT:
        return int(L.CONSTANT_COPY) if byte_size(operand) is not None else None
    if lifetime == L.SUBGRAPH_OUTPUT:
        return int(L.TEMPORARY_VARIABLE)
    if lifetime == L.TEMPORARY_VARIABLE:
        return int(L.SUBGRAPH_OUTPUT)
    return None


def _operand_input_output(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        target = _input_output_target(operand)
        if target is not None:
            yield Mutation("operand_input_output", (i, target), f"operand_io_{i}_to_{lifetime_label(target)}",
                           f"{operand_label(model, i)} lifetime changed from {lifetime_label(operand.lifetime)} "
                           f"to {lifetime_label(target)} without updating the model's input/output lists")


def _apply_operand_input_output(model: Model, m: Mutation) -> None:
    index, target = m.args
    operand = own_operand(model, index)
    operand.location = DataLocation()
    operand.lifetime = target
    if target == L.CONSTANT_COPY:
        becomes_constant(model, index)


def _operand_consumers(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        n = operand.number_of_consumers
        for value in ((1,) if n == 0 else (n - 1, n + 1)):
            yield Mutation("operand_consumers", (i, value), f"operand_consumers_{i}_to_{value}",
                           f"{operand_label(model, i)} number of consumers changed from {n} to {value}")


def _apply_operand_consumers(model: Model, m: Mutation) -> None:
    own_operand(model, m.args[0]).number_of_consumers = m.args[1]


#: This module's mutators, by kind (``mutations.MUTATORS`` puts them in the suite's order).
MUTATORS: Mutators = {
    "operand_type": (_operand_type, _apply_operand_type),
    "operand_rank": (_operand_rank, _apply_operand_rank),
    "operand_scale": (_operand_scale, _apply_operand_scale),
    "operand_zero_point": (_operand_zero_point, _apply_operand_zero_point),
    "operand_lifetime": (_operand_lifetime, _apply_operand_lifetime),
    "operand_input_output": (_operand_input_output, _apply_operand_input_output),
    "operand_consumers": (_operand_consumers, _apply_operand_consumers),
}
