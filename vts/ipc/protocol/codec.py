"""The nnvts protocol's HAL codec: request preambles and every HAL structure, over the primitive encoding.

Every HAL integer field is an ``i64`` (validation mutations store values outside
the HAL's uint32 range and the driver must see exactly them), every float an
``f64`` (a float32 would round a quantization scale), timings ``u64``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vts import bounds
from vts.hal.types import (
    BufferDesc,
    BufferRole,
    Capabilities,
    DataLocation,
    ExecutionResult,
    Extension,
    ExtensionNameAndPrefix,
    MemoryToken,
    Model,
    Operand,
    OperandPerformance,
    OperandTypeInformation,
    Operation,
    OutputShape,
    PerformanceInfo,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    Timing,
)
from vts.ipc.errors import ProtocolError
from vts.ipc.protocol.framing import (
    ExtraTag,
    PoolTag,
)
from vts.ipc.protocol.primitives import (
    I64_ARRAYS,
    U32,
    Reader,
    Writer,
)

#: A request argument's fixed part and its dimension count; pool references.
_LOCATION = struct.Struct("<qqq")
_TIMING = struct.Struct("<QQ")
_PERF = struct.Struct("<dd")
_ARG_HEAD_N = struct.Struct("<BqqqI")
#: A request argument's head when ``aidl:N`` was granted: AIDL's ``DataLocation.padding`` after the length
#: (docs/protocol.md §5.3; a HAL 1.3 connection never carries it).
_ARG_HEAD_PADDED = struct.Struct("<BqqqqI")
_MEMORY_REF = struct.Struct("<BI")
_TOKEN_REF = struct.Struct("<Bq")

# Request preamble: pool declarations and releases


@dataclass(frozen=True, slots=True)
class PoolDeclaration:
    pool_id: int
    name: str
    size: int
    fd_index: int  # -1: no descriptor (a closed pool; the driver cannot map it)


@dataclass(slots=True)
class Preamble:
    pools: list[PoolDeclaration] = field(default_factory=list)
    released_pools: list[int] = field(default_factory=list)
    released_handles: list[int] = field(default_factory=list)


#: The preamble of a request that declares and releases nothing (the common case), as bytes.
EMPTY_PREAMBLE = bytes(12)


_NO_PREAMBLE = Preamble()


def write_preamble(w: Writer, preamble: Preamble) -> None:
    w.u32(len(preamble.pools))
    for pool in preamble.pools:
        w.u32(pool.pool_id)
        w.string(pool.name)
        w.u64(pool.size)
        w.i32(pool.fd_index)
    w.u32(len(preamble.released_pools))
    for pool_id in preamble.released_pools:
        w.u32(pool_id)
    w.u32(len(preamble.released_handles))
    for handle in preamble.released_handles:
        w.u32(handle)


def read_preamble(r: Reader) -> Preamble:
    if r.data[r.pos : r.pos + 12] == EMPTY_PREAMBLE:
        r.pos += 12
        return _NO_PREAMBLE
    pools = []
    for _ in range(r.count(20)):
        pool_id = r.u32()
        name = r.string()
        size = r.u64()
        fd_index = r.i32()
        if fd_index >= len(r.fds) or fd_index < -1:
            raise ProtocolError(f"pool {pool_id}: fd index {fd_index} out of range")
        pools.append(PoolDeclaration(pool_id, name, size, fd_index))
    released_pools = [r.u32() for _ in range(r.count(4))]
    released_handles = [r.u32() for _ in range(r.count(4))]
    return Preamble(pools, released_pools, released_handles)


# ---------------------------------------------------------------------------
# HAL structures.  ``pool_ref`` / ``pool_of`` translate between pool objects
# and their wire ids: only the side that owns the pool table knows them.

PoolRefWriter = Callable[[Writer, Any], None]
PoolRefReader = Callable[[Reader], Any]


def write_pool_ref(w: Writer, pool: Any, memory_id: Callable[[Any], int]) -> None:
    if isinstance(pool, MemoryToken):
        w.u8(PoolTag.TOKEN)
        w.i64(pool.token)
    else:
        w.u8(PoolTag.MEMORY)
        w.u32(memory_id(pool))


def read_pool_ref(r: Reader, memory: Callable[[int], Any]) -> Any:
    tag = r.u8()
    if tag == PoolTag.TOKEN:
        return MemoryToken(r.i64())
    if tag == PoolTag.MEMORY:
        return memory(r.u32())
    raise ProtocolError(f"unknown pool tag {tag}")


def write_location(w: Writer, loc: DataLocation) -> None:
    w.buf += _LOCATION.pack(loc.pool_index, loc.offset, loc.length)


def read_location(r: Reader) -> DataLocation:
    return DataLocation(*r.unpack(_LOCATION))


#: Operands with at most this many dimensions are written and read with one struct of their own (issue 23:
#: a model's operands were eight primitive calls each on both sides).  The bytes are the same as the
#: field-by-field form below, which stays the path for everything else and for anything malformed.
_FUSED_DIMS = 8
_OPERAND_HEAD = struct.Struct("<qI")  # type, dimension count
_OPERAND_STRUCTS = [struct.Struct(f"<qI{n}qqdqqqqqB") for n in range(_FUSED_DIMS + 1)]
_EXTRA_TAGS = {ExtraTag.NONE.value: ExtraTag.NONE, ExtraTag.CHANNEL_QUANT.value: ExtraTag.CHANNEL_QUANT,
               ExtraTag.EXTENSION.value: ExtraTag.EXTENSION}


def write_operand(w: Writer, o: Operand) -> None:
    dims = o.dimensions
    extra = o.extra_params
    if type(dims) is list and len(dims) <= _FUSED_DIMS and type(o.location) is DataLocation:
        if extra is None:
            tag = ExtraTag.NONE
        elif isinstance(extra, SymmPerChannelQuantParams):
            tag = ExtraTag.CHANNEL_QUANT
        else:
            tag = ExtraTag.EXTENSION
        loc = o.location
        try:
            packed = _OPERAND_STRUCTS[len(dims)].pack(
                o.type, len(dims), *dims, o.number_of_consumers, o.scale, o.zero_point, o.lifetime,
                loc.pool_index, loc.offset, loc.length, tag)
        except struct.error:
            pass  # a field that does not fit: the field-by-field form raises what it always raised
        else:
            w.buf += packed
            if tag == ExtraTag.CHANNEL_QUANT:
                w.f64_list(extra.scales)  # type: ignore[union-attr]
                w.i64(extra.channel_dim)  # type: ignore[union-attr]
            elif tag == ExtraTag.EXTENSION:
                w.raw(bytes(extra))  # type: ignore[arg-type]
            return
    _write_operand_fields(w, o)


def _write_operand_fields(w: Writer, o: Operand) -> None:
    w.i64(o.type)
    w.i64_list(o.dimensions)
    w.i64(o.number_of_consumers)
    w.f64(o.scale)
    w.i64(o.zero_point)
    w.i64(o.lifetime)
    write_location(w, o.location)
    extra = o.extra_params
    if extra is None:
        w.u8(ExtraTag.NONE)
    elif isinstance(extra, SymmPerChannelQuantParams):
        w.u8(ExtraTag.CHANNEL_QUANT)
        w.f64_list(extra.scales)
        w.i64(extra.channel_dim)
    else:
        w.u8(ExtraTag.EXTENSION)
        w.raw(bytes(extra))


def read_operand(r: Reader) -> Operand:
    try:
        n = _OPERAND_HEAD.unpack_from(r.data, r.pos)[1]
        values = _OPERAND_STRUCTS[n].unpack_from(r.data, r.pos) if n <= _FUSED_DIMS else None
    except struct.error:
        values = None
    if values is None or values[-1] not in _EXTRA_TAGS:
        return _read_operand_fields(r)  # long, short or malformed: the field-by-field form says what is wrong
    r.pos += _OPERAND_STRUCTS[n].size
    tag = values[-1]
    extra: SymmPerChannelQuantParams | bytes | None
    if tag == ExtraTag.NONE:
        extra = None
    elif tag == ExtraTag.CHANNEL_QUANT:
        extra = SymmPerChannelQuantParams(r.f64_list(), r.i64())
    else:
        extra = r.raw()
    end = 2 + n
    return Operand(values[0], list(values[2:end]), values[end], values[end + 1], values[end + 2], values[end + 3],
                   DataLocation(values[end + 4], values[end + 5], values[end + 6]), extra)


def _read_operand_fields(r: Reader) -> Operand:
    otype = r.i64()
    dims = r.i64_list()
    consumers = r.i64()
    scale = r.f64()
    zero_point = r.i64()
    lifetime = r.i64()
    location = read_location(r)
    tag = r.u8()
    extra: SymmPerChannelQuantParams | bytes | None
    if tag == ExtraTag.NONE:
        extra = None
    elif tag == ExtraTag.CHANNEL_QUANT:
        extra = SymmPerChannelQuantParams(r.f64_list(), r.i64())
    elif tag == ExtraTag.EXTENSION:
        extra = r.raw()
    else:
        raise ProtocolError(f"unknown extra-params tag {tag}")
    return Operand(otype, dims, consumers, scale, zero_point, lifetime, location, extra)


def write_subgraph(w: Writer, g: Subgraph, like: SubgraphBytes | None = None) -> None:
    """The subgraph; with ``like``, entries that are ``like``'s own objects are copied from its bytes."""
    if like is not None:
        _write_entries(w, g.operands, like.operands, like.operand_bounds, like.data, write_operand)
        _write_entries(w, g.operations, like.operations, like.operation_bounds, like.data, write_operation)
    else:
        w.u32(len(g.operands))
        for o in g.operands:
            write_operand(w, o)
        w.u32(len(g.operations))
        for op in g.operations:
            write_operation(w, op)
    w.i64_list(g.input_indexes)
    w.i64_list(g.output_indexes)


