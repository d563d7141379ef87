"""Model and request validation: Android's ``ValidateHal.cpp`` in Python.

A driver must refuse an invalid model or request with INVALID_ARGUMENT
before doing any work (IDevice::prepareModel*, getSupportedOperations*,
IPreparedModel::execute*), and VTS's validation family checks exactly that
by mutating valid models one field at a time.  These functions implement
every rule of the HAL reference (§12.6) so drivers can reuse them and the
harness can tell a legal model from a broken one:

* :func:`validate_model` -- operands, operations (through
  :mod:`vts.hal.operations`), input/output lists, graph order, consumer
  counts, memory pools, referenced subgraphs and reference cycles;
* :func:`validate_request` -- argument counts, locations within pools,
  dimensions, pools;
* helpers :func:`validate_operand`, :func:`validate_memory_pool_names` and
  :func:`count_consumers`.

Every rule raises :class:`ValidationError` with a message that says where
(subgraph, operand or operation index, request argument) and what is wrong.
Values that no HAL enum defines (operand type 9999, lifetime 77, negative
dimensions) are reported the same way, never as a Python exception.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from vts.hal.enums import (
    ELEMENT_SIZE,
    EXTENSION_TYPE_HIGH_BITS_PREFIX,
    HalVersion,
    OperandLifeTime,
    OperandType,
    enum_name,
    is_extension_type,
)
from vts.hal.memory import ASHMEM, HARDWARE_BUFFER, HARDWARE_BUFFER_BLOB, MMAP_FD, Memory
from vts.hal.operations import operation_name, validate_operation
from vts.hal.types import (
    DataLocation,
    MemoryToken,
    Model,
    Operand,
    Operation,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
)
from vts.hal.validation_error import BeyondHalRule, ValidationError

__all__ = [
    "BeyondHalRule",
    "ValidationError",
    "count_consumers",
    "operand_byte_size",
    "validate_memory_pool_names",
    "validate_model",
    "validate_operand",
    "validate_request",
]

_T = OperandType
_L = OperandLifeTime
_UINT32_MAX = 0xFFFF_FFFF

#: Operand types each HAL version's OperandType enum defines (extensions aside).
_TYPES_1_0 = frozenset({0, 1, 2, 3, 4, 5, _T.OEM, _T.TENSOR_OEM_BYTE})
_TYPES_1_2 = _TYPES_1_0 | frozenset(range(6, 14))
_TYPES_1_3 = _TYPES_1_2 | frozenset({_T.TENSOR_QUANT8_ASYMM_SIGNED, _T.SUBGRAPH})
_TYPES_AIDL = _TYPES_1_3 - {_T.OEM, _T.TENSOR_OEM_BYTE}
_TYPES_BY_VERSION = {
    HalVersion.V1_0: _TYPES_1_0,
    HalVersion.V1_1: _TYPES_1_0,
    HalVersion.V1_2: _TYPES_1_2,
    HalVersion.V1_3: _TYPES_1_3,
    # AIDL (feature levels 5 to 8) keeps 1.3's types without the OEM ones (OperandType.aidl).
    HalVersion.FL5: _TYPES_AIDL,
    HalVersion.FL6: _TYPES_AIDL,
    HalVersion.FL7: _TYPES_AIDL,
    HalVersion.FL8: _TYPES_AIDL,
}

_SCALAR_TYPES = frozenset({_T.FLOAT16, _T.FLOAT32, _T.INT32, _T.UINT32, _T.BOOL, _T.SUBGRAPH, _T.OEM})

#: Types whose scale must be exactly 0 (``OperandType`` in NN HAL 1.3 types.hal; ValidateHal.cpp).
_ZERO_SCALE = frozenset({
    _T.FLOAT16, _T.FLOAT32, _T.INT32, _T.UINT32, _T.BOOL, _T.SUBGRAPH,
    _T.TENSOR_FLOAT16, _T.TENSOR_FLOAT32, _T.TENSOR_BOOL8, _T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
})
#: Types whose scale must be positive: real value = (stored - zeroPoint) * scale.
_POSITIVE_SCALE = frozenset({
    _T.TENSOR_QUANT8_ASYMM, _T.TENSOR_QUANT8_ASYMM_SIGNED, _T.TENSOR_QUANT8_SYMM,
    _T.TENSOR_QUANT16_ASYMM, _T.TENSOR_QUANT16_SYMM,
})
#: Allowed zero point range per type; types not listed here and not OEM need 0.
_ZERO_POINT_RANGE = {
    _T.TENSOR_QUANT8_ASYMM: (0, 255),
    _T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    _T.TENSOR_QUANT16_ASYMM: (0, 65535),
}
_OEM_TYPES = frozenset({_T.OEM, _T.TENSOR_OEM_BYTE})

_LIFETIMES_1_0 = frozenset(range(0, 6))
_LIFETIMES_1_3 = _LIFETIMES_1_0 | {_L.SUBGRAPH}
_KNOWN_BEFORE_EXECUTION = frozenset({
    _L.SUBGRAPH_INPUT, _L.CONSTANT_COPY, _L.CONSTANT_REFERENCE, _L.NO_VALUE, _L.SUBGRAPH,
})

_ELEMENT_SIZE = {int(t): size for t, size in ELEMENT_SIZE.items()}

_POOL_NAMES_1_0 = (ASHMEM, MMAP_FD)
_POOL_NAMES_1_2 = (ASHMEM, MMAP_FD, HARDWARE_BUFFER_BLOB, HARDWARE_BUFFER)


# ---------------------------------------------------------------------------
# Small helpers


def _is_uint(value: Any, bits: int = 32) -> bool:
    if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
        return False
    return 0 <= value < (1 << bits)


def _is_int(value: Any) -> bool:
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_name(value: Any) -> str:
    if _is_int(value) and is_extension_type(value):
        return f"extension type {value:#x}"
    return enum_name(OperandType, value) if _is_int(value) else repr(value)


def _lifetime_name(value: Any) -> str:
    return enum_name(OperandLifeTime, value) if _is_int(value) else repr(value)


def operand_byte_size(operand_type: int, dimensions: Sequence[int]) -> int:
    """Bytes a fully specified operand of a non-extension type occupies.

    Scalars take their element size; tensors the element size times the
    product of the dimensions (0 when the rank or a dimension is unknown).
    """
    element = _ELEMENT_SIZE[operand_type]
    if operand_type in _SCALAR_TYPES:
        return element
    if not dimensions:
        return 0
    size = element
    for d in dimensions:
        size *= d
    return size


def count_consumers(subgraph: Subgraph) -> list[int]:
    """How many operation input slots read each operand of ``subgraph``.

    This is the value the HAL requires in ``Operand.numberOfConsumers``
    (an operand read twice by one operation counts twice).  Indexes out of
    range are ignored, so the helper also works on broken models.
    """
    counts = [0] * len(subgraph.operands)
    for operation in subgraph.operations:
        for index in operation.inputs:
            if _is_int(index) and 0 <= index < len(counts):
                counts[index] += 1
    return counts


def _pool_size(pool: Any) -> int:
    if isinstance(pool, MemoryToken):
        return 0  # forces offset 0 and length 0, as Android's MemoryAccessVerifier does
    size = getattr(pool, "size", 0)
    return size if _is_uint(size, 64) else 0


def _check_location_in_pool(location: DataLocation, pool_sizes: Sequence[int], where: str) -> None:
    pool_index = location.pool_index
    if pool_index >= len(pool_sizes):
        raise ValidationError(f"{where}: pool index {pool_index} out of range ({len(pool_sizes)} pools)")
    size = pool_sizes[pool_index]
    if location.offset + location.length > size:
        raise ValidationError(
            f"{where}: offset {location.offset} + length {location.length} exceeds the size {size} of pool "
            f"{pool_index}"
        )
    if location.offset + location.length + location.padding > size:
        raise ValidationError(
            f"{where}: offset {location.offset} + length {location.length} + padding {location.padding} exceeds "
            f"the size {size} of pool {pool_index} (DataLocation.aidl)"
        )


def _check_location_fields(location: Any, where: str) -> DataLocation:
    if not isinstance(location, DataLocation):
        raise ValidationError(f"{where}: location is {type(location).__name__}, expected a DataLocation")
    if not (_is_uint(location.pool_index) and _is_uint(location.offset) and _is_uint(location.length)):
        raise ValidationError(
            f"{where}: location {location} must hold uint32 pool index, offset and length"
        )
    if not _is_uint(location.padding):
        raise ValidationError(f"{where}: padding {location.padding!r} must be a uint32 (DataLocation.aidl)")
    return location


# ---------------------------------------------------------------------------
# Operands


def _check_operand_type(
    operand: Operand, where: str, hal_version: HalVersion, prefixes: Iterable[int]
) -> None:
    value = operand.type
    if not _is_int(value):
        raise ValidationError(f"{where}: operand type {value!r} is not an integer")
    if is_extension_type(value):
        if value > _UINT32_MAX:
            raise ValidationError(f"{where}: operand type {value} is out of range")
        if hal_version < HalVersion.V1_2:
            raise ValidationError(
                f"{where}: extension operand types need HAL 1.2, validating for HAL {hal_version}"
            )
        prefix = value >> EXTENSION_TYPE_HIGH_BITS_PREFIX
        if prefix not in prefixes:
            raise ValidationError(
                f"{where}: extension operand type {value:#x} uses prefix {prefix}, which the model's "
                "extensionNameToPrefix does not declare"
            )
        return
    if value not in _TYPES_BY_VERSION[hal_version]:
        if hal_version.is_aidl and value in _TYPES_1_3:
            raise ValidationError(f"{where}: operand type {_type_name(value)} is not one of AIDL's (OperandType.aidl "
                                  "has no OEM types)")
        if value in _TYPES_1_3:
            raise ValidationError(
                f"{where}: operand type {_type_name(value)} needs a later HAL than {hal_version}"
            )
        raise ValidationError(f"{where}: invalid operand type {value} for HAL {hal_version}")


def _check_dimensions(operand: Operand, where: str, hal_version: HalVersion) -> None:
    dims = operand.dimensions
    if not isinstance(dims, list | tuple) or not all(_is_uint(d) for d in dims):
        raise ValidationError(f"{where}: dimensions {dims!r} must be a list of uint32 values")
    value = operand.type
    if is_extension_type(value):
        return  # the extension decides whether its type is a scalar or a tensor
    if value in _SCALAR_TYPES:
        if dims:
            raise ValidationError(
                f"{where}: scalar {_type_name(value)} has dimensions {list(dims)}, expected none"
            )
        return
    if not dims:
        if hal_version < HalVersion.V1_2:
            raise ValidationError(
                f"{where}: tensor of unknown rank needs HAL 1.2, validating for {hal_version}"
            )
        if operand.lifetime in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE):
            raise ValidationError(f"{where}: constant tensor must have a known rank")


def _check_scale_and_zero_point(operand: Operand, where: str) -> None:
    value, scale, zero_point = operand.type, operand.scale, operand.zero_point
    if not _is_number(scale) or not math.isfinite(scale):
        raise ValidationError(f"{where}: scale {scale!r} is not a finite number")
    if not _is_int(zero_point):
        raise ValidationError(f"{where}: zeroPoint {zero_point!r} is not an integer")
    if is_extension_type(value):
        if scale != 0 or zero_point != 0:
            raise ValidationError(f"{where}: extension operand must have scale 0 and zeroPoint 0")
        return
    if value in _OEM_TYPES:
        return  # historically free for OEM types
    if value in _ZERO_SCALE and scale != 0:
        raise ValidationError(f"{where}: {_type_name(value)} must have scale 0, got {scale:g}")
    if value == _T.TENSOR_INT32 and scale < 0:
        raise ValidationError(f"{where}: TENSOR_INT32 must have a non-negative scale, got {scale:g}")
    if value in _POSITIVE_SCALE and not scale > 0:
        raise ValidationError(f"{where}: {_type_name(value)} must have a positive scale, got {scale:g}")
    low, high = _ZERO_POINT_RANGE.get(value, (0, 0))
    if not low <= zero_point <= high:
        expected = "0" if low == high else f"in [{low}, {high}]"
        raise ValidationError(f"{where}: {_type_name(value)} zeroPoint must be {expected}, got {zero_point}")


def _check_extra_params(operand: Operand, where: str) -> None:
    value, params = operand.type, operand.extra_params
    if is_extension_type(value):
        if params is not None and not isinstance(params, bytes | bytearray):
            raise ValidationError(f"{where}: extension operand extraParams must be none or extension bytes")
        return
    if value in _OEM_TYPES:
        return
    if value != _T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if params is not None:
            raise ValidationError(f"{where}: {_type_name(value)} must have no extraParams")
        return
    if not isinstance(params, SymmPerChannelQuantParams):
        raise ValidationError(f"{where}: TENSOR_QUANT8_SYMM_PER_CHANNEL needs channelQuant extraParams")
    dims = operand.dimensions
    channel = params.channel_dim
    if not _is_uint(channel) or channel >= len(dims):
        raise ValidationError(
            f"{where}: channelQuant.channelDim {channel!r} is not a dimension of {list(dims)}"
        )
    channels = dims[channel]
    if channels == 0:
        raise ValidationError(f"{where}: channel dimension {channel} must be known (not 0)")
    if not isinstance(params.scales, list | tuple):
        raise ValidationError(f"{where}: channelQuant.scales must be a list")
    scales = list(params.scales)
    if len(scales) != channels:
        raise ValidationError(f"{where}: channelQuant has {len(scales)} scales, expected {channels}")
    for i, s in enumerate(scales):
        if not _is_number(s) or not math.isfinite(s) or not s > 0:
            raise ValidationError(f"{where}: channelQuant.scales[{i}] = {s!r} must be positive")


def validate_operand(
    operand: Operand,
    *,
    index: int = 0,
    hal_version: HalVersion = HalVersion.V1_3,
    operand_values_size: int = 0,
    pool_sizes: Sequence[int] = (),
    referenced_count: int = 0,
    extension_prefixes: Iterable[int] = (),
    label: str = "main",
) -> None:
    """Check one operand on its own (ValidateHal's ``validateOperands``).

    ``operand_values_size`` is ``len(Model.operandValues)``, ``pool_sizes``
    the byte sizes of ``Model.pools`` and ``referenced_count`` the number of
    referenced subgraphs -- what CONSTANT_COPY, CONSTANT_REFERENCE and
    SUBGRAPH locations must fall inside.
    """
    where = f"{label} operand {index}"
    if not isinstance(operand, Operand):
        raise ValidationError(f"{where}: is {type(operand).__name__}, expected an Operand")
    prefixes = extension_prefixes if isinstance(extension_prefixes, frozenset) else frozenset(
        extension_prefixes)
    _check_operand_type(operand, where, hal_version, prefixes)
    lifetime = operand.lifetime
    allowed_lifetimes = _LIFETIMES_1_3 if hal_version >= HalVersion.V1_3 else _LIFETIMES_1_0
    if not _is_int(lifetime) or lifetime not in allowed_lifetimes:
        raise ValidationError(f"{where}: invalid lifetime {_lifetime_name(lifetime)} for HAL {hal_version}")
    _check_dimensions(operand, where, hal_version)
    _check_scale_and_zero_point(operand, where)
    _check_extra_params(operand, where)

    location = _check_location_fields(operand.location, where)
    if location.padding != 0:
        raise ValidationError(f"{where}: an operand's location has padding {location.padding}; it must be 0 "
                              "(DataLocation.aidl)")
    if lifetime == _L.CONSTANT_COPY:
        if location.pool_index != 0:
            raise ValidationError(f"{where}: CONSTANT_COPY must use pool index 0, got {location.pool_index}")
        if location.offset + location.length > operand_values_size:
            raise ValidationError(
                f"{where}: CONSTANT_COPY offset {location.offset} + length {location.length} exceeds "
                f"operandValues ({operand_values_size} bytes)"
            )
    elif lifetime == _L.CONSTANT_REFERENCE:
        _check_location_in_pool(location, pool_sizes, f"{where} (CONSTANT_REFERENCE)")
    elif lifetime == _L.SUBGRAPH:
        if location.pool_index != 0 or location.length != 0:
            raise ValidationError(f"{where}: SUBGRAPH operand must have pool index 0 and length 0")
        if location.offset >= referenced_count:
            raise ValidationError(
                f"{where}: references subgraph {location.offset}, the model has {referenced_count}"
            )
    elif (location.pool_index, location.offset, location.length) != (0, 0, 0):
        raise ValidationError(
            f"{where}: {_lifetime_name(lifetime)} operand must have an all-zero location, got "
            f"pool {location.pool_index} offset {location.offset} length {location.length}"
        )

    if (operand.type == _T.SUBGRAPH) != (lifetime == _L.SUBGRAPH):
        raise ValidationError(
            f"{where}: type {_type_name(operand.type)} cannot have lifetime {_lifetime_name(lifetime)} "
            "(SUBGRAPH type and SUBGRAPH lifetime go together)"
        )

    if lifetime in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE) and not is_extension_type(operand.type) \
            and operand.type not in _OEM_TYPES:
        expected = operand_byte_size(operand.type, operand.dimensions)
        if location.length != expected:
            raise ValidationError(
                f"{where}: constant {_type_name(operand.type)} {list(operand.dimensions)} needs "
                f"{expected} bytes, location length is {location.length}"
            )


# ---------------------------------------------------------------------------
# Pools


def _validate_pool(pool: Any, where: str, hal_version: HalVersion, allow_tokens: bool) -> None:
    if isinstance(pool, MemoryToken):
        if not allow_tokens:
            raise ValidationError(f"{where}: driver-allocated buffer tokens are only valid in requests")
        if hal_version < HalVersion.V1_3:
            raise ValidationError(f"{where}: memory tokens need HAL 1.3")
        if not _is_uint(pool.token) or pool.token == 0:
            raise ValidationError(f"{where}: memory token {pool.token!r} must be a positive uint32")
        return
    if not isinstance(pool, Memory):
        raise ValidationError(f"{where}: is {type(pool).__name__}, expected a memory pool")
    allowed = _POOL_NAMES_1_2 if hal_version >= HalVersion.V1_2 else _POOL_NAMES_1_0
    if pool.name not in allowed:
        raise ValidationError(
            f"{where}: unsupported memory kind {pool.name!r} (allowed: {', '.join(allowed)})"
        )
    if not _is_uint(pool.size, 64):
        raise ValidationError(f"{where}: invalid size {pool.size!r}")
    if not _is_int(pool.fd) or pool.fd < 0:
        raise ValidationError(f"{where}: memory of kind {pool.name!r} has no handle (closed or null)")


def validate_memory_pool_names(pools: Sequence[Any], hal_version: HalVersion = HalVersion.V1_3) -> None:
    """Check model pools: kinds the HAL version knows, each with a live handle.

    ``ashmem`` and ``mmap_fd`` are always valid; HAL 1.2 adds
    ``hardware_buffer_blob`` and ``hardware_buffer``.  A null handle (here: a
    closed pool) is invalid.
    """
    if not isinstance(pools, list | tuple):
        raise ValidationError("pools must be a list")
    for i, pool in enumerate(pools):
        _validate_pool(pool, f"pool {i}", hal_version, allow_tokens=False)


# ---------------------------------------------------------------------------
# Subgraphs


def _validate_index_list(
    indexes: Sequence[int], operands: Sequence[Operand], lifetime: int, what: str, label: str
) -> None:
    """Subgraph inputs/outputs: in range, right lifetime, no duplicates, none missing."""
    seen: set[int] = set()
    for position, index in enumerate(indexes):
        if not _is_int(index) or not 0 <= index < len(operands):
            raise ValidationError(f"{label} {what} {position} is operand {index!r}, out of range")
        if operands[index].lifetime != lifetime:
            raise ValidationError(
                f"{label} {what} {position} (operand {index}) has lifetime "
                f"{_lifetime_name(operands[index].lifetime)}, expected {_lifetime_name(lifetime)}"
            )
        if index in seen:
            raise ValidationError(f"{label} {what}s list operand {index} more than once")
        seen.add(index)
    for index, operand in enumerate(operands):
        if operand.lifetime == lifetime and index not in seen:
            raise ValidationError(
                f"{label} operand {index} has lifetime {_lifetime_name(lifetime)} but is not in the "
                f"subgraph's {what}s"
            )


def _validate_operations(
    subgraph: Subgraph,
    label: str,
    model: Model,
    hal_version: HalVersion,
    prefixes: frozenset[int],
    allow_unknown_control_flow_sizes: bool,
    hal_rules_only: bool = False,
) -> None:
    operands = subgraph.operands
    for i, operation in enumerate(subgraph.operations):
        op_type = operation.type
        where = f"{label} operation {i}"
        if not _is_int(op_type):
            raise ValidationError(f"{where}: operation type {op_type!r} is not an integer")
        where = f"{where} ({operation_name(op_type)})"
        for kind, indexes in (("input", operation.inputs), ("output", operation.outputs)):
            for slot, index in enumerate(indexes):
                if not _is_int(index) or not 0 <= index < len(operands):
                    raise ValidationError(
                        f"{where}: {kind} {slot} is operand {index!r}, out of range "
                        f"({len(operands)} operands)"
                    )
        if is_extension_type(op_type):
            prefix = op_type >> EXTENSION_TYPE_HIGH_BITS_PREFIX
            if op_type <= _UINT32_MAX and prefix not in prefixes:
                raise ValidationError(f"{where}: extension prefix {prefix} is not declared by the model")
        try:
            validate_operation(
                op_type,
                [operands[k] for k in operation.inputs],
                [operands[k] for k in operation.outputs],
                hal_version,
                model.referenced,
                allow_unknown_control_flow_sizes=allow_unknown_control_flow_sizes,
            )
        except BeyondHalRule as error:
            if not hal_rules_only:
                raise BeyondHalRule(f"{label} operation {i}: {error.message}") from None
        except ValidationError as error:
            raise ValidationError(f"{label} operation {i}: {error.message}") from None
        for slot, index in enumerate(operation.outputs):
            lifetime = operands[index].lifetime
            if lifetime not in (_L.TEMPORARY_VARIABLE, _L.SUBGRAPH_OUTPUT):
                raise ValidationError(
                    f"{where}: output {slot} writes operand {index} of lifetime {_lifetime_name(lifetime)}; "
                    "operations may only write TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT operands"
                )


def _validate_graph(subgraph: Subgraph, label: str, check_consumers: bool = True) -> None:
    """Execution order, single writers, consumer counts, everything written.

    Walking the operations in order, an input must already be known -- a
    subgraph input, a constant, an omitted value, a subgraph reference or
    the output of an earlier operation.  This is how a dependency cycle
    (VTS CycleTest) or a misordered operation list is caught.
    """
    operands = subgraph.operands
    known = [operand.lifetime in _KNOWN_BEFORE_EXECUTION for operand in operands]
    consumers = [0] * len(operands)
    for i, operation in enumerate(subgraph.operations):
        for slot, index in enumerate(operation.inputs):
            if not known[index]:
                raise ValidationError(
                    f"{label} operation {i} ({operation_name(operation.type)}) input {slot} reads operand "
                    f"{index} before it is written (operations out of order, or a cycle)"
                )
            consumers[index] += 1
        for slot, index in enumerate(operation.outputs):
            if known[index]:
                raise ValidationError(
                    f"{label} operation {i} ({operation_name(operation.type)}) output {slot} writes operand "
                    f"{index}, which is already written"
                )
            known[index] = True
    for index, operand in enumerate(operands):
        if not check_consumers:
            break  # AIDL's Operand has no numberOfConsumers: whatever the field holds is not the driver's to judge
        if operand.number_of_consumers != consumers[index]:
            raise ValidationError(
                f"{label} operand {index} declares numberOfConsumers {operand.number_of_consumers!r}, "
                f"but {consumers[index]} operation inputs read it"
            )
    for index, was_known in enumerate(known):
        if not was_known:
            raise ValidationError(f"{label} operand {index} is never written")


def _check_structure(subgraph: Any, label: str) -> None:
    """The containers a subgraph is made of, so later rules can index them safely."""
    if not isinstance(subgraph, Subgraph):
        raise ValidationError(f"{label}: is {type(subgraph).__name__}, expected a Subgraph")
    for field_name in ("operands", "operations", "input_indexes", "output_indexes"):
        if not isinstance(getattr(subgraph, field_name), list | tuple):
            raise ValidationError(f"{label}: {field_name} must be a list")
    for i, operation in enumerate(subgraph.operations):
        if not isinstance(operation, Operation):
            raise ValidationError(
                f"{label} operation {i}: is {type(operation).__name__}, expected an Operation"
            )
        if not isinstance(operation.inputs, list | tuple) or not isinstance(operation.outputs, list | tuple):
            raise ValidationError(f"{label} operation {i}: inputs and outputs must be lists")


#: Operands already proven valid, keyed by every field ``validate_operand`` reads plus the model
#: context.  A validation sweep checks hundreds of mutated copies of one model whose operands are
#: almost all unchanged; re-proving them dominated the sweep's run time.
#:
#: Two generations (issue 23: the driver host's memory grew by about 1 MiB per 30,000 cases over a
#: corpus run).  What a sweep re-uses is the operands of the model it is on, a few hundred to a few
#: thousand keys; the single set used before kept every key of every earlier model until it held
#: 50,000 (about 16 MB, some 300 bytes a key with its context), so the host grew for the first
#: few hundred thousand cases of a run.  Now a key goes into the young set; when that is full it
#: becomes the old set and the previous old set is dropped, and a key found in the old set moves
#: back to the young one.  The keys of the model being swept therefore stay (a model with more
#: operands than a generation holds is proven again, as without a memo), while those of models left
#: behind are gone within two generations: at most ``2 * _PROVEN_OPERANDS_LIMIT`` keys (about
#: 2.5 MB), whose memory is re-used from then on.  A sweep of the corpus proves as many operands
#: with 4,096 keys a generation as it did with 50,000 (17,741 proofs for 280,748 look-ups in a
#: 17,453-case shard of the V1_2 sweep, both ways).
#: Only a key that passed ``validate_operand`` is ever added, so a lost key (a race between threads
#: at a generation change) costs one more proof, never a check.
_PROVEN_OPERANDS_LIMIT = 4096
_proven_young: set[tuple[Any, ...]] = set()
_proven_old: set[tuple[Any, ...]] = set()
#: The extension prefixes of a model without extensions: one object shared by every key's context
#: (``frozenset()`` makes a new 216-byte object each time since Python 3.10).
_NO_PREFIXES: frozenset[int] = frozenset()


def _remember_proven(key: tuple[Any, ...]) -> None:
    """Add a proven operand's key to the young generation, starting a new one when it is full."""
    global _proven_young, _proven_old
    young = _proven_young
    if len(young) >= _PROVEN_OPERANDS_LIMIT:
        _proven_old, _proven_young = young, set()
        young = _proven_young
    young.add(key)


def proven_operand_keys() -> int:
    """How many operand keys the memo holds (both generations): at most ``2 * _PROVEN_OPERANDS_LIMIT``."""
    return len(_proven_young) + len(_proven_old)


def _operand_key(operand: Any, context: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A hashable key for ``operand``, or None when a field is not of its exact expected type.

    Exact types matter: ``True == 1`` and ``1.0 == 1`` in Python, so a junk
    value must never share a key with the valid value it equals.
    """
    if type(operand) is not Operand:
        return None
    dims, location, extra = operand.dimensions, operand.location, operand.extra_params
    if (type(operand.type) is not int or type(operand.lifetime) is not int or type(operand.zero_point) is not int
            or type(operand.scale) is not float or type(dims) is not list or type(location) is not DataLocation
            or type(operand.number_of_consumers) is not int):
        return None
    if not all(type(d) is int for d in dims):
        return None
    if type(location.pool_index) is not int or type(location.offset) is not int or type(location.length) is not int:
        return None
    if extra is None:
        extra_key: Any = None
    elif type(extra) is SymmPerChannelQuantParams and type(extra.channel_dim) is int and all(
            type(v) is float for v in extra.scales):
        extra_key = (extra.channel_dim, tuple(extra.scales))
    elif type(extra) is bytes:
        extra_key = extra
    else:
        return None
    return (context, operand.type, tuple(dims), operand.scale, operand.zero_point, operand.lifetime,
            location.pool_index, location.offset, location.length, extra_key)


def _validate_operands(
    subgraph: Subgraph,
    label: str,
    model: Model,
    hal_version: HalVersion,
    prefixes: frozenset[int],
    pool_sizes: Sequence[int],
) -> None:
    context = (hal_version, len(model.operand_values), tuple(pool_sizes), len(model.referenced), prefixes)
    young, old = _proven_young, _proven_old
    for index, operand in enumerate(subgraph.operands):
        key = _operand_key(operand, context)
        if key is not None:
            if key in young:
                continue
            if key in old:
                _remember_proven(key)
                continue
        validate_operand(
            operand,
            index=index,
            hal_version=hal_version,
            operand_values_size=len(model.operand_values),
            pool_sizes=pool_sizes,
            referenced_count=len(model.referenced),
            extension_prefixes=prefixes,
            label=label,
        )
        if key is not None:
            _remember_proven(key)


def _validate_subgraph(
    subgraph: Subgraph,
    label: str,
    model: Model,
    hal_version: HalVersion,
    prefixes: frozenset[int],
    allow_unknown_control_flow_sizes: bool,
    hal_rules_only: bool = False,
) -> None:
    """Operations, input/output lists and graph of a subgraph whose operands are valid."""
    _validate_operations(subgraph, label, model, hal_version, prefixes, allow_unknown_control_flow_sizes,
                         hal_rules_only)
    _validate_index_list(subgraph.input_indexes, subgraph.operands, _L.SUBGRAPH_INPUT, "input", label)
    _validate_index_list(subgraph.output_indexes, subgraph.operands, _L.SUBGRAPH_OUTPUT, "output", label)
    _validate_graph(subgraph, label, check_consumers=not hal_version.is_aidl)


def _check_no_reference_cycles(model: Model) -> None:
    """A subgraph may not (indirectly) reference itself: IF/WHILE bodies are not recursive."""
    subgraphs = [model.main, *model.referenced]
    edges: list[list[int]] = []
    for subgraph in subgraphs:
        targets = [
            operand.location.offset + 1
            for operand in subgraph.operands
            if operand.lifetime == _L.SUBGRAPH
        ]
        edges.append(targets)
    state = [0] * len(subgraphs)  # 0 unvisited, 1 on the current path, 2 done
    stack: list[tuple[int, int]] = [(0, 0)]
    state[0] = 1
    while stack:
        node, next_edge = stack[-1]
        if next_edge < len(edges[node]):
            stack[-1] = (node, next_edge + 1)
            target = edges[node][next_edge]
            if state[target] == 1:
                path = " -> ".join(_subgraph_label(n) for n, _ in stack)
                raise ValidationError(
                    f"circular subgraph reference: {path} -> {_subgraph_label(target)}"
                )
            if state[target] == 0:
                state[target] = 1
                stack.append((target, 0))
        else:
            state[node] = 2
            stack.pop()


def _subgraph_label(node: int) -> str:
    return "main" if node == 0 else f"referenced[{node - 1}]"


def _validate_extension_prefixes(model: Model, hal_version: HalVersion) -> frozenset[int]:
    """``extensionNameToPrefix``: 1.2+, each name and each prefix unique within the model; a prefix is 16 bits in
    HIDL, 15 in AIDL (ExtensionNameAndPrefix.aidl: "must be less than 32768", the type values being int32)."""
    entries = model.extension_name_to_prefix
    if entries and hal_version < HalVersion.V1_2:
        raise ValidationError(f"extensions need HAL 1.2, validating for HAL {hal_version}")
    names: set[str] = set()
    prefixes: set[int] = set()
    for i, entry in enumerate(entries):
        name, prefix = getattr(entry, "name", None), getattr(entry, "prefix", None)
        if not isinstance(name, str) or not name:
            raise ValidationError(f"extensionNameToPrefix[{i}]: invalid extension name {name!r}")
        if not _is_uint(prefix, 16):
            raise ValidationError(f"extensionNameToPrefix[{i}]: prefix {prefix!r} is not a uint16")
        if hal_version.is_aidl and prefix >= 1 << 15:
            raise ValidationError(f"extensionNameToPrefix[{i}]: prefix {prefix} does not fit AIDL's 15 bits")
        if name in names or prefix in prefixes:
            raise ValidationError(
                f"extensionNameToPrefix[{i}]: extension {name!r} or prefix {prefix} repeated"
            )
        names.add(name)
        prefixes.add(prefix)
    return frozenset(prefixes) if prefixes else _NO_PREFIXES


def validate_model(
    model: Model,
    hal_version: HalVersion = HalVersion.V1_3,
    *,
    allow_unknown_control_flow_sizes: bool = False,
    hal_rules_only: bool = False,
) -> None:
    """Raise :class:`ValidationError` unless ``model`` is a valid model for ``hal_version``.

    For HAL 1.0-1.2 the model must be expressible in that version's flat
    Model: no referenced subgraphs, and only the types, lifetimes, pools and
    operation signatures that version defines.  The relaxed-float flag needs
    1.1, extensions 1.2.

    Three strictnesses, from the most lenient:

    * runtime mode (``allow_unknown_control_flow_sizes=True``): what the NNAPI
      runtime accepts, e.g. WHILE operands of unknown size, which it runs on
      its own CPU path (Validation.cpp, ``ValidationMode::RUNTIME``);
    * driver mode (``hal_rules_only=True``): exactly what ValidateHal's
      ``validateModel`` refuses -- what a driver must refuse with
      INVALID_ARGUMENT and a harness may expect it to.  HAL 1.3 drivers
      refuse WHILE operands of unknown size ("1.3 HAL does not support CF
      operations with operands of unknown size", b/132458982);
    * the default adds the NeuralNetworks.h rules ValidateHal leaves to the
      executor (``BeyondHalRule``, e.g. CONV_2D's 4-D input): a model
      breaking only those is valid, but no driver can run it, so it must be
      reported unsupported and fail preparation or execution cleanly.
    """
    hal_version = HalVersion(hal_version)
    if not isinstance(model, Model):
        raise ValidationError(f"model is {type(model).__name__}, expected a Model")
    main = model.main
    _check_structure(main, "main")
    if not isinstance(model.referenced, list | tuple):
        raise ValidationError("model.referenced must be a list")
    if not main.operations or not main.operands:
        raise ValidationError("main subgraph must have at least one operation and one operand")
    if not isinstance(model.operand_values, bytes | bytearray | memoryview):
        raise ValidationError("operandValues must be bytes")
    if hal_version < HalVersion.V1_3 and model.referenced:
        raise ValidationError(f"referenced subgraphs need HAL 1.3, validating for HAL {hal_version}")
    if not isinstance(model.relax_computation_float32_to_float16, bool):
        raise ValidationError("relaxComputationFloat32toFloat16 must be a bool")
    if model.relax_computation_float32_to_float16 and hal_version < HalVersion.V1_1:
        raise ValidationError("relaxComputationFloat32toFloat16 needs HAL 1.1")
    prefixes = _validate_extension_prefixes(model, hal_version)
    validate_memory_pool_names(model.pools, hal_version)
    pool_sizes = [_pool_size(pool) for pool in model.pools]

    # Android validates main, then each referenced subgraph, one after the other.  Checking every
    # subgraph's structure and operands first changes only which of several faults is reported, and
    # lets IF/WHILE look into referenced subgraphs safely.
    subgraphs = [("main", main)] + [(f"referenced[{i}]", g) for i, g in enumerate(model.referenced)]
    for label, subgraph in subgraphs:
        _check_structure(subgraph, label)
        _validate_operands(subgraph, label, model, hal_version, prefixes, pool_sizes)
    for label, subgraph in subgraphs:
        _validate_subgraph(subgraph, label, model, hal_version, prefixes, allow_unknown_control_flow_sizes,
                           hal_rules_only)
    _check_no_reference_cycles(model)


# ---------------------------------------------------------------------------
# Requests


def _validate_arguments(
    arguments: Sequence[RequestArgument],
    indexes: Sequence[int],
    operands: Sequence[Operand],
    pool_sizes: Sequence[int],
    allow_unspecified: bool,
    kind: str,
) -> None:
    if not isinstance(arguments, list | tuple):
        raise ValidationError(f"request {kind}s must be a list")
    if len(arguments) != len(indexes):
        raise ValidationError(f"request has {len(arguments)} {kind}s, the model has {len(indexes)}")
    for position, argument in enumerate(arguments):
        where = f"request {kind} {position}"
        if not isinstance(argument, RequestArgument):
            raise ValidationError(f"{where}: is {type(argument).__name__}, expected a RequestArgument")
        index = indexes[position]
        if not _is_int(index) or not 0 <= index < len(operands):
            raise ValidationError(
                f"{where}: the model's {kind} {position} is operand {index!r}, out of range"
            )
        operand = operands[index]
        location = _check_location_fields(argument.location, where)
        dims = argument.dimensions
        if not isinstance(dims, list | tuple) or not all(_is_uint(d) for d in dims):
            raise ValidationError(f"{where}: dimensions {dims!r} must be a list of uint32 values")
        if not isinstance(argument.has_no_value, bool):
            raise ValidationError(f"{where}: hasNoValue must be a bool")
        if argument.has_no_value:
            if (location.pool_index, location.offset, location.length, location.padding) != (0, 0, 0, 0) or dims:
                raise ValidationError(f"{where}: has no value, so its location and dimensions must be empty")
            continue
        _check_location_in_pool(location, pool_sizes, where)
        model_dims = list(operand.dimensions)
        if not dims:
            if not allow_unspecified and 0 in model_dims:
                raise ValidationError(
                    f"{where}: the model's dimensions {model_dims} are not fully specified and the request "
                    "gives none"
                )
            continue
        if operand.type in _SCALAR_TYPES:
            raise ValidationError(f"{where}: scalar operand cannot take dimensions {list(dims)}")
        if model_dims and len(dims) != len(model_dims):
            raise ValidationError(
                f"{where}: rank {len(dims)} differs from the model's rank {len(model_dims)}"
            )
        for i, d in enumerate(dims):
            if model_dims and model_dims[i] != 0 and d != model_dims[i]:
                raise ValidationError(
                    f"{where}: dimension {i} is {d}, the model fixes it to {model_dims[i]}"
                )
            if d == 0 and not allow_unspecified:
                raise ValidationError(f"{where}: dimension {i} is 0 (unspecified), which is not allowed here")


def validate_request(
    request: Request,
    model: Model,
    allow_unspecified_output: bool = True,
    *,
    hal_version: HalVersion = HalVersion.V1_3,
) -> None:
    """Raise :class:`ValidationError` unless ``request`` is valid for ``model``.

    The model is assumed valid (validate it first).  Inputs must always be
    fully specified, by the model or by the request's dimensions; outputs
    may stay unspecified (dynamic output shapes) when
    ``allow_unspecified_output`` -- False for executeFenced, which must know
    every output size up front -- and the HAL is 1.2 or later.  Token pools
    (driver-allocated buffers, 1.3) count as size 0, so arguments using
    them need offset 0 and length 0.
    """
    hal_version = HalVersion(hal_version)
    if not isinstance(request, Request):
        raise ValidationError(f"request is {type(request).__name__}, expected a Request")
    main = model.main
    if not isinstance(request.pools, list | tuple):
        raise ValidationError("request pools must be a list")
    pool_sizes = [_pool_size(pool) for pool in request.pools]
    _validate_arguments(request.inputs, main.input_indexes, main.operands, pool_sizes, False, "input")
    _validate_arguments(
        request.outputs,
        main.output_indexes,
        main.operands,
        pool_sizes,
        allow_unspecified_output and hal_version >= HalVersion.V1_2,
        "output",
    )
    for i, pool in enumerate(request.pools):
        _validate_pool(pool, f"request pool {i}", hal_version, allow_tokens=True)
