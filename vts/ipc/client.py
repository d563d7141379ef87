"""The harness side of the protocol: proxies that make a driver host look like a local ``Device``.

``ProxyDevice``, ``ProxyPreparedModel`` and ``ProxyBuffer`` implement the
``vts.hal.interfaces`` ABCs, so families cannot tell a remote driver from an
in-process one: a HAL error arrives as ``DriverError``, an exception the
driver raised arrives as an exception of the same type name (with the
driver's traceback), a dead host as ``DriverCrashed`` and a call past its
time limit as ``DriverTimeout``.

Speed matters (a sweep makes millions of calls), so the calling thread reads
its own reply (leader/follower): a thread hand-off costs ~80 us in CPython,
the whole round trip ~15 us.  The reader keeps the socket until its own
answer is in, waking only the callers a message answers, and then hands the
socket to one caller still waiting (waking every waiting thread on every
message cost the concurrency family 8% of its CPU).  Only when nobody is
calling and an asynchronous execution is outstanding does a background
thread read.

Pools are declared to the host once, on first use, with their descriptor
(SCM_RIGHTS), and named by id afterwards; when a pool object dies its id is
released on the next call.  Tensor data is never copied through the socket.

Nothing the driver sends is trusted (docs/protocol.md §8.1): every message
is bounded (``vts.bounds``), must be the reply or completion of an
outstanding request, must carry no descriptor it was not asked for, and
must decode exactly; otherwise the connection fails with
``ProtocolViolation`` (verdict ``crash``).  A request the harness itself
cannot encode raises ``EncodingError`` (verdict ``error``).  After a
successful execution the bytes of the output pools outside the output
regions are compared with a snapshot taken before it (``DriverMisbehaved``),
and pools that cannot be sealed are checked for a changed size
(``PoolTruncated``).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import select
import socket
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from vts import bounds
from vts.hal.enums import DeviceStatus, DeviceType, ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import (
    Buffer,
    Burst,
    CacheFiles,
    Device,
    FencedExecutionCallback,
    PreparedModel,
    SyncFence,
)
from vts.hal.memory import Memory
from vts.hal.types import (
    BufferDesc,
    BufferRole,
    Capabilities,
    ExecutionResult,
    Extension,
    MemoryToken,
    Model,
    Request,
    Subgraph,
    Timing,
)
from vts.ipc import protocol as p
from vts.ipc.burst_proxy import configure_burst
from vts.ipc.errors import (
    DriverCrashed,
    DriverLost,
    DriverMisbehaved,
    DriverTimeout,
    EncodingError,
    ProtocolError,
    ProtocolViolation,
    RequestRejected,
)
from vts.ipc.fences import read_fence, write_fence
from vts.ipc.protocol import Method, Reader, WireStatus, Writer

__all__ = [
    "Connection",
    "DriverCrashed",
    "DriverTimeout",
    "ProtocolViolation",
    "ProxyBuffer",
    "ProxyDevice",
    "ProxyPreparedModel",
    "RemoteDriverException",
    "connect",
]

#: "execute", "prepare_model"...: what a timeout or a crash reason names.
_CALL_NAMES = {method: method.name.lower() for method in Method}

#: How long the background reader waits before taking the socket, so a thread
#: about to wait for its own answer reads it itself (no hand-off).
_PUMP_GRACE = 0.002


class RemoteDriverException(Exception):
    """An exception the driver raised in its host (not a HAL status).

    ``remote_type`` is the driver's exception type name; instances are
    created through ``remote_exception`` as a subclass of that name, so
    reports read "driver raised ValueError: ..." in and out of process.
    """

    remote_type = "Exception"

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback


_REMOTE_TYPES: dict[str, type[RemoteDriverException]] = {}


#: Remote exception classes kept for reuse; a driver inventing a type per call gets fresh ones, not a leak.
_MAX_REMOTE_TYPES = 256


def remote_exception(type_name: str, message: str, remote_traceback: str) -> RemoteDriverException:
    cls = _REMOTE_TYPES.get(type_name)
    if cls is None:
        name = type_name if type_name.isidentifier() else "RemoteDriverException"
        cls = type(name, (RemoteDriverException,), {"remote_type": type_name, "__module__": "driver"})
        if len(_REMOTE_TYPES) < _MAX_REMOTE_TYPES:
            _REMOTE_TYPES[type_name] = cls
    return cls(message, remote_traceback)


#: What a decoder gets: the reply body, and the set it adds the descriptors it keeps to.
Decode = Callable[[Reader, set[int]], Any]

#: Exceptions a decoder raises on a body it cannot read (beyond ProtocolError).
_DECODE_ERRORS = (ProtocolError, struct.error, ValueError, OverflowError, IndexError, TypeError, UnicodeError)


class _Slot:
    __slots__ = ("message", "method", "what")

    def __init__(self, method: Method) -> None:
        self.message: p.Message | None = None
        self.method = method
        self.what = _CALL_NAMES[method]


#: The largest request sent ahead (``Connection.send_ahead``): one that travels inline.  A larger body goes
#: in a memfd made for the send, which a request that may never be sent must not cost.  How many go ahead
#: is bounded by the socket itself: a send ahead that would wait (the host's queue or the harness's send
#: buffer full) is not made.  Up to 16 KiB (before 2026-11-29) kept the mutations of a model of 218
#: operands (21 KB) from going ahead at all, the sweep's heaviest model.
MAX_AHEAD_BODY = p.MAX_INLINE_BODY


class PendingCall:
    """A request sent ahead of its answer (``Connection.send_ahead``); ``result`` waits for the answer."""

    __slots__ = ("connection", "decode", "seq", "slot")

    def __init__(self, connection: Connection, seq: int, slot: _Slot, decode: Decode | None) -> None:
        self.connection = connection
        self.seq = seq
        self.slot = slot
        self.decode = decode

    def result(self) -> Any:
        """What ``Connection.call`` would have returned or raised, waited for under the current deadline."""
        connection, slot = self.connection, self.slot
        connection._wait(lambda: slot.message is not None, connection._effective_deadline(), slot.what, self.seq)
        assert slot.message is not None
        return connection.answer(slot.message, slot.what, self.decode)


class Connection:
    """One connection to a driver host: calls, pools, handles, time limits, failure."""

    def __init__(self, sock: socket.socket, describe_death: Callable[[], DriverCrashed] | None = None) -> None:
        self.sock = sock
        # Non-blocking, waited on with poll(): one poll and one recvmsg per message, and every wait
        # (reading or sending) bounded by the deadline.
        sock.setblocking(False)
        self._receiver = p.Receiver(sock, bounds.DRIVER_FD_SPACE, bounds.MAX_DRIVER_BODY)
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)
        self._writable = select.poll()
        self._writable.register(sock, select.POLLOUT)
        self.describe_death = describe_death or (lambda: DriverCrashed("the driver host closed the connection"))
        #: Absolute ``time.monotonic()`` limit for every call (the case deadline), or None.
        self.deadline: float | None = None
        #: Relative limit per call in seconds, or None.
        self.call_timeout: float | None = None
        #: Set once the host is lost; every later call raises it.
        self.failure: DriverLost | None = None
        self.device_name = ""
        self.device_flags: tuple[str, ...] = ()
        self._seq = itertools.count(1)
        self._send_lock = threading.Lock()
        #: Re-entrant: a failure found while it is held (a caller's timeout) fails the connection under it.
        self._lock = threading.RLock()
        #: The background reader's condition; each waiting caller has one of its own (``_waiting``).
        self._cond = threading.Condition(self._lock)
        self._reader_active = False
        #: Callers waiting while another thread reads: each one's ``done`` and its own condition.
        self._waiting: list[tuple[Callable[[], bool], threading.Condition]] = []
        self._replies: dict[int, _Slot] = {}
        self._futures: dict[int, _RemoteFuture] = {}
        self._pump: threading.Thread | None = None
        self._pool_ids: weakref.WeakKeyDictionary[Memory, tuple[int, str, int, bool]] = weakref.WeakKeyDictionary()
        self._pool_counter = itertools.count(1)
        self._released_pools: collections.deque[int] = collections.deque()
        self._released_handles: collections.deque[int] = collections.deque()
        self._new_pools: list[tuple[int, str, int, int]] = []
        #: ``(model, its bytes, its pools' wire ids)`` while a caller sends that model unchanged.
        self._pinned: tuple[Model, bytes | None, tuple[tuple[str, int], ...]] | None = None
        #: The main subgraph of the model the pinned one was made from, and its bytes (``model_sent_unchanged``).
        self._like: tuple[Subgraph, p.SubgraphBytes] | None = None
        self._pinned_like: p.SubgraphBytes | None = None

    # -- calls ------------------------------------------------------------------

    def call(self, method: Method, write: Callable[[Writer], None] | None = None, decode: Decode | None = None,
             fds_allowed: int = 0) -> Any:
        """Send a request, wait for its reply and return ``decode`` of a NONE reply's body.

        Any other status raises (``DriverError``, a remote exception,
        ``RequestRejected``); a body that does not decode exactly, or that
        carries more than ``fds_allowed`` descriptors, is a protocol violation.
        """
        slot = _Slot(method)
        seq = self._send(method, write, slot)
        self._wait(lambda: slot.message is not None, self._effective_deadline(), slot.what, seq)
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
        if not all(isinstance(pool, MemoryToken) or (isinstance(pool, Memory) and self._declared_id(pool) is not None)
                   for pool in pools):
            return None
        slot = _Slot(method)
        seq = self._send(method, write, slot, ahead=True)
        return None if seq is None else PendingCall(self, seq, slot, decode)

    def outstanding(self) -> int:
        """Requests sent and not answered yet (between two cases: calls sent ahead for the cases to come)."""
        with self._cond:
            return len(self._replies)

    def call_async(self, method: Method, write: Callable[[Writer], None],
                   guard: _OutputGuard | None = None) -> Future[ExecutionResult]:
        """A request answered twice: the launch status now, the completion later (NOTIFY)."""
        future = _RemoteFuture(self, _CALL_NAMES[method], guard)
        slot = _Slot(method)
        seq = self._send(method, write, slot, future)
        self._wait(lambda: slot.message is not None, self._effective_deadline(), slot.what, seq)
        assert slot.message is not None
        try:
            self.answer(slot.message, slot.what)
        except BaseException:
            with self._cond:
                self._futures.pop(seq, None)
            raise
        self._start_pump()
        return future

    def answer(self, message: p.Message, what: str, decode: Decode | None = None, fds_allowed: int = 0) -> Any:
        """Decode a reply or completion; statuses other than NONE raise what they stand for."""
        taken: set[int] = set()
        try:
            reader = Reader(message.body, message.fds)
            status = message.status
            if status == ErrorStatus.NONE:
                if len(message.fds) > fds_allowed:
                    raise ProtocolError(f"{len(message.fds)} file descriptors attached to the answer to {what} "
                                        f"(at most {fds_allowed})")
                value = decode(reader, taken) if decode is not None else None
                reader.end()
                return value
            if message.fds:
                raise ProtocolError(f"{len(message.fds)} file descriptors attached to an error answer")
            raised: Exception
            if status in ErrorStatus._value2member_map_:
                text, shapes, timing = p.read_error(reader)
                reader.end()
                raised = DriverError(ErrorStatus(status), text, output_shapes=shapes, timing=timing)
            elif status == WireStatus.DRIVER_EXCEPTION:
                type_name = reader.text(bounds.MAX_TYPE_NAME)
                text = reader.text()
                remote_traceback = reader.text(bounds.MAX_TRACEBACK, keep_tail=True)
                reader.end()
                raised = remote_exception(type_name, text, remote_traceback)
            elif status == WireStatus.PROTOCOL_ERROR:
                text = reader.text()
                reader.end()
                raised = RequestRejected(f"the driver could not decode the {what} request: {text}")
            else:
                raise ProtocolError(f"an answer with unknown status {status}")
        except _DECODE_ERRORS as error:
            p.close_fds(message.fds)
            raise self.violation(f"malformed answer to {what}: {error}") from None
        finally:
            p.close_fds([fd for fd in message.fds if fd not in taken])
        raise raised

    def violation(self, what: str) -> DriverLost:
        """The driver broke the protocol: fail the connection (pending and later calls) and return why."""
        self._fail(ProtocolViolation(f"protocol violation: {what}"))
        assert self.failure is not None
        return self.failure

    def _effective_deadline(self) -> float | None:
        if self.call_timeout is None:
            return self.deadline
        limit = time.monotonic() + self.call_timeout
        return limit if self.deadline is None else min(limit, self.deadline)

    def _send(self, method: Method, write: Callable[[Writer], None] | None, slot: _Slot,
              future: _RemoteFuture | None = None, ahead: bool = False) -> int | None:
        if self.failure is not None:
            raise self.failure
        with self._send_lock:
            args = Writer()
            args.buf += p.EMPTY_PREAMBLE  # replaced below when pools are declared or released
            self._new_pools = []
            if write is not None:
                try:
                    write(args)
                except Exception as error:
                    self._new_pools = []
                    p.close_fds(args.close_after_send)
                    if ahead:
                        return None
                    raise EncodingError(f"the harness cannot encode the {slot.what} request: "
                                        f"{type(error).__name__}: {error}") from None
            fds = args.fds
            # Sent ahead only without a preamble: one cannot be taken back once built (ids handed out,
            # releases dequeued).  send_ahead checked the pools beforehand; a pool the write declared all
            # the same goes as an ordinary send, and releases a finalizer queued meanwhile wait for one.
            ahead = ahead and not self._new_pools
            if ahead and (self._released_pools or self._released_handles or len(args.buf) > MAX_AHEAD_BODY):
                p.close_fds(args.close_after_send)
                return None
            if self._new_pools or self._released_pools or self._released_handles:
                fds = list(args.fds)
                preamble = p.Preamble()
                for pool_id, name, size, fd in self._new_pools:
                    index = -1
                    if fd >= 0:
                        index = len(fds)
                        fds.append(fd)
                    preamble.pools.append(p.PoolDeclaration(pool_id, name, size, index))
                while self._released_pools:
                    preamble.released_pools.append(self._released_pools.popleft())
                while self._released_handles:
                    preamble.released_handles.append(self._released_handles.popleft())
                head = Writer()
                p.write_preamble(head, preamble)
                args.buf[: len(p.EMPTY_PREAMBLE)] = head.buf
            seq = next(self._seq)
            with self._cond:
                self._replies[seq] = slot
                if future is not None:
                    self._futures[seq] = future
            try:
                if ahead:  # never waits: a full socket means the host is busy enough
                    p.send_message(self.sock, seq, method, 0, args.buf, fds)
                else:
                    self._transmit(seq, method, args.buf, fds)
            except (OSError, ProtocolError, DriverTimeout) as error:
                with self._cond:
                    self._replies.pop(seq, None)
                    self._futures.pop(seq, None)
                if ahead:
                    return None  # a full socket or a lost host: the caller finds out when it sends itself
                if isinstance(error, ProtocolError):
                    raise EncodingError(f"the harness cannot send the {slot.what} request: {error}") from None
                if isinstance(error, DriverTimeout):
                    self._fail(error)
                else:
                    self._lose()
                assert self.failure is not None
                raise self.failure from None
            finally:
                for fd in args.close_after_send:
                    p.close_fds([fd])
        return seq

    def _transmit(self, seq: int, method: Method, body: bytearray, fds: list[int]) -> None:
        """Send on the non-blocking socket; a host that stops reading cannot block past the deadline."""
        while True:
            try:
                p.send_message(self.sock, seq, method, 0, body, fds)
                return
            except BlockingIOError:
                until = self._effective_deadline()
                wait_ms = None if until is None else max(until - time.monotonic(), 0.0) * 1000
                if not self._writable.poll(wait_ms) and wait_ms is not None:
                    raise DriverTimeout(f"the driver host stopped reading (request {method.name.lower()})") from None

    def _wait(self, done: Callable[[], bool], deadline: float | None, what: str, seq: int | None = None,
              caller_deadline: float | None = None) -> None:
        """Read messages (or let another thread read them) until ``done()``.

        A caller waiting while another thread reads sleeps on a condition of
        its own, woken when a message makes its ``done()`` true, when the
        reader hands it the socket, or when the connection fails.
        ``deadline`` is the connection's limit (DriverTimeout, and the
        connection is given up: a stuck host may never answer again);
        ``caller_deadline`` a ``Future.result(timeout)`` limit (TimeoutError).
        """
        until = deadline if caller_deadline is None else (
            caller_deadline if deadline is None else min(deadline, caller_deadline))
        while True:
            with self._lock:
                waiter: tuple[Callable[[], bool], threading.Condition] | None = None
                try:
                    while True:
                        if done():
                            return
                        if self.failure is not None:
                            raise self.failure
                        now = time.monotonic()
                        if caller_deadline is not None and now >= caller_deadline:
                            raise FutureTimeout()
                        if deadline is not None and now >= deadline:
                            self._fail(DriverTimeout(f"no answer to {what} within the time limit"))
                            assert self.failure is not None
                            raise self.failure
                        if not self._reader_active:
                            self._reader_active = True
                            break
                        if waiter is None:
                            waiter = (done, threading.Condition(self._lock))
                            self._waiting.append(waiter)
                        waiter[1].wait(None if until is None else until - now)
                finally:
                    if waiter is not None:
                        self._waiting.remove(waiter)
            try:
                while True:
                    self._read_one(until)
                    if done() or self.failure is not None or (until is not None and time.monotonic() >= until):
                        break
            finally:
                with self._lock:
                    self._reader_active = False
                    self._hand_off()

    def _hand_off(self) -> None:
        """Give the socket (the lock held, no reader) to one caller still waiting, else to the background reader."""
        for done, waiter in self._waiting:
            if not done():
                waiter.notify()
                return
        if self._futures:
            self._cond.notify()

    def _wake_answered(self) -> None:
        """Wake the callers (the lock held) whose answer a message just delivered; nobody else."""
        for done, waiter in self._waiting:
            if done():
                waiter.notify()

    def _read_one(self, until: float | None) -> None:
        """Read one message (as the active reader) and deliver it; return early when ``until`` passes."""
        try:
            wait = None if until is None else max(until - time.monotonic(), 0.0) * 1000
            if not self._readable.poll(wait):
                return
            message = self._receiver.receive()
        except (BlockingIOError, InterruptedError):
            return
        except (OSError, ProtocolError) as error:
            self._lose(error)
            return
        if message is None:
            self._lose()
            return
        self._deliver(message)

    def _deliver(self, message: p.Message) -> None:
        """Hand a message to the call or future it answers; anything else is a protocol violation."""
        problem = None
        future = None
        kind = message.code & (p.NOTIFY | p.REPLY)
        method = message.code & ~(p.NOTIFY | p.REPLY)
        with self._cond:
            if kind == p.REPLY:
                slot = self._replies.get(message.seq)
                if slot is None:
                    problem = f"a reply (code {message.code:#x}) to request {message.seq}, which is not outstanding"
                elif method != slot.method:
                    problem = (f"the reply to {slot.what} (request {message.seq}) carries code {message.code:#x}, "
                               f"expected {slot.method | p.REPLY:#x}")
                else:
                    del self._replies[message.seq]
                    slot.message = message
                    self._wake_answered()
                    return
            elif kind == p.NOTIFY:
                if method != Method.EXECUTE_ASYNC:
                    problem = f"a completion with code {message.code:#x} (only execute_async has completions)"
                elif message.seq in self._replies:
                    problem = f"the completion of request {message.seq} arrived before its launch reply"
                else:
                    future = self._futures.pop(message.seq, None)
                    if future is None:
                        problem = f"a completion of request {message.seq}, which has none outstanding"
            else:
                problem = f"a message with code {message.code:#x}, neither a reply nor a completion"
        if problem is not None:
            p.close_fds(message.fds)
            self.violation(problem)
            return
        assert future is not None
        future._complete(message)
        with self._lock:
            self._wake_answered()

    def _lose(self, error: BaseException | None = None) -> None:
        """The byte stream ended or broke: the host is gone (or beyond trust)."""
        if self.failure is not None:
            self._fail(self.failure)
            return
        if isinstance(error, ProtocolError):
            self.violation(f"malformed message from the driver: {error}")
            return
        with self._cond:
            calls = [slot.what for slot in self._replies.values()]
            calls += [future._what for future in self._futures.values()]
        death = self.describe_death()
        if calls:
            death = DriverCrashed(f"{death.reason} during {calls[0]}", death.stderr_tail)
        self._fail(death)

    def _fail(self, failure: DriverLost) -> None:
        with self._cond:
            if self.failure is None:
                self.failure = failure
            futures = list(self._futures.values())
            self._futures.clear()
            for _, waiter in self._waiting:
                waiter.notify()
            self._cond.notify_all()
        for future in futures:
            if not future.done():
                future.set_exception(self.failure)

    def abort(self, failure: DriverLost) -> None:
        """Give up on the host (it is being killed): pending and later calls raise ``failure``."""
        self._fail(failure)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self.failure is None:
            self._fail(DriverCrashed("the connection was closed by the harness"))
        with contextlib.suppress(OSError):
            self.sock.close()

    # -- the background reader for asynchronous completions ---------------------

    def _start_pump(self) -> None:
        with self._cond:
            if self._pump is None:
                self._pump = threading.Thread(target=self._pump_loop, daemon=True, name="nnvts-ipc-pump")
                self._pump.start()

    def _pump_loop(self) -> None:
        while True:
            with self._cond:
                while self.failure is None and (not self._futures or self._reader_active):
                    self._cond.wait(1.0)
                if self.failure is not None:
                    return
                # Leave the socket to a thread about to wait for its own answer.
                self._cond.wait(_PUMP_GRACE)
                if self._reader_active or not self._futures or self.failure is not None:
                    continue
                self._reader_active = True
            try:
                self._read_one(time.monotonic() + 0.05)
            finally:
                with self._lock:
                    self._reader_active = False
                    self._hand_off()

    # -- pools and handles ------------------------------------------------------

    def memory_id(self, pool: Any) -> int:
        """The wire id of ``pool``, declaring it (with its descriptor) in this request if new.

        Called while a request is encoded, under the send lock, so ids are
        declared in the order the host reads them.  A pool whose name or size
        changed since it was declared (a validation mutation) is declared
        again under a new id, and so is one closed since (the driver must see it
        closed, as it would in process).
        """
        if not isinstance(pool, Memory):
            raise ProtocolError(f"cannot send a {type(pool).__name__} as a memory pool")
        pool_id = self._declared_id(pool)
        if pool_id is not None:
            return pool_id
        entry = self._pool_ids.get(pool)
        if entry is not None:
            self._released_pools.append(entry[0])
        pool_id = next(self._pool_counter)
        self._pool_ids[pool] = (pool_id, pool.name, pool.size, pool.fd >= 0)
        weakref.finalize(pool, self._released_pools.append, pool_id)
        self._new_pools.append((pool_id, pool.name, pool.size, pool.fd))
        return pool_id

    def _declared_id(self, pool: Memory) -> int | None:
        """The id ``pool`` is declared under as it is now (name, size, open); None if it must be declared."""
        entry = self._pool_ids.get(pool)
        if entry is not None and entry[1:] == (pool.name, pool.size, pool.fd >= 0):
            return entry[0]
        return None

    def release_handle(self, handle: int) -> None:
        self._released_handles.append(handle)

    @contextlib.contextmanager
    def model_sent_unchanged(self, model: Model, made_from: Model | None = None) -> Iterator[None]:
        """Within the block, ``model`` is encoded once however often it is sent.

        The validation family sends each mutated model to ``get_supported_operations`` and then to
        ``prepare_model``; encoding it twice was a sixth of the harness's time in that sweep.  The
        caller promises not to change the model inside the block (nothing tells a changed model from an
        unchanged one short of encoding it again).  Its pools are looked up on every send, so a pool
        released or declared again in between makes the model encoded anew.

        ``made_from``: a model whose main subgraph's operands and operations ``model`` shares, in
        part, as the very same objects (a mutation of it).  Those are copied from ``made_from``'s
        bytes, kept from one block to the next while the same model is named: the caller promises
        that nobody changes them meanwhile.
        """
        like = None
        if made_from is not None:
            kept = self._like
            if kept is None or kept[0] is not made_from.main:
                kept = self._like = (made_from.main, p.SubgraphBytes.of(made_from.main))
            like = kept[1]
        self._pinned, self._pinned_like = (model, None, ()), like
        try:
            yield
        finally:
            self._pinned = self._pinned_like = None

    def write_model(self, w: Writer, model: Model) -> None:
        pinned = self._pinned
        if pinned is None or pinned[0] is not model:
            p.write_model(w, model, self.memory_id)
            return
        pools = tuple(("token", pool.token) if isinstance(pool, MemoryToken) else ("memory", self.memory_id(pool))
                      for pool in model.pools)
        if pinned[1] is not None and pinned[2] == pools:
            w.buf += pinned[1]
            return
        start = len(w.buf)
        p.write_model(w, model, self.memory_id, self._pinned_like)
        self._pinned = (model, bytes(w.buf[start:]), pools)

    def write_request(self, w: Writer, request: Request) -> None:
        p.write_request(w, request, self.memory_id)


#: The name this exception had; kept for code that catches it.
ProtocolErrorLost = ProtocolViolation

#: Bytes of guarded pool content above which the output guard is skipped (a copy per execution).
GUARD_LIMIT = 1 << 20


class _OutputGuard:
    """Bytes of the request's output pools outside every output region, saved before an execution.

    The HAL lets a driver write its outputs' regions only; ``check`` after a
    successful execution raises ``DriverMisbehaved`` if any other byte of
    those pools changed, and ``PoolTruncated`` if a pool that cannot be
    sealed was resized.
    """

    __slots__ = ("saved", "unsealed")

    def __init__(self, saved: list[tuple[Memory, int, bytes]], unsealed: list[Memory]) -> None:
        self.saved = saved
        self.unsealed = unsealed

    @classmethod
    def of(cls, request: Request) -> _OutputGuard | None:
        regions: dict[Memory, list[tuple[int, int]]] = {}
        pools = request.pools
        for argument in request.outputs:
            if argument.has_no_value:
                continue
            loc = argument.location
            if not 0 <= loc.pool_index < len(pools):
                continue
            pool = pools[loc.pool_index]
            if isinstance(pool, Memory) and pool.fd >= 0 and pool.size > 0:
                start = min(max(loc.offset, 0), pool.size)
                regions.setdefault(pool, []).append((start, min(max(loc.offset + loc.length, start), pool.size)))
        unsealed = [pool for pool in pools if isinstance(pool, Memory) and not pool.sealed and pool.fd >= 0]
        saved: list[tuple[Memory, int, bytes]] = []
        total = 0
        for pool, spans in regions.items():
            at = 0
            for start, end in [*sorted(spans), (pool.size, pool.size)]:
                if start > at:
                    total += start - at
                    if total > GUARD_LIMIT:
                        return cls([], unsealed) if unsealed else None
                    saved.append((pool, at, pool.read(at, start - at)))
                at = max(at, end)
        return cls(saved, unsealed) if saved or unsealed else None

    def check(self) -> None:
        for pool in self.unsealed:
            pool.check_size()
        for pool, at, before in self.saved:
            after = pool.read(at, len(before))
            if after != before:
                changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
                raise DriverMisbehaved(
                    f"the driver wrote outside its output regions: {len(changed)} byte(s) of the {pool.name} "
                    f"output pool changed at offsets {at + changed[0]}..{at + changed[-1]}, which belong to no "
                    "output (the HAL lets a driver write only its outputs' DataLocation regions)")


class _RemoteFuture(Future[ExecutionResult]):
    """A future whose ``result()`` reads the socket itself instead of waiting for another thread."""

    def __init__(self, connection: Connection, what: str, guard: _OutputGuard | None = None) -> None:
        super().__init__()
        self._connection = connection
        self._what = what
        self._guard = guard

    def _pump(self, timeout: float | None) -> None:
        if self.done():
            return
        conn = self._connection
        caller = None if timeout is None else time.monotonic() + timeout
        conn._wait(self.done, conn._effective_deadline(), self._what, caller_deadline=caller)

    def result(self, timeout: float | None = None) -> ExecutionResult:
        self._pump(timeout)
        return super().result(0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._pump(timeout)
        return super().exception(0)

    def _complete(self, message: p.Message) -> None:
        try:
            result = self._connection.answer(message, self._what, _decode_result)
            if self._guard is not None:
                self._guard.check()
        except BaseException as error:
            self.set_exception(error)
        else:
            self.set_result(result)


def _decode_result(r: Reader, taken: set[int]) -> ExecutionResult:
    return p.read_execution_result(r)


def _decode_i64(r: Reader, taken: set[int]) -> int:
    return r.i64()


def _decode_flags(r: Reader, taken: set[int]) -> list[bool]:
    return [r.boolean() for _ in range(r.count(1, bounds.MAX_LIST_ITEMS))]


def _decode_handle(r: Reader, taken: set[int]) -> int:
    return r.u32()


# ---------------------------------------------------------------------------
# Proxies


class ProxyBuffer(Buffer):
    def __init__(self, connection: Connection, handle: int) -> None:
        self._connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def copy_to(self, destination: Memory) -> None:
        conn = self._connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            p.write_pool_ref(w, destination, conn.memory_id)

        conn.call(Method.BUFFER_COPY_TO, write)

    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None:
        conn = self._connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            p.write_pool_ref(w, source, conn.memory_id)
            w.i64_list(list(dimensions))

        conn.call(Method.BUFFER_COPY_FROM, write)


class ProxyFencedCallback(FencedExecutionCallback):
    def __init__(self, connection: Connection, handle: int) -> None:
        self._connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        status, launched, fenced = self._connection.call(
            Method.FENCED_GET_EXECUTION_INFO, lambda w: w.u32(self.handle),
            lambda r, taken: (r.i64(), p.read_timing(r), p.read_timing(r)))
        return ErrorStatus(status) if status in ErrorStatus._value2member_map_ else status, launched, fenced  # type: ignore[return-value]


class ProxyPreparedModel(PreparedModel):
    def __init__(self, connection: Connection, handle: int) -> None:
        self._connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def _writer(self, request: Request, measure: MeasureTiming | int, deadline: int | None,
                loop_timeout: int | None) -> Callable[[Writer], None]:
        conn = self._connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            conn.write_request(w, request)
            w.i64(int(measure))
            w.optional_i64(deadline)
            w.optional_i64(loop_timeout)

        return write

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        guard = _OutputGuard.of(request)
        result = self._connection.call(Method.EXECUTE, self._writer(request, measure, deadline, loop_timeout),
                                       _decode_result)
        if guard is not None:
            guard.check()
        return result

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        return self._connection.call_async(Method.EXECUTE_ASYNC,
                                           self._writer(request, measure, deadline, loop_timeout),
                                           _OutputGuard.of(request))

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        conn = self._connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            conn.write_request(w, request)
            w.u32(len(wait_for))
            for fence in wait_for:
                write_fence(w, fence)
            w.i64(int(measure))
            w.optional_i64(deadline)
            w.optional_i64(loop_timeout)
            w.optional_i64(timeout_after_fence)

        fence, handle = conn.call(Method.EXECUTE_FENCED, write, lambda r, taken: (read_fence(r, taken), r.u32()),
                                  fds_allowed=bounds.MAX_REPLY_FDS)
        callback = ProxyFencedCallback(conn, handle) if handle != p.NULL_HANDLE else None
        return fence, callback  # type: ignore[return-value]


    def configure_execution_burst(self) -> Burst:
        return configure_burst(self._connection, self)


class ProxyDevice(Device):
    """A driver served by a host process, seen through one connection."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.name = connection.device_name
        for flag in p.DEVICE_FLAGS:
            setattr(self, flag, flag in connection.device_flags)

    def get_status(self) -> DeviceStatus:
        value = self.connection.call(Method.GET_STATUS, None, _decode_i64)
        return DeviceStatus(value) if value in DeviceStatus._value2member_map_ else value  # type: ignore[return-value]

    def get_type(self) -> DeviceType:
        value = self.connection.call(Method.GET_TYPE, None, _decode_i64)
        return DeviceType(value) if value in DeviceType._value2member_map_ else value  # type: ignore[return-value]

    def get_version_string(self) -> str:
        return self.connection.call(Method.GET_VERSION_STRING, None, lambda r, taken: r.text())

    def get_capabilities(self) -> Capabilities:
        return self.connection.call(Method.GET_CAPABILITIES, None, lambda r, taken: p.read_capabilities(r))

    def get_supported_extensions(self) -> list[Extension]:
        return self.connection.call(Method.GET_SUPPORTED_EXTENSIONS, None, lambda r, taken: p.read_extensions(r))

    def model_sent_unchanged(self, model: Model, made_from: Model | None = None
                             ) -> contextlib.AbstractContextManager[None]:
        """Encode ``model`` once within the block, copying what it shares with ``made_from`` from that
        model's bytes (``Connection.model_sent_unchanged``; an nnvts hint, not HAL)."""
        return self.connection.model_sent_unchanged(model, made_from)

    def get_supported_operations(self, model: Model) -> list[bool]:
        return self.connection.call(
            Method.GET_SUPPORTED_OPERATIONS, lambda w: self.connection.write_model(w, model), _decode_flags)

    def get_supported_operations_ahead(self, model: Model) -> PendingCall | None:
        """``get_supported_operations`` sent now, its answer read later (``Connection.send_ahead``; nnvts, not
        HAL): ``result()`` returns or raises what the call would have."""
        return self.connection.send_ahead(Method.GET_SUPPORTED_OPERATIONS,
                                          lambda w: self.connection.write_model(w, model), _decode_flags, model.pools)

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return self.connection.call(Method.GET_NUMBER_OF_CACHE_FILES_NEEDED, None,
                                    lambda r, taken: (r.i64(), r.i64()))

    def _prepared(self, handle: int) -> ProxyPreparedModel | None:
        return ProxyPreparedModel(self.connection, handle) if handle != p.NULL_HANDLE else None

    def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
        priority: Priority | int = Priority.MEDIUM,
        deadline: int | None = None,
        model_cache: CacheFiles = (),
        data_cache: CacheFiles = (),
        token: bytes = bytes(32),
    ) -> PreparedModel:
        write = self._preparation_writer(model, preference, priority, deadline, model_cache, data_cache, token)
        return self._prepared(self.connection.call(Method.PREPARE_MODEL, write, _decode_handle))  # type: ignore[return-value]

    def prepare_model_ahead(self, model: Model, preference: ExecutionPreference | int,
                            priority: Priority | int) -> PendingCall | None:
        """``prepare_model`` (no deadline, no cache) sent now, its answer read later (``Connection.send_ahead``;
        nnvts, not HAL): ``result()`` returns the prepared model or raises what the call would have."""
        return self.connection.send_ahead(
            Method.PREPARE_MODEL, self._preparation_writer(model, preference, priority, None, (), (), bytes(32)),
            lambda r, taken: self._prepared(_decode_handle(r, taken)), model.pools)

    def _preparation_writer(self, model: Model, preference: ExecutionPreference | int, priority: Priority | int,
                            deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                            token: bytes) -> Callable[[Writer], None]:
        def write(w: Writer) -> None:
            self.connection.write_model(w, model)
            w.i64(int(preference))
            w.i64(int(priority))
            w.optional_i64(deadline)
            w.fd_list(list(model_cache))
            w.fd_list(list(data_cache))
            w.raw(bytes(token))

        return write

    def prepare_model_from_cache(self, deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                                 token: bytes) -> PreparedModel:
        def write(w: Writer) -> None:
            w.optional_i64(deadline)
            w.fd_list(list(model_cache))
            w.fd_list(list(data_cache))
            w.raw(bytes(token))

        return self._prepared(  # type: ignore[return-value]
            self.connection.call(Method.PREPARE_MODEL_FROM_CACHE, write, _decode_handle))

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel],
                 input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]) -> tuple[Buffer, int]:
        conn = self.connection

        def write(w: Writer) -> None:
            p.write_buffer_desc(w, desc)
            w.u32(len(prepared_models))
            for model in prepared_models:
                if model is None:
                    w.u32(p.NULL_HANDLE)
                elif isinstance(model, ProxyPreparedModel) and model._connection is conn:
                    w.u32(model.handle)
                else:
                    w.u32(p.FOREIGN_HANDLE)
            p.write_roles(w, input_roles)
            p.write_roles(w, output_roles)

        handle, token = conn.call(Method.ALLOCATE, write, lambda r, taken: (r.u32(), r.i64()))
        buffer = ProxyBuffer(conn, handle) if handle != p.NULL_HANDLE else None
        return buffer, token  # type: ignore[return-value]

    def close(self) -> None:
        if self.connection.failure is None:
            with contextlib.suppress(DriverLost, DriverError, RemoteDriverException, RequestRejected, EncodingError):
                self.connection.call(Method.CLOSE)


def connect(sock: socket.socket, describe_death: Callable[[], DriverCrashed] | None = None,
            timeout: float | None = 30.0) -> ProxyDevice:
    """Say HELLO on a connected socket and return the device behind it.

    ``timeout`` bounds the handshake (a program that never answers is not
    a driver); afterwards calls are bounded by the connection's deadline.
    """
    connection = Connection(sock, describe_death)
    connection.call_timeout = timeout

    def hello(w: Writer) -> None:
        w.u32(p.PROTOCOL_VERSION)
        w.string("nnvts")

    version, connection.device_name, connection.device_flags = connection.call(
        Method.HELLO, hello, lambda r, taken: (r.u32(), r.text(), tuple(r.text() for _ in range(r.count(4, 64)))))
    connection.call_timeout = None
    if version != p.PROTOCOL_VERSION:
        raise ProtocolError(f"the driver speaks protocol version {version}, the harness {p.PROTOCOL_VERSION}")
    return ProxyDevice(connection)
