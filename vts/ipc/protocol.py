"""The nnvts driver protocol: message framing and the binary encoding of HAL structures.

docs/protocol.md is the normative description; this module is its Python
implementation, used by both ends (``client.py`` in the harness, ``host.py``
serving a Python driver).  The encoding is deliberately small and fixed so a
driver in C needs only a cursor over little-endian integers:

* a 16-byte header (body length, sequence number, code, status, number of
  file descriptors, flags) followed by the body;
* file descriptors (memory pools, cache files, fences) travel with
  SCM_RIGHTS on the header's first byte and are named in the body by their
  index in the message's descriptor list;
* every HAL integer field is an ``i64`` (validation mutations store values
  outside the HAL's uint32 range and the driver must see exactly them), every
  float an ``f64`` (a float32 would round a quantization scale and change
  results between in-process and out-of-process runs), timings ``u64``.
"""

from __future__ import annotations

import array
import contextlib
import enum
import os
import socket
import stat
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

PROTOCOL_VERSION = 1

#: body length, sequence number, code, status, number of fds, flags (all little-endian).
HEADER = struct.Struct("<IIHHHH")
#: Messages are records of a SOCK_SEQPACKET Unix socket: the kernel keeps
#: their boundaries and the descriptors of each, so one ``recvmsg`` reads one.
SOCKET_TYPE = socket.SOCK_SEQPACKET
#: A body above this is refused: no HAL message comes near it, a corrupt length does.
MAX_BODY = 1 << 30
#: Bodies up to this size travel inline; larger ones in a memfd (``BODY_IN_FD``),
#: because a record must fit the socket's send buffer (~208 KiB by default).
MAX_INLINE_BODY = 64 * 1024
#: Header flag: the body is in the message's last file descriptor, not inline.
BODY_IN_FD = 0x1
#: Linux's SCM_MAX_FD: the most descriptors one message can carry.
MAX_FDS = 253

#: Code bits: a reply carries the request's code with REPLY set, an
#: asynchronous completion the request's code with NOTIFY set.
REPLY = 0x8000
NOTIFY = 0x4000

#: Boolean device attributes beyond the HAL that families read (nnvts extensions).
#: HELLO's reply lists those the driver sets to true; the proxy device carries them.
DEVICE_FLAGS = ("priority_scheduling",)

#: Handle values with a fixed meaning: no object, and an object the sender
#: could not name (a prepared model of another driver, passed to ``allocate``).
NULL_HANDLE = 0
FOREIGN_HANDLE = 0xFFFF_FFFF


class Method(enum.IntEnum):
    HELLO = 1
    GET_STATUS = 2
    GET_TYPE = 3
    GET_VERSION_STRING = 4
    GET_CAPABILITIES = 5
    GET_SUPPORTED_EXTENSIONS = 6
    GET_SUPPORTED_OPERATIONS = 7
    GET_NUMBER_OF_CACHE_FILES_NEEDED = 8
    PREPARE_MODEL = 9
    PREPARE_MODEL_FROM_CACHE = 10
    ALLOCATE = 11
    EXECUTE = 12
    EXECUTE_ASYNC = 13
    EXECUTE_FENCED = 14
    FENCED_GET_EXECUTION_INFO = 15
    BUFFER_COPY_TO = 16
    BUFFER_COPY_FROM = 17
    CLOSE = 18
    # Bursts, concurrency and further clients (vts/ipc/sessions.py, docs/protocol.md §5.1).
    BURST_CONFIGURE = 19
    BURST_EXECUTE = 20
    BURST_FREE_MEMORY = 21
    SET_CONCURRENCY = 22
    OPEN_CONNECTION = 23


class WireStatus(enum.IntEnum):
    """Reply statuses beyond the HAL's ErrorStatus (0-8, sent as is)."""

    DRIVER_EXCEPTION = 0x100  # the driver raised something other than DriverError
    PROTOCOL_ERROR = 0x101  # the host could not decode the request


class FenceTag(enum.IntEnum):
    NULL = 0  # the HAL's null handle
    SIGNALLED = 1
    SIGNALLED_ERROR = 2
    PENDING = 3  # an eventfd follows (fd index): 1 is added on success, 2 on error


class PoolTag(enum.IntEnum):
    MEMORY = 0  # u32 pool id, declared in this or an earlier request's preamble
    TOKEN = 1  # i64 driver buffer token (memory domains)


