"""One connection to a driver host, harness side: requests out, answers decoded, time limits, failure.

A ``Connection`` sends requests (``call``, ``send_ahead``, ``call_async``)
and decodes their answers (``answer``); reading the socket is its
``ReplyReader``'s job, naming pools its ``PoolTable``'s and encoding models
its ``ModelEncoder``'s.

Nothing the driver sends is trusted (docs/protocol.md §8.1): every message
is bounded (``vts.bounds``), must carry no descriptor it was not asked for,
and must decode exactly; otherwise the connection fails with
``ProtocolViolation`` (verdict ``crash``).  A request the harness itself
cannot encode raises ``EncodingError`` (verdict ``error``).
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from vts import bounds
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.memory import Memory
from vts.hal.types import ExecutionResult, MemoryToken, Model, Request
from vts.ipc import protocol as p
from vts.ipc.driver_options import DriverOption
from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout, EncodingError, ProtocolError, RequestRejected
from vts.ipc.output_guard import OutputGuard
from vts.ipc.pool_table import PoolTable
from vts.ipc.protocol import Method, Reader, WireStatus, Writer
from vts.ipc.remote_exceptions import remote_exception
from vts.ipc.remote_future import RemoteFuture
from vts.ipc.reply_reader import CALL_NAMES, ReplyReader, Slot
from vts.ipc.sent_models import ModelEncoder

__all__ = ["MAX_AHEAD_BODY", "Connection", "Decode", "PendingCall"]

#: What a decoder gets: the reply body, and the set it adds the descriptors it keeps to.
Decode = Callable[[Reader, set[int]], Any]

#: Exceptions a decoder raises on a body it cannot read (beyond ProtocolError).
_DECODE_ERRORS = (ProtocolError, struct.error, ValueError, OverflowError, IndexError, TypeError, UnicodeError)

#: The largest request sent ahead (``Connection.send_ahead``): one that travels inline.  A larger body goes
#: in a memfd made for the send, which a request that may never be sent must not cost.  How many go ahead
#: is bounded by the socket itself: a send ahead that would wait (the host's queue or the harness's send
#: buffer full) is not made.  Up to 16 KiB (before 2026-11-29) kept the mutations of a model of 218
#: operands (21 KB) from going ahead at all, the sweep's heaviest model.
MAX_AHEAD_BODY = p.MAX_INLINE_BODY


class PendingCall:
    """A request sent ahead of its answer (``Connection.send_ahead``); ``result`` waits for the answer."""

    __slots__ = ("connection", "decode", "seq", "shared", "slot")

    def __init__(self, connection: Connection, seq: int, slot: Slot, decode: Decode | None) -> None:
        self.connection = connection
        self.seq = seq
        self.slot = slot
        self.decode = decode
        #: Sent in a batch that also holds the calls of later cases (``vts.ipc.call_batch``).
        self.shared = False

    def result(self) -> Any:
        """What ``Connection.call`` would have returned or raised, waited for under the current deadline.

        A host lost while this call waited in a batch shared with later cases' calls may have been lost
        to one of those: the connection says so (``lost_in_shared_batch``), for the runner to re-run
        the case alone.
        """
        connection, slot = self.connection, self.slot
        try:
            connection.wait(lambda: slot.message is not None, slot.what)
        except DriverLost:
            if self.shared and slot.message is None:
                connection.lost_in_shared_batch = True
            raise
        assert slot.message is not None
        return connection.answer(slot.message, slot.what, self.decode)


class Connection:
    """One connection to a driver host: calls, pools, handles, time limits, failure."""

    def __init__(self, sock: socket.socket, describe_death: Callable[[], DriverCrashed] | None = None) -> None:
        self.sock = sock
        # Non-blocking, waited on with poll(): one poll and one recvmsg per message, and every wait
        # (reading or sending) bounded by the deadline.
        sock.setblocking(False)
        self._writable = select.poll()
        self._writable.register(sock, select.POLLOUT)
        self._reader = ReplyReader(
            sock, describe_death or (lambda: DriverCrashed("the driver host closed the connection")))
        #: Absolute ``time.monotonic()`` limit for every call (the case deadline), or None.
        self.deadline: float | None = None
        #: Relative limit per call in seconds, or None.
        self.call_timeout: float | None = None
        self.device_name = ""
        self.device_flags: tuple[str, ...] = ()
        #: The protocol revision agreed in the opening exchange (docs/protocol.md §5.3); 1 until then.
        self.revision = 1
        #: The driver options the driver was opened with, and those it accepts (None: any); ``vts.ipc.opening``.
        self.options: tuple[tuple[str, str], ...] = ()
        self.accepted_options: tuple[DriverOption, ...] | None = ()
        #: The features the driver granted in OPEN (revision 3: ``batch``); none before.
        self.features: frozenset[str] = frozenset()
        #: The host was lost while a case waited for a batch that also held later cases' calls.
        self.lost_in_shared_batch = False
        self._seq = itertools.count(1)
        self._send_lock = threading.Lock()
        #: The pools and handles the host knows (public for tests of isolation between connections).
        self.pools = PoolTable()
        self._models = ModelEncoder()

    @property
    def failure(self) -> DriverLost | None:
        """Set once the host is lost; every later call raises it."""
        return self._reader.failure

    @property
    def describe_death(self) -> Callable[[], DriverCrashed]:
        """What the connection calls when the stream ends, to say why the host died."""
        return self._reader.describe_death

    def call(self, method: Method, write: Callable[[Writer], None] | None = None, decode: Decode | None = None,
             fds_allowed: int = 0) -> Any:
        """Send a request, wait for its reply and return ``decode`` of a NONE reply's body.

        Any other status raises (``DriverError``, a remote exception,
        ``RequestRejected``); a body that does not decode exactly, or that
        carries more than ``fds_allowed`` descriptors, is a protocol violation.
        """
        slot = Slot(method)
        self._send(method, write, slot)
        self.wait(lambda: slot.message is not None, slot.what)
        assert slot.message is not None
        return self.answer(slot.message, slot.what, decode, fds_allowed)

    def send_ahead(self, method: Method, write: Callable[[Writer], None], decode: Decode | None,
                   pools: Sequence[Any] = ()) -> PendingCall | None:
        """Send a request now and leave its answer for later (``PendingCall.result``); None if it cannot go now.

        For a caller that knows its next calls (the validation sweep's next model mutations): the host
        works on them while the harness judges the answer before, and neither side sleeps between two
        calls.  The host answers in order, so each answer is still read, and a death or a hang still
        charged, when the caller waits for that call.  Sending ahead never blocks and never fails the
        connection: a full socket, a lost host, a request that needs a preamble (a pool of ``pools`` not
        yet declared, pools or handles waiting to be released) or one the harness cannot encode is left
        to be sent by the caller in the ordinary way, where what goes wrong is charged to it.
        """
        if self.failure is not None:
            return None
        if not _all_declared(self.pools, pools):
            return None
        slot = Slot(method)
        seq = self._send(method, write, slot, ahead=True)
        return None if seq is None else PendingCall(self, seq, slot, decode)

    def encode_ahead(self, write: Callable[[Writer], None], pools: Sequence[Any] = ()) -> bytes | None:
        """A call's arguments encoded now, to be sent ahead in a batch (``vts.ipc.call_batch``).

        None when the call could not go ahead (``send_ahead``'s rules): a lost host, a pool not yet
        declared, descriptors to attach, or arguments the harness cannot encode; the caller then sends
        it in the ordinary way, where what goes wrong is charged to it.
        """
        if self.failure is not None or not _all_declared(self.pools, pools):
            return None
        with self._send_lock:
            args = self._encode(write, "", ahead=True)
            if args is None:
                return None
            try:
                # ``pools`` were all declared, so the write declared none (a model names only its pools);
                # a write that did all the same is not sent ahead, as ``send_ahead`` would not.
                if self.pools.declares or args.fds or args.close_after_send:
                    p.close_fds(args.close_after_send)
                    return None
                return bytes(memoryview(args.buf)[len(p.EMPTY_PREAMBLE):])
            finally:
                self.pools.begin()

    def send_batch_ahead(self, body: bytearray, slot: Slot) -> int | None:
        """Send a ``BATCH`` built by a ``CallBatch`` (its body after an empty preamble); its sequence number.

        None when it cannot go now without waiting or without a preamble (releases are waiting, the
        body does not fit one record, a full socket, a lost host): its calls are then sent by their
        cases in the ordinary way.
        """
        if self.failure is not None:
            return None
        with self._send_lock:
            if self.pools.releases or len(body) > MAX_AHEAD_BODY:
                return None
            seq = next(self._seq)
            self._reader.expect(seq, slot)
            try:
                p.send_message(self.sock, seq, Method.BATCH, 0, body)
            except (OSError, ProtocolError):
                self._reader.forget(seq)
                return None
        return seq

    def outstanding(self) -> int:
        """Requests sent and not answered yet (between two cases: calls sent ahead for the cases to come)."""
        return self._reader.outstanding()

    def call_async(self, method: Method, write: Callable[[Writer], None],
                   guard: OutputGuard | None = None) -> Future[ExecutionResult]:
        """A request answered twice: the launch status now, the completion later (NOTIFY)."""
        future = RemoteFuture(self, CALL_NAMES[method], guard)
        slot = Slot(method)
        seq = self._send(method, write, slot, future)
        assert seq is not None
        self.wait(lambda: slot.message is not None, slot.what)
        assert slot.message is not None
        try:
            self.answer(slot.message, slot.what)
        except BaseException:
            self._reader.forget(seq)
            raise
        self._reader.start_pump()
        return future

    def wait(self, done: Callable[[], bool], what: str, caller_deadline: float | None = None) -> None:
        """Read (or let another thread read) until ``done()``, under the connection's time limit.

        Past the limit the connection fails with ``DriverTimeout``; past
        ``caller_deadline`` (a ``Future.result(timeout)``) ``TimeoutError`` is raised and the connection kept.
        """
        self._reader.wait(done, self.effective_deadline(), what, caller_deadline)

    def answer(self, message: p.Message, what: str, decode: Decode | None = None, fds_allowed: int = 0) -> Any:
        """Decode a reply or completion; statuses other than NONE raise what they stand for."""
        taken: set[int] = set()
        try:
            reader = Reader(message.body, message.fds)
            if message.status == ErrorStatus.NONE:
                if len(message.fds) > fds_allowed:
                    raise ProtocolError(f"{len(message.fds)} file descriptors attached to the answer to {what} "
                                        f"(at most {fds_allowed})")
                value = decode(reader, taken) if decode is not None else None
                reader.end()
                return value
            if message.fds:
                raise ProtocolError(f"{len(message.fds)} file descriptors attached to an error answer")
            raised = _error_answer(message.status, reader, what)
        except _DECODE_ERRORS as error:
            p.close_fds(message.fds)
            raise self.violation(f"malformed answer to {what}: {error}") from None
        finally:
            p.close_fds([fd for fd in message.fds if fd not in taken])
        raise raised

    def violation(self, what: str) -> DriverLost:
        """The driver broke the protocol: fail the connection (pending and later calls) and return why."""
        return self._reader.violation(what)

    def effective_deadline(self) -> float | None:
        """The absolute limit of a call starting now: the case deadline, or the per-call limit if sooner."""
        if self.call_timeout is None:
            return self.deadline
        limit = time.monotonic() + self.call_timeout
        return limit if self.deadline is None else min(limit, self.deadline)

    def _send(self, method: Method, write: Callable[[Writer], None] | None, slot: Slot,
              future: RemoteFuture | None = None, ahead: bool = False) -> int | None:
        """Encode and send a request; its sequence number, or None for a send ahead that cannot go now."""
        if self.failure is not None:
            raise self.failure
        with self._send_lock:
            args = self._encode(write, slot.what, ahead)
            if args is None:
                return None
            # Sent ahead only without a preamble: one cannot be taken back once built (ids handed out,
            # releases dequeued).  send_ahead checked the pools beforehand; a pool the write declared all
            # the same goes as an ordinary send, and releases a finalizer queued meanwhile wait for one.
            ahead = ahead and not self.pools.declares
            if ahead and (self.pools.releases or len(args.buf) > MAX_AHEAD_BODY):
                p.close_fds(args.close_after_send)
                return None
            fds = self.pools.write_preamble(args)
            seq = next(self._seq)
            self._reader.expect(seq, slot, future)
            try:
                if ahead:  # never waits: a full socket means the host is busy enough
                    p.send_message(self.sock, seq, method, 0, args.buf, fds)
                else:
                    self._transmit(seq, method, args.buf, fds)
            except (OSError, ProtocolError, DriverTimeout) as error:
                self._reader.forget(seq)
                if ahead:
                    return None  # a full socket or a lost host: the caller finds out when it sends itself
                raise self._send_failed(error, slot.what) from None
            finally:
                for fd in args.close_after_send:
                    p.close_fds([fd])
        return seq

    def _encode(self, write: Callable[[Writer], None] | None, what: str, ahead: bool) -> Writer | None:
        """The request's body after an empty preamble; None for a send ahead the harness cannot encode."""
        args = Writer()
        args.buf += p.EMPTY_PREAMBLE  # replaced when pools are declared or released
        self.pools.begin()
        if write is None:
            return args
        try:
            write(args)
        except Exception as error:
            self.pools.begin()
            p.close_fds(args.close_after_send)
            if ahead:
                return None
            raise EncodingError(f"the harness cannot encode the {what} request: "
                                f"{type(error).__name__}: {error}") from None
        return args

    def _send_failed(self, error: Exception, what: str) -> Exception:
        """What a failed send raises: the harness's own encoding problem, or the connection's failure."""
        if isinstance(error, ProtocolError):
            return EncodingError(f"the harness cannot send the {what} request: {error}")
        if isinstance(error, DriverTimeout):
            self._reader.fail(error)
        else:
            self._reader.lose()
        assert self.failure is not None
        return self.failure

    def _transmit(self, seq: int, method: Method, body: bytearray, fds: list[int]) -> None:
        """Send on the non-blocking socket; a host that stops reading cannot block past the deadline."""
        while True:
            try:
                p.send_message(self.sock, seq, method, 0, body, fds)
                return
            except BlockingIOError:
                until = self.effective_deadline()
                wait_ms = None if until is None else max(until - time.monotonic(), 0.0) * 1000
                if not self._writable.poll(wait_ms) and wait_ms is not None:
                    raise DriverTimeout(f"the driver host stopped reading (request {method.name.lower()})") from None

    def abort(self, failure: DriverLost) -> None:
        """Give up on the host (it is being killed): pending and later calls raise ``failure``."""
        self._reader.fail(failure)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Hang up: later calls raise ``DriverCrashed``."""
        if self.failure is None:
            self._reader.fail(DriverCrashed("the connection was closed by the harness"))
        with contextlib.suppress(OSError):
            self.sock.close()

    def memory_id(self, pool: Any) -> int:
        """The wire id of ``pool``, declaring it in the request being encoded if new (``PoolTable.memory_id``)."""
        return self.pools.memory_id(pool)

    def release_handle(self, handle: int) -> None:
        """The harness dropped ``handle``: the host is told in the next request's preamble."""
        self.pools.release_handle(handle)

    def model_sent_unchanged(self, model: Model, made_from: Model | None = None
                             ) -> contextlib.AbstractContextManager[None]:
        """Within the block, ``model`` is encoded once however often it is sent (``ModelEncoder``)."""
        return self._models.model_sent_unchanged(model, made_from)

    def write_model(self, w: Writer, model: Model) -> None:
        self._models.write_model(w, model, self.memory_id)

    def write_request(self, w: Writer, request: Request) -> None:
        """A request as this connection carries it: with AIDL's padding once ``aidl:N`` was granted (§5.3)."""
        p.write_request(w, request, self.memory_id, p.carries_padding(self.features))


def _all_declared(table: PoolTable, pools: Sequence[Any]) -> bool:
    """Whether every pool of ``pools`` is a driver token or a memory the host knows as it is now."""
    return all(isinstance(pool, MemoryToken) or (isinstance(pool, Memory) and table.declared_id(pool) is not None)
               for pool in pools)


def _error_answer(status: int, reader: Reader, what: str) -> Exception:
    """The exception an answer with a status other than NONE stands for (its body read exactly)."""
    member = ErrorStatus._value2member_map_.get(status)
    if member is not None:
        text, shapes, timing = p.read_error(reader)
        reader.end()
        return DriverError(member, text, output_shapes=shapes, timing=timing)  # type: ignore[arg-type]
    if status == WireStatus.DRIVER_EXCEPTION:
        type_name = reader.text(bounds.MAX_TYPE_NAME)
        text = reader.text()
        remote_traceback = reader.text(bounds.MAX_TRACEBACK, keep_tail=True)
        reader.end()
        return remote_exception(type_name, text, remote_traceback)
    if status == WireStatus.PROTOCOL_ERROR:
        text = reader.text()
        reader.end()
        return RequestRejected(f"the driver could not decode the {what} request: {text}")
    raise ProtocolError(f"an answer with unknown status {status}")
