"""``validateMemoryDesc`` for a driver's ``IDevice::allocate``: the HAL's rules, once, for every driver.

A memory-domain buffer is allocated for roles (an input or output of a
prepared model of this device) and a descriptor; the roles must name real
inputs and outputs, no role twice, frequencies in (0, 1], and every role
must agree on the operand type, scale, zero point, per-channel parameters
and (with the descriptor) the dimensions (the HAL's ``combineDimensions``).
Each failure is INVALID_ARGUMENT with the reason.  What a device then does
with the combined operand (an array in host memory, a device array, a
refusal of shapes it cannot hold) is its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vts.hal.enums import ErrorStatus, is_extension_type, is_scalar_type
from vts.hal.errors import DriverError
from vts.hal.types import BufferDesc, BufferRole, Model, Operand, SymmPerChannelQuantParams

Dims = tuple[int, ...]


def _invalid(message: str) -> DriverError:
    return DriverError(ErrorStatus.INVALID_ARGUMENT, f"allocate: {message}")


def combine_dims(first: Sequence[int], second: Sequence[int]) -> Dims | None:
    """The HAL's ``combineDimensions``: merge two partial shapes, None if they conflict.

    Empty means unknown rank and combines with anything; otherwise the ranks
    must agree and, axis by axis, two known (non-zero) sizes must be equal.
    """
    if not first:
        return tuple(second)
    if not second:
        return tuple(first)
    if len(first) != len(second):
        return None
    merged = []
    for a, b in zip(first, second, strict=True):
        if a and b and a != b:
            return None
        merged.append(a or b)
    return tuple(merged)


def fully_specified(dims: Sequence[int]) -> bool:
    """A tensor shape with known rank and no unknown (0) axis."""
    return bool(dims) and 0 not in dims


@dataclass(frozen=True, slots=True)
class BufferOperand:
    """What every role of a buffer agrees on (validateMemoryDesc's combined operand)."""

    type: int
    dimensions: Dims
    scale: float
    zero_point: int
    extra_params: SymmPerChannelQuantParams | bytes | None = None

    @property
    def is_scalar(self) -> bool:
        return is_scalar_type(self.type)


@dataclass(frozen=True, slots=True)
class Role:
    """(prepared model, input or output, index): one use a buffer was allocated for.

    The prepared model is compared by identity, as the sample driver compares
    ``IPreparedModel`` pointers: an identical model prepared twice is a
    different role.
    """

    prepared_model_id: int
    is_input: bool
    io_index: int


def _is_index(value: object, bound: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < bound


def validate_memory_desc(desc: BufferDesc, prepared_models: Sequence[object], input_roles: Sequence[BufferRole],
                         output_roles: Sequence[BufferRole],
                         model_of: Callable[[object], Model | None]) -> tuple[BufferOperand, frozenset[Role]]:
    """``validateMemoryDesc``: every rule INVALID_ARGUMENT; returns the combined operand and the roles.

    No prepared models; no roles; a role's model index out of range, its
    model null or not this device's; its io index out of range; frequency
    outside (0, 1]; the same (model, input/output, index) twice (also via
    two indices naming one object); roles whose operands differ in type,
    scale, zero point or extra params; dimensions of roles and descriptor
    that do not combine; dimensions for a scalar type.
    """
    if not prepared_models:
        raise _invalid("no prepared models")
    if not input_roles and not output_roles:
        raise _invalid("no input or output roles")
    roles: set[Role] = set()
    operands: list[Operand] = []
    for is_input, role_list in ((True, input_roles), (False, output_roles)):
        kind = "input" if is_input else "output"
        for role in role_list:
            if not _is_index(role.model_index, len(prepared_models)):
                raise _invalid(f"{kind} role names model {role.model_index!r} of {len(prepared_models)}")
            prepared = prepared_models[role.model_index]
            model = model_of(prepared) if prepared is not None else None
            if model is None:
                raise _invalid(f"{kind} role's prepared model {role.model_index} is null or not from this device")
            indexes = model.main.input_indexes if is_input else model.main.output_indexes
            if not _is_index(role.io_index, len(indexes)):
                raise _invalid(f"{kind} role io index {role.io_index!r}; the model has {len(indexes)} {kind}s")
            frequency = role.frequency
            if not isinstance(frequency, int | float) or math.isnan(frequency) or not 0.0 < frequency <= 1.0:
                raise _invalid(f"{kind} role frequency {frequency!r} outside (0, 1]")
            key = Role(id(prepared), is_input, role.io_index)
            if key in roles:
                raise _invalid(f"{kind} {role.io_index} of prepared model {role.model_index} named twice")
            roles.add(key)
            operands.append(model.main.operands[indexes[role.io_index]])
    return _combine_operands(desc, operands), frozenset(roles)


def _combine_operands(desc: BufferDesc, operands: Sequence[Operand]) -> BufferOperand:
    first = operands[0]
    dims: Dims | None = tuple(desc.dimensions)
    for operand in operands:
        if operand.type != first.type:
            raise _invalid(f"roles disagree on the operand type ({first.type} and {operand.type})")
        if operand.scale != first.scale:
            raise _invalid(f"roles disagree on the scale ({first.scale} and {operand.scale})")
        if operand.zero_point != first.zero_point:
            raise _invalid(f"roles disagree on the zero point ({first.zero_point} and {operand.zero_point})")
        if not is_extension_type(first.type) and operand.extra_params != first.extra_params:
            raise _invalid("roles disagree on the extra (per-channel) parameters")
        combined = combine_dims(dims or (), operand.dimensions)
        if combined is None:
            raise _invalid(f"dimensions {list(dims or ())} and {list(operand.dimensions)} of the roles and the "
                           "descriptor conflict")
        dims = combined
    if not is_extension_type(first.type) and is_scalar_type(first.type) and dims:
        raise _invalid(f"dimensions {list(dims)} for a scalar operand type")
    return BufferOperand(first.type, tuple(dims or ()), first.scale, first.zero_point, first.extra_params)