class ExtraTag(enum.IntEnum):
    NONE = 0
    CHANNEL_QUANT = 1
    EXTENSION = 2


_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_LOCATION = struct.Struct("<qqq")
_TIMING = struct.Struct("<QQ")
_PERF = struct.Struct("<dd")
#: A request argument's fixed part and its dimension count; pool references.
_ARG_HEAD_N = struct.Struct("<BqqqI")
_MEMORY_REF = struct.Struct("<BI")
_TOKEN_REF = struct.Struct("<Bq")
#: Precompiled formats for the short integer lists (dimensions, operand indexes) of every call.
_I64_ARRAYS = [struct.Struct(f"<{n}q") for n in range(8)]


@dataclass(slots=True)
class Message:
    seq: int
    code: int
    status: int = 0
    body: bytes | bytearray = b""
    fds: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Framing


def send_message(sock: socket.socket, seq: int, code: int, status: int = 0, body: bytes | bytearray = b"",
                 fds: Sequence[int] = ()) -> None:
    """Write one message (one SOCK_SEQPACKET record) with its descriptors.

    A body too large for one record travels in a memfd attached as
    the message's last descriptor (flag ``BODY_IN_FD``); the header still
    gives its length.
    """
    if len(body) > MAX_BODY:
        raise ProtocolError(f"message body of {len(body)} bytes exceeds the {MAX_BODY}-byte limit")
    flags = 0
    side = -1
    if len(body) > MAX_INLINE_BODY:
        flags = BODY_IN_FD
        side = os.memfd_create("nnvts-message", os.MFD_CLOEXEC)
        _write_all(side, body)
        fds = [*fds, side]
    if len(fds) > MAX_FDS:
        if side >= 0:
            os.close(side)
        raise ProtocolError(f"{len(fds)} file descriptors in one message (at most {MAX_FDS})")
    header = HEADER.pack(len(body), seq, code, status, len(fds), flags)
    ancillary = [(_SOL_SOCKET, _SCM_RIGHTS, array.array("i", fds))] if fds else []
    try:
        sock.sendmsg([header, body] if not flags else [header], ancillary, _MSG_NOSIGNAL)
    finally:
        if side >= 0:
            os.close(side)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# Plain ints: testing an IntFlag costs microseconds per message through enum.__and__.
_MSG_CTRUNC = int(socket.MSG_CTRUNC)
_MSG_TRUNC = int(socket.MSG_TRUNC)
_MSG_NOSIGNAL = int(socket.MSG_NOSIGNAL)
_SOL_SOCKET = int(socket.SOL_SOCKET)
_SCM_RIGHTS = int(socket.SCM_RIGHTS)
_RECORD = HEADER.size + MAX_INLINE_BODY


class Receiver:
    """Reads messages from one socket into a reused buffer (one ``recvmsg`` per message).

    ``max_fds`` and ``max_body`` bound what the peer may send: the harness
    reads a driver with the limits of ``vts.bounds`` (room for a few
    descriptors, the kernel drops any beyond; bodies up to
    ``MAX_DRIVER_BODY``), the driver host reads the harness with the
    protocol's own maxima.
    """

    __slots__ = ("ancillary_space", "buffer", "max_body", "max_fds", "sock")

    def __init__(self, sock: socket.socket, max_fds: int = MAX_FDS, max_body: int = MAX_BODY) -> None:
        self.sock = sock
        self.buffer = bytearray(_RECORD + 1)
        self.max_fds = max_fds
        self.max_body = max_body
        self.ancillary_space = socket.CMSG_SPACE(max_fds * array.array("i").itemsize)

    def receive(self) -> Message | None:
        """The next message; None once the peer closed the connection.

        ``TimeoutError`` (the socket's timeout) means no message arrived.
        """
        n, ancillary, flags, _ = self.sock.recvmsg_into([self.buffer], self.ancillary_space)
        fds = _received_fds(ancillary)
        if n == 0:
            close_fds(fds)
            return None
        try:
            if flags & _MSG_CTRUNC:
                raise ProtocolError(f"more than {self.max_fds} file descriptors attached to one message")
            if flags & _MSG_TRUNC or n > _RECORD:
                raise ProtocolError(f"a record longer than {_RECORD} bytes (large bodies travel in a memfd)")
            if n < HEADER.size:
                raise ProtocolError(f"a {n}-byte record is shorter than the {HEADER.size}-byte header")
            length, seq, code, status, nfds, msg_flags = HEADER.unpack_from(self.buffer)
            if nfds != len(fds):
                raise ProtocolError(f"message {seq} declares {nfds} file descriptors but carries {len(fds)}")
            if length > self.max_body:
                raise ProtocolError(f"message {seq} declares a {length}-byte body (limit {self.max_body})")
            if msg_flags & BODY_IN_FD:
                if not fds or n != HEADER.size:
                    raise ProtocolError(f"message {seq}: BODY_IN_FD without a body descriptor")
                side = fds.pop()
                try:
                    body: bytes | bytearray = _read_side_body(side, length)
                finally:
                    os.close(side)
            else:
                if n - HEADER.size != length:
                    raise ProtocolError(f"message {seq} declares a {length}-byte body but carries "
                                        f"{n - HEADER.size} bytes")
                body = bytes(self.buffer[HEADER.size : n])
        except BaseException:
            close_fds(fds)
            raise
        return Message(seq, code, status, body, fds)


