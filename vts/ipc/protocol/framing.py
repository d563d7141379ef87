"""The nnvts protocol's framing: the 16-byte header, descriptors over SCM_RIGHTS, message kinds and statuses.

docs/protocol.md §2 is the normative description; this is the part a message needs before its body is read.
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
    # Bursts, concurrency and further clients (vts/ipc/clients.py, docs/protocol.md §5.1).
    BURST_CONFIGURE = 19
    BURST_EXECUTE = 20
    BURST_FREE_MEMORY = 21
    SET_CONCURRENCY = 22
    OPEN_CONNECTION = 23
    # The opening exchange's second step, from revision 2 (vts/ipc/protocol/opening.py, docs/protocol.md §5.3).
    OPEN = 24
    # Several calls in one message, from revision 3 with the ``batch`` feature (docs/protocol.md §5.4).
    BATCH = 25
    # Reusable executions (AIDL v4 ``IExecution``), with the ``aidl:4`` feature (docs/protocol.md §5.5).
    REUSABLE_CREATE = 26
    REUSABLE_EXECUTE = 27
    REUSABLE_EXECUTE_FENCED = 28
    # AIDL v4's *WithConfig calls and their hints, with ``aidl:4`` granted (docs/protocol.md §5.5).
    PREPARE_MODEL_WITH_CONFIG = 29
    EXECUTE_WITH_CONFIG = 30
    EXECUTE_FENCED_WITH_CONFIG = 31
    BURST_EXECUTE_WITH_CONFIG = 32


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


class Refused(ProtocolError):
    """A message refused from its header alone (its body never read): answer it, keep the connection."""

    def __init__(self, seq: int, code: int, reason: str) -> None:
        super().__init__(f"message {seq} refused: {reason}")
        self.seq = seq
        self.code = code


class Receiver:
    """Reads messages from one socket into a reused buffer (one ``recvmsg`` per message).

    ``max_fds`` and ``max_body`` bound what the peer may send: the harness
    reads a driver with the limits of ``vts.bounds`` (room for a few
    descriptors, the kernel drops any beyond; bodies up to
    ``MAX_DRIVER_BODY``), the driver host reads the harness with the
    protocol's own maxima.  ``admit(seq, code, length)``, where given, is
    called from the header alone, before a body is allocated: it raises
    ``Refused`` to refuse the message (``nnvts serve``'s per-kind maxima and
    bytes in flight).
    """

    __slots__ = ("admit", "ancillary_space", "buffer", "max_body", "max_fds", "sock")

    def __init__(self, sock: socket.socket, max_fds: int = MAX_FDS, max_body: int = MAX_BODY,
                 admit: Callable[[int, int, int], None] | None = None) -> None:
        self.sock = sock
        self.admit = admit
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
                raise ProtocolError(f"file descriptors attached to a message were dropped: more than {self.max_fds}, "
                                    "or this process is out of descriptors")
            if flags & _MSG_TRUNC or n > _RECORD:
                raise ProtocolError(f"a record longer than {_RECORD} bytes (large bodies travel in a memfd)")
            if n < HEADER.size:
                raise ProtocolError(f"a {n}-byte record is shorter than the {HEADER.size}-byte header")
            length, seq, code, status, nfds, msg_flags = HEADER.unpack_from(self.buffer)
            if nfds != len(fds):
                raise ProtocolError(f"message {seq} declares {nfds} file descriptors but carries {len(fds)}")
            if length > self.max_body:
                raise ProtocolError(f"message {seq} declares a {length}-byte body (limit {self.max_body})")
            if self.admit is not None:
                self.admit(seq, code, length)
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