def write_operation(w: Writer, op: Operation) -> None:
    w.i64(op.type)
    w.i64_list(op.inputs)
    w.i64_list(op.outputs)


@dataclass(frozen=True)
class SubgraphBytes:
    """A subgraph's operands and operations as encoded once, to copy into the encoding of a variant of it.

    The validation sweep sends hundreds of mutations of one model, each sharing all but an entry or
    two of its operands and operations with the model (``vts.families.validation.mutations``).  Only
    the *same objects* are copied, so whoever holds one of these promises not to change the objects
    it names while it uses it; anything else is encoded as usual.  The bytes are those of
    ``write_subgraph`` either way.
    """

    operands: tuple[Operand, ...]
    operations: tuple[Operation, ...]
    #: Entry ``i``'s bytes are ``data[bounds[i]:bounds[i + 1]]``: the operands', then the operations'
    #: (the counts before each list are not in ``data``).
    operand_bounds: tuple[int, ...]
    operation_bounds: tuple[int, ...]
    data: bytes

    @classmethod
    def of(cls, g: Subgraph) -> SubgraphBytes:
        w = Writer()
        operand_bounds = [0]
        for o in g.operands:
            write_operand(w, o)
            operand_bounds.append(len(w.buf))
        operation_bounds = [len(w.buf)]
        for op in g.operations:
            write_operation(w, op)
            operation_bounds.append(len(w.buf))
        return cls(tuple(g.operands), tuple(g.operations), tuple(operand_bounds), tuple(operation_bounds),
                   bytes(w.buf))