def _read_side_body(fd: int, length: int) -> bytearray:
    """Read a BODY_IN_FD body; anything but a regular file (memfd) holding it all is refused.

    A pipe, socket or device could block or never end: only a file whose
    size already covers the body is read, with ``pread`` (never ``mmap``: a
    file shrunk meanwhile reads short instead of faulting).
    """
    try:
        info = os.fstat(fd)
    except OSError as error:
        raise ProtocolError(f"the body descriptor cannot be examined: {error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ProtocolError("the body descriptor is not a memfd or regular file")
    if info.st_size < length:
        raise ProtocolError(f"the body descriptor holds {info.st_size} of {length} bytes")
    body = bytearray(length)
    view = memoryview(body)
    got = 0
    while got < length:
        try:
            n = os.preadv(fd, [view[got:]], got)
        except OSError as error:
            raise ProtocolError(f"the body descriptor cannot be read: {error}") from None
        if n <= 0:
            raise ProtocolError(f"the body descriptor holds {got} of {length} bytes")
        got += n
    return body


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of the socket type the protocol uses."""
    return socket.socketpair(socket.AF_UNIX, SOCKET_TYPE)


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
            chunk = array.array("i")
            chunk.frombytes(data[: len(data) - len(data) % chunk.itemsize])
            fds.extend(chunk)
    return fds


def close_fds(fds: Sequence[int]) -> None:
    """Close received descriptors nobody took (a message dropped or refused)."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


# ---------------------------------------------------------------------------
# Primitive encoding


class Writer:
    """Builds a body; ``fds`` collects the descriptors the body names by index.

    ``close_after_send`` lists descriptors this side created only to pass
    them (a fence's eventfd): the sender closes them once the message is out,
    since the receiver then holds its own copy.
    """

    __slots__ = ("buf", "close_after_send", "fds")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.fds: list[int] = []
        self.close_after_send: list[int] = []

    def u8(self, value: int) -> None:
        self.buf += _U8.pack(value)

    def boolean(self, value: bool) -> None:
        self.buf += b"\x01" if value else b"\x00"

    def u32(self, value: int) -> None:
        self.buf += _U32.pack(value)

    def i32(self, value: int) -> None:
        self.buf += _I32.pack(value)

    def u64(self, value: int) -> None:
        self.buf += _U64.pack(value)

    def i64(self, value: int) -> None:
        self.buf += _I64.pack(value)

    def f64(self, value: float) -> None:
        self.buf += _F64.pack(value)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += _U32.pack(len(data))
        self.buf += data

    def string(self, text: str) -> None:
        self.raw(text.encode("utf-8", "surrogateescape"))

    def i64_list(self, values: Sequence[int]) -> None:
        n = len(values)
        self.buf += _U32.pack(n)
        if n:
            self.buf += struct.pack(f"<{n}q", *values)

    def f64_list(self, values: Sequence[float]) -> None:
        n = len(values)
        self.buf += _U32.pack(n)
        if n:
            self.buf += struct.pack(f"<{n}d", *values)

    def optional_i64(self, value: int | None) -> None:
        if value is None:
            self.buf += b"\x00"
        else:
            self.buf += b"\x01"
            self.buf += _I64.pack(value)

    def fd(self, fd: int) -> None:
        """Attach ``fd`` to the message and write its index (u32)."""
        self.buf += _U32.pack(len(self.fds))
        self.fds.append(fd)

    def fd_list(self, fds: Sequence[int]) -> None:
        self.u32(len(fds))
        for fd in fds:
            self.fd(fd)


class Reader:
    """A cursor over a received body; every read is bounds-checked."""

    __slots__ = ("data", "fds", "pos")

    def __init__(self, data: bytes | bytearray, fds: Sequence[int] = ()) -> None:
        self.data = data
        self.pos = 0
        self.fds = list(fds)

    def _unpack(self, st: struct.Struct) -> tuple[Any, ...]:
        try:
            values = st.unpack_from(self.data, self.pos)
        except struct.error:
            raise self._short(st.size) from None
        self.pos += st.size
        return values

    def _short(self, size: int) -> ProtocolError:
        return ProtocolError(f"body ends early (needed {size} bytes at offset {self.pos} of {len(self.data)})")

    # The primitives unpack inline: they are the hot path of every call.

    def u8(self) -> int:
        try:
            value = _U8.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(1) from None
        self.pos += 1
        return value

    def boolean(self) -> bool:
        value = self.u8()
        if value > 1:
            raise ProtocolError(f"boolean field holds {value} at offset {self.pos - 1}")
        return value == 1

    def u32(self) -> int:
        try:
            value = _U32.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(4) from None
        self.pos += 4
        return value

    def i32(self) -> int:
        try:
            value = _I32.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(4) from None
        self.pos += 4
        return value

    def u64(self) -> int:
        try:
            value = _U64.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(8) from None
        self.pos += 8
        return value

    def i64(self) -> int:
        try:
            value = _I64.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(8) from None
        self.pos += 8
        return value

    def f64(self) -> float:
        try:
            value = _F64.unpack_from(self.data, self.pos)[0]
        except struct.error:
            raise self._short(8) from None
        self.pos += 8
        return value

    def count(self, item_size: int, limit: int | None = None) -> int:
        """A list length, refused when the items could not fit in what is left (or exceed ``limit``)."""
        n = self.u32()
        if n * max(item_size, 1) > len(self.data) - self.pos:
            raise ProtocolError(f"list of {n} items at offset {self.pos - 4} overruns the body")
        if limit is not None and n > limit:
            raise ProtocolError(f"list of {n} items at offset {self.pos - 4} (at most {limit} allowed)")
        return n

    def text(self, limit: int = bounds.MAX_TEXT, keep_tail: bool = False) -> str:
        """A ``str`` from a driver: at most ``limit`` bytes kept (cut and marked), invalid UTF-8 replaced."""
        n = self.count(1)
        start = self.pos
        self.pos += n
        return bounds.cut_bytes(memoryview(self.data)[start : start + n], n, limit, keep_tail)

    def raw(self) -> bytes:
        n = self.count(1)
        data = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return data

    def string(self) -> str:
        return self.raw().decode("utf-8", "surrogateescape")

    def i64_list(self) -> list[int]:
        n = self.count(8)
        if not n:
            return []
        values = list(_I64_ARRAYS[n].unpack_from(self.data, self.pos)) if n < 8 else list(
            struct.unpack_from(f"<{n}q", self.data, self.pos))
        self.pos += 8 * n
        return values

    def f64_list(self) -> list[float]:
        n = self.count(8)
        values = list(struct.unpack_from(f"<{n}d", self.data, self.pos)) if n else []
        self.pos += 8 * n
        return values

    def optional_i64(self) -> int | None:
        return self.i64() if self.boolean() else None

    def fd(self) -> int:
        index = self.u32()
        if index >= len(self.fds):
            raise ProtocolError(f"fd index {index} but the message carries {len(self.fds)} descriptors")
        return self.fds[index]

    def fd_list(self) -> list[int]:
        return [self.fd() for _ in range(self.count(4))]

    def end(self) -> None:
        if self.pos != len(self.data):
            raise ProtocolError(f"{len(self.data) - self.pos} unexpected bytes after the last field")


# ---------------------------------------------------------------------------
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
    return DataLocation(*r._unpack(_LOCATION))


def write_operand(w: Writer, o: Operand) -> None:
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


def write_subgraph(w: Writer, g: Subgraph) -> None:
    w.u32(len(g.operands))
    for o in g.operands:
        write_operand(w, o)
    w.u32(len(g.operations))
    for op in g.operations:
        w.i64(op.type)
        w.i64_list(op.inputs)
        w.i64_list(op.outputs)
    w.i64_list(g.input_indexes)
    w.i64_list(g.output_indexes)


def read_subgraph(r: Reader) -> Subgraph:
    operands = [read_operand(r) for _ in range(r.count(60))]
    operations = [Operation(r.i64(), r.i64_list(), r.i64_list()) for _ in range(r.count(16))]
    return Subgraph(operands, operations, r.i64_list(), r.i64_list())


def write_model(w: Writer, model: Model, memory_id: Callable[[Any], int]) -> None:
    write_subgraph(w, model.main)
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


def write_request(w: Writer, request: Request, memory_id: Callable[[Any], int]) -> None:
    # Inlined: the request is encoded on every execution (same bytes as the generic writers).
    buf = w.buf
    for arguments in (request.inputs, request.outputs):
        buf += _U32.pack(len(arguments))
        for arg in arguments:
            loc = arg.location
            dims = arg.dimensions
            n = len(dims)
            buf += _ARG_HEAD_N.pack(1 if arg.has_no_value else 0, loc.pool_index, loc.offset, loc.length, n)
            if n:
                buf += (_I64_ARRAYS[n] if n < 8 else struct.Struct(f"<{n}q")).pack(*dims)
    buf += _U32.pack(len(request.pools))
    for pool in request.pools:
        if isinstance(pool, MemoryToken):
            buf += _TOKEN_REF.pack(PoolTag.TOKEN, pool.token)
        else:
            buf += _MEMORY_REF.pack(PoolTag.MEMORY, memory_id(pool))


def read_request(r: Reader, memory: Callable[[int], Any]) -> Request:
    # Inlined for speed (decoded on every execution); any overrun is a ProtocolError.
    data, pos, size = r.data, r.pos, len(r.data)
    sides: list[list[RequestArgument]] = []
    try:
        for _ in range(2):
            (count,) = _U32.unpack_from(data, pos)
            pos += 4
            if count * _ARG_HEAD_N.size > size - pos:
                raise ProtocolError(f"list of {count} request arguments at offset {pos - 4} overruns the body")
            arguments = []
            for _ in range(count):
                no_value, pool_index, offset, length, n = _ARG_HEAD_N.unpack_from(data, pos)
                pos += _ARG_HEAD_N.size
                if no_value > 1:
                    raise ProtocolError(f"has_no_value holds {no_value}")
                if n:
                    if n * 8 > size - pos:
                        raise ProtocolError(f"{n} dimensions at offset {pos - 4} overrun the body")
                    dims = list((_I64_ARRAYS[n] if n < 8 else struct.Struct(f"<{n}q")).unpack_from(data, pos))
                    pos += 8 * n
                else:
                    dims = []
                arguments.append(RequestArgument(no_value == 1, DataLocation(pool_index, offset, length), dims))
            sides.append(arguments)
        (count,) = _U32.unpack_from(data, pos)
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
    return Timing(*r._unpack(_TIMING))


def write_output_shapes(w: Writer, shapes: Sequence[OutputShape]) -> None:
    buf = w.buf
    buf += _U32.pack(len(shapes))
    for shape in shapes:
        dims = shape.dimensions
        n = len(dims)
        buf += _U32.pack(n)
        if n:
            buf += (_I64_ARRAYS[n] if n < 8 else struct.Struct(f"<{n}q")).pack(*dims)
        buf += b"\x01" if shape.is_sufficient else b"\x00"


def read_output_shapes(r: Reader) -> tuple[OutputShape, ...]:
    shapes = []
    for _ in range(r.count(5, bounds.MAX_OUTPUT_SHAPES)):
        if r.pos + 4 <= len(r.data) and _U32.unpack_from(r.data, r.pos)[0] > bounds.MAX_RANK:
            raise ProtocolError(f"an output shape of {_U32.unpack_from(r.data, r.pos)[0]} dimensions "
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
    shapes = read_output_shapes(r)
    timing = read_timing(r) if r.boolean() else None
    return message, shapes, timing


def _write_perf(w: Writer, info: PerformanceInfo) -> None:
    w.buf += _PERF.pack(info.exec_time, info.power_usage)


def _read_perf(r: Reader) -> PerformanceInfo:
    return PerformanceInfo(*r._unpack(_PERF))


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