def _write_entries(w: Writer, entries: Sequence[Any], known: tuple[Any, ...], bounds: tuple[int, ...],
                   data: bytes, write: Callable[[Writer, Any], None]) -> None:
    """``entries`` with their count; runs of ``known``'s objects in their own places copied from ``data``."""
    count, limit = len(entries), min(len(entries), len(known))
    w.u32(count)
    buf = w.buf
    i = 0
    while i < count:
        if i < limit and entries[i] is known[i]:
            j = i + 1
            while j < limit and entries[j] is known[j]:
                j += 1
            buf += data[bounds[i]:bounds[j]]
            i = j
        else:
            write(w, entries[i])
            i += 1


def read_subgraph(r: Reader) -> Subgraph:
    operands = [read_operand(r) for _ in range(r.count(60))]
    operations = [Operation(r.i64(), r.i64_list(), r.i64_list()) for _ in range(r.count(16))]
    return Subgraph(operands, operations, r.i64_list(), r.i64_list())


def write_model(w: Writer, model: Model, memory_id: Callable[[Any], int], like: SubgraphBytes | None = None) -> None:
    """The model; ``like``: the encoded main subgraph of a model this one shares entries with."""
    write_subgraph(w, model.main, like)
    w.u32(len(model.referenced))
    for g in model.referenced:
        write_subgraph(w, g)
    w.raw(model.operand_values)
    w.u32(len(model.pools))
    for pool in model.pools:
        write_pool_ref(w, pool, memory_id)
    w.boolean(model.relax_computation_float32_to_float16)
    w.u32(len(model.extension_name_to_prefix))
    for entry in model.extension_name_to_prefix:
        w.string(entry.name)
        w.i64(entry.prefix)


def read_model(r: Reader, memory: Callable[[int], Any]) -> Model:
    main = read_subgraph(r)
    referenced = [read_subgraph(r) for _ in range(r.count(24))]
    operand_values = r.raw()
    pools = [read_pool_ref(r, memory) for _ in range(r.count(5))]
    relax = r.boolean()
    prefixes = [ExtensionNameAndPrefix(r.string(), r.i64()) for _ in range(r.count(12))]
    return Model(main, referenced, operand_values, pools, relax, prefixes)


def write_request(w: Writer, request: Request, memory_id: Callable[[Any], int], padded: bool = False) -> None:
    """``padded``: the connection granted ``aidl:N``, so each argument carries its ``padding`` (§5.3)."""
    # Inlined: the request is encoded on every execution (same bytes as the generic writers).
    buf = w.buf
    for arguments in (request.inputs, request.outputs):
        buf += U32.pack(len(arguments))
        for arg in arguments:
            loc = arg.location
            dims = arg.dimensions
            n = len(dims)
            if padded:
                buf += _ARG_HEAD_PADDED.pack(1 if arg.has_no_value else 0, loc.pool_index, loc.offset, loc.length,
                                             loc.padding, n)
            else:
                buf += _ARG_HEAD_N.pack(1 if arg.has_no_value else 0, loc.pool_index, loc.offset, loc.length, n)
            if n:
                buf += (I64_ARRAYS[n] if n < 8 else struct.Struct(f"<{n}q")).pack(*dims)
    buf += U32.pack(len(request.pools))
    for pool in request.pools:
        if isinstance(pool, MemoryToken):
            buf += _TOKEN_REF.pack(PoolTag.TOKEN, pool.token)
        else:
            buf += _MEMORY_REF.pack(PoolTag.MEMORY, memory_id(pool))


def read_request(r: Reader, memory: Callable[[int], Any], padded: bool = False) -> Request:
    """``padded``: the connection granted ``aidl:N``, so each argument carries its ``padding`` (§5.3)."""
    # Inlined for speed (decoded on every execution); any overrun is a ProtocolError.
    data, pos, size = r.data, r.pos, len(r.data)
    sides: list[list[RequestArgument]] = []
    head = _ARG_HEAD_PADDED if padded else _ARG_HEAD_N
    padding = 0
    try:
        for _ in range(2):
            (count,) = U32.unpack_from(data, pos)
            pos += 4
            if count * head.size > size - pos:
                raise ProtocolError(f"list of {count} request arguments at offset {pos - 4} overruns the body")
            arguments = []
            for _ in range(count):
                if padded:
                    no_value, pool_index, offset, length, padding, n = head.unpack_from(data, pos)
                else:
                    no_value, pool_index, offset, length, n = head.unpack_from(data, pos)
                pos += head.size
                if no_value > 1:
                    raise ProtocolError(f"has_no_value holds {no_value}")
                if n:
                    if n * 8 > size - pos:
                        raise ProtocolError(f"{n} dimensions at offset {pos - 4} overrun the body")
                    dims = list((I64_ARRAYS[n] if n < 8 else struct.Struct(f"<{n}q")).unpack_from(data, pos))
                    pos += 8 * n
                else:
                    dims = []
                arguments.append(RequestArgument(no_value == 1, DataLocation(pool_index, offset, length, padding),
                                                 dims))
            sides.append(arguments)
        (count,) = U32.unpack_from(data, pos)
        pos += 4
        if count * 5 > size - pos:
            raise ProtocolError(f"list of {count} request pools at offset {pos - 4} overruns the body")
        pools = []
        for _ in range(count):
            tag = data[pos]
            if tag == PoolTag.MEMORY:
                pools.append(memory(_MEMORY_REF.unpack_from(data, pos)[1]))
                pos += _MEMORY_REF.size
            elif tag == PoolTag.TOKEN:
                pools.append(MemoryToken(_TOKEN_REF.unpack_from(data, pos)[1]))
                pos += _TOKEN_REF.size
            else:
                raise ProtocolError(f"unknown pool tag {tag}")
    except (struct.error, IndexError):
        raise ProtocolError(f"body ends early inside a request (offset {pos} of {size})") from None
    r.pos = pos
    return Request(sides[0], sides[1], pools)


def write_timing(w: Writer, timing: Timing) -> None:
    w.buf += _TIMING.pack(timing.time_on_device, timing.time_in_driver)


def read_timing(r: Reader) -> Timing:
    return Timing(*r.unpack(_TIMING))


def write_output_shapes(w: Writer, shapes: Sequence[OutputShape]) -> None:
    buf = w.buf
    buf += U32.pack(len(shapes))
    for shape in shapes:
        dims = shape.dimensions
        n = len(dims)
        buf += U32.pack(n)
        if n:
            buf += (I64_ARRAYS[n] if n < 8 else struct.Struct(f"<{n}q")).pack(*dims)
        buf += b"\x01" if shape.is_sufficient else b"\x00"


def read_output_shapes(r: Reader) -> tuple[OutputShape, ...]:
    shapes = []
    for _ in range(r.count(5, bounds.MAX_OUTPUT_SHAPES)):
        if r.pos + 4 <= len(r.data) and U32.unpack_from(r.data, r.pos)[0] > bounds.MAX_RANK:
            raise ProtocolError(f"an output shape of {U32.unpack_from(r.data, r.pos)[0]} dimensions "
                                f"(at most {bounds.MAX_RANK})")
        dims = r.i64_list()
        shapes.append(OutputShape(tuple(dims), r.boolean()))
    return tuple(shapes)


def write_execution_result(w: Writer, result: ExecutionResult) -> None:
    write_output_shapes(w, result.output_shapes)
    timing = result.timing
    w.buf += _TIMING.pack(timing.time_on_device, timing.time_in_driver)


def read_execution_result(r: Reader) -> ExecutionResult:
    return ExecutionResult(read_output_shapes(r), read_timing(r))


def write_error(w: Writer, message: str, shapes: Sequence[OutputShape], timing: Timing | None) -> None:
    """Body of a reply whose status is an ErrorStatus other than NONE."""
    w.string(message)
    write_output_shapes(w, shapes)
    if timing is None:
        w.u8(0)
    else:
        w.u8(1)
        write_timing(w, timing)


def read_error(r: Reader) -> tuple[str, tuple[OutputShape, ...], Timing | None]:
    message = r.text()
    if r.data[r.pos:r.pos + 5] == _NO_SHAPES_NO_TIMING:  # most errors (a refusal): nothing but the message
        r.pos += 5
        return message, (), None
    shapes = read_output_shapes(r)
    timing = read_timing(r) if r.boolean() else None
    return message, shapes, timing


#: An error body's tail with no output shape (u32 0) and no timing (u8 0).
_NO_SHAPES_NO_TIMING = bytes(5)


def _write_perf(w: Writer, info: PerformanceInfo) -> None:
    w.buf += _PERF.pack(info.exec_time, info.power_usage)


def _read_perf(r: Reader) -> PerformanceInfo:
    return PerformanceInfo(*r.unpack(_PERF))


def write_capabilities(w: Writer, caps: Capabilities) -> None:
    _write_perf(w, caps.relaxed_float32_to_float16_performance_scalar)
    _write_perf(w, caps.relaxed_float32_to_float16_performance_tensor)
    w.u32(len(caps.operand_performance))
    for entry in caps.operand_performance:
        w.i64(entry.type)
        _write_perf(w, entry.info)
    _write_perf(w, caps.if_performance)
    _write_perf(w, caps.while_performance)


def read_capabilities(r: Reader) -> Capabilities:
    scalar = _read_perf(r)
    tensor = _read_perf(r)
    table = tuple(OperandPerformance(r.i64(), _read_perf(r)) for _ in range(r.count(24, bounds.MAX_LIST_ITEMS)))
    return Capabilities(scalar, tensor, table, _read_perf(r), _read_perf(r))


def write_extensions(w: Writer, extensions: Sequence[Extension]) -> None:
    w.u32(len(extensions))
    for ext in extensions:
        w.string(ext.name)
        w.u32(len(ext.operand_types))
        for info in ext.operand_types:
            w.i64(info.type)
            w.boolean(info.is_tensor)
            w.i64(info.byte_size)


def read_extensions(r: Reader) -> list[Extension]:
    result = []
    for _ in range(r.count(8, bounds.MAX_LIST_ITEMS)):
        name = r.text()
        types = tuple(OperandTypeInformation(r.i64(), r.boolean(), r.i64())
                      for _ in range(r.count(17, bounds.MAX_LIST_ITEMS)))
        result.append(Extension(name, types))
    return result


def write_buffer_desc(w: Writer, desc: BufferDesc) -> None:
    w.i64_list(desc.dimensions)


def read_buffer_desc(r: Reader) -> BufferDesc:
    return BufferDesc(r.i64_list())


def write_roles(w: Writer, roles: Sequence[BufferRole]) -> None:
    w.u32(len(roles))
    for role in roles:
        w.i64(role.model_index)
        w.i64(role.io_index)
        w.f64(role.frequency)


def read_roles(r: Reader) -> list[BufferRole]:
    return [BufferRole(r.i64(), r.i64(), r.f64()) for _ in range(r.count(24))]
