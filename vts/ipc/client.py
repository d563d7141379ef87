"""The harness side of the protocol: proxies that make a driver host look like a local ``Device``.

``ProxyDevice``, ``ProxyPreparedModel`` and ``ProxyBuffer`` implement the
``vts.hal.interfaces`` ABCs, so families cannot tell a remote driver from an
in-process one: a HAL error arrives as ``DriverError``, an exception the
driver raised arrives as an exception of the same type name (with the
driver's traceback), a dead host as ``DriverCrashed`` and a call past its
time limit as ``DriverTimeout``.

Speed matters (a sweep makes millions of calls), so the calling thread reads
its own reply (leader/follower): a thread hand-off costs ~80 us in CPython,
the whole round trip ~15 us.  Only when nobody is calling and an
asynchronous execution is outstanding does a background thread read.

Pools are declared to the host once, on first use, with their descriptor
(SCM_RIGHTS), and named by id afterwards; when a pool object dies its id is
released on the next call.  Tensor data is never copied through the socket.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import select
import socket
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

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
    Model,
    Request,
    Timing,
)
from vts.ipc import protocol as p
from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout, ProtocolError
from vts.ipc.fences import read_fence, write_fence
from vts.ipc.protocol import Method, Reader, WireStatus, Writer

__all__ = [
    "Connection",
    "DriverCrashed",
    "DriverTimeout",
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


def remote_exception(type_name: str, message: str, remote_traceback: str) -> RemoteDriverException:
    cls = _REMOTE_TYPES.get(type_name)
    if cls is None:
        name = type_name if type_name.isidentifier() else "RemoteDriverException"
        cls = type(name, (RemoteDriverException,), {"remote_type": type_name, "__module__": "driver"})
        _REMOTE_TYPES[type_name] = cls
    return cls(message, remote_traceback)


class _Slot:
    __slots__ = ("message", "what")

    def __init__(self, what: str) -> None:
        self.message: p.Message | None = None
        self.what = what


class Connection:
    """One connection to a driver host: calls, pools, handles, time limits, failure."""

    def __init__(self, sock: socket.socket, describe_death: Callable[[], DriverCrashed] | None = None) -> None:
        self.sock = sock
        # Non-blocking, waited on with poll(): one poll and one recvmsg per message, and every wait
        # (reading or sending) bounded by the deadline.
        sock.setblocking(False)
        self._receiver = p.Receiver(sock)
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
        self._cond = threading.Condition()
        self._reader_active = False
        self._replies: dict[int, _Slot] = {}
        self._futures: dict[int, _RemoteFuture] = {}
        self._pump: threading.Thread | None = None
        self._pool_ids: weakref.WeakKeyDictionary[Memory, tuple[int, str, int, bool]] = weakref.WeakKeyDictionary()
        self._pool_counter = itertools.count(1)
        self._released_pools: collections.deque[int] = collections.deque()
        self._released_handles: collections.deque[int] = collections.deque()
        self._new_pools: list[tuple[int, str, int, int]] = []

    # -- calls ------------------------------------------------------------------

    def call(self, method: Method, write: Callable[[Writer], None] | None = None) -> Reader:
        """Send a request and wait for its reply; returns a reader over a NONE reply's body."""
        slot = _Slot(_CALL_NAMES[method])
        seq = self._send(method, write, slot)
        self._wait(lambda: slot.message is not None, self._effective_deadline(), slot.what, seq)
        assert slot.message is not None
        return _reply_reader(slot.message)

    def call_async(self, method: Method, write: Callable[[Writer], None]) -> Future[ExecutionResult]:
        """A request answered twice: the launch status now, the completion later (NOTIFY)."""
        future = _RemoteFuture(self, _CALL_NAMES[method])
        slot = _Slot(_CALL_NAMES[method])
        seq = self._send(method, write, slot, future)
        self._wait(lambda: slot.message is not None, self._effective_deadline(), slot.what, seq)
        assert slot.message is not None
        try:
            _reply_reader(slot.message).end()
        except BaseException:
            with self._cond:
                self._futures.pop(seq, None)
            raise
        self._start_pump()
        return future

    def _effective_deadline(self) -> float | None:
        if self.call_timeout is None:
            return self.deadline
        limit = time.monotonic() + self.call_timeout
        return limit if self.deadline is None else min(limit, self.deadline)

    def _send(self, method: Method, write: Callable[[Writer], None] | None, slot: _Slot,
              future: _RemoteFuture | None = None) -> int:
        if self.failure is not None:
            raise self.failure
        with self._send_lock:
            args = Writer()
            args.buf += p.EMPTY_PREAMBLE  # replaced below when pools are declared or released
            self._new_pools = []
            if write is not None:
                write(args)
            fds = args.fds
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
                self._transmit(seq, method, args.buf, fds)
            except (OSError, ProtocolError, DriverTimeout) as error:
                with self._cond:
                    self._replies.pop(seq, None)
                    self._futures.pop(seq, None)
                if isinstance(error, ProtocolError):
                    raise
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

        ``deadline`` is the connection's limit (DriverTimeout, and the
        connection is given up: a stuck host may never answer again);
        ``caller_deadline`` a ``Future.result(timeout)`` limit (TimeoutError).
        """
        until = deadline if caller_deadline is None else (
            caller_deadline if deadline is None else min(deadline, caller_deadline))
        while True:
            with self._cond:
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
                    self._cond.wait(None if until is None else until - now)
            try:
                self._read_one(until)
            finally:
                with self._cond:
                    self._reader_active = False
                    self._cond.notify_all()

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
        future = None
        if not message.code & (p.NOTIFY | p.REPLY):
            p.close_fds(message.fds)
            self._fail(ProtocolErrorLost(f"the driver sent request code {message.code} to the harness"))
            return
        with self._cond:
            if message.code & p.NOTIFY:
                future = self._futures.pop(message.seq, None)
            else:
                slot = self._replies.pop(message.seq, None)
                if slot is not None:
                    slot.message = message
                    return
        if future is None:
            p.close_fds(message.fds)  # an answer nobody waits for any more (after a timeout)
            return
        future._complete(message)

    def _lose(self, error: BaseException | None = None) -> None:
        """The byte stream ended or broke: the host is gone (or beyond trust)."""
        if self.failure is not None:
            self._fail(self.failure)
            return
        if isinstance(error, ProtocolError):
            self._fail(ProtocolErrorLost(f"malformed message from the driver: {error}"))
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
                with self._cond:
                    self._reader_active = False
                    self._cond.notify_all()

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
        entry = self._pool_ids.get(pool)
        if entry is not None:
            pool_id, name, size, open_ = entry
            if name == pool.name and size == pool.size and open_ == (pool.fd >= 0):
                return pool_id
            self._released_pools.append(pool_id)
        pool_id = next(self._pool_counter)
        self._pool_ids[pool] = (pool_id, pool.name, pool.size, pool.fd >= 0)
        weakref.finalize(pool, self._released_pools.append, pool_id)
        self._new_pools.append((pool_id, pool.name, pool.size, pool.fd))
        return pool_id

    def release_handle(self, handle: int) -> None:
        self._released_handles.append(handle)

    def write_model(self, w: Writer, model: Model) -> None:
        p.write_model(w, model, self.memory_id)

    def write_request(self, w: Writer, request: Request) -> None:
        p.write_request(w, request, self.memory_id)


class ProtocolErrorLost(DriverCrashed):
    """The driver broke the protocol; the stream cannot be trusted, so the host is treated as lost."""


class _RemoteFuture(Future[ExecutionResult]):
    """A future whose ``result()`` reads the socket itself instead of waiting for another thread."""

    def __init__(self, connection: Connection, what: str) -> None:
        super().__init__()
        self._connection = connection
        self._what = what

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
            result = p.read_execution_result(_reply_reader(message))
        except BaseException as error:
            self.set_exception(error)
        else:
            self.set_result(result)


def _reply_reader(message: p.Message) -> Reader:
    """The body of a NONE reply; any other status becomes the matching exception."""
    reader = Reader(message.body, message.fds)
    status = message.status
    if status == ErrorStatus.NONE:
        return reader
    p.close_fds(message.fds)
    if status in ErrorStatus._value2member_map_:
        text, shapes, timing = p.read_error(reader)
        raise DriverError(ErrorStatus(status), text, output_shapes=shapes, timing=timing)
    if status == WireStatus.DRIVER_EXCEPTION:
        raise remote_exception(reader.string(), reader.string(), reader.string())
    if status == WireStatus.PROTOCOL_ERROR:
        raise ProtocolError(f"the driver host rejected the request: {reader.string()}")
    raise ProtocolError(f"reply with unknown status {status}")


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

        conn.call(Method.BUFFER_COPY_TO, write).end()

    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None:
        conn = self._connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            p.write_pool_ref(w, source, conn.memory_id)
            w.i64_list(list(dimensions))

        conn.call(Method.BUFFER_COPY_FROM, write).end()


class ProxyFencedCallback(FencedExecutionCallback):
    def __init__(self, connection: Connection, handle: int) -> None:
        self._connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        r = self._connection.call(Method.FENCED_GET_EXECUTION_INFO, lambda w: w.u32(self.handle))
        status = r.i64()
        launched, fenced = p.read_timing(r), p.read_timing(r)
        r.end()
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
        r = self._connection.call(Method.EXECUTE, self._writer(request, measure, deadline, loop_timeout))
        result = p.read_execution_result(r)
        r.end()
        return result

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        return self._connection.call_async(Method.EXECUTE_ASYNC,
                                           self._writer(request, measure, deadline, loop_timeout))

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

        r = conn.call(Method.EXECUTE_FENCED, write)
        taken: set[int] = set()
        fence = read_fence(r, taken)
        handle = r.u32()
        r.end()
        callback = ProxyFencedCallback(conn, handle) if handle != p.NULL_HANDLE else None
        return fence, callback  # type: ignore[return-value]


    def configure_execution_burst(self) -> Burst:
        from vts.ipc.sessions import configure_burst

        return configure_burst(self._connection, self)


class ProxyDevice(Device):
    """A driver served by a host process, seen through one connection."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.name = connection.device_name
        for flag in p.DEVICE_FLAGS:
            setattr(self, flag, flag in connection.device_flags)

    def _query(self, method: Method) -> Reader:
        return self.connection.call(method)

    def get_status(self) -> DeviceStatus:
        r = self._query(Method.GET_STATUS)
        value = r.i64()
        r.end()
        return DeviceStatus(value) if value in DeviceStatus._value2member_map_ else value  # type: ignore[return-value]

    def get_type(self) -> DeviceType:
        r = self._query(Method.GET_TYPE)
        value = r.i64()
        r.end()
        return DeviceType(value) if value in DeviceType._value2member_map_ else value  # type: ignore[return-value]

    def get_version_string(self) -> str:
        r = self._query(Method.GET_VERSION_STRING)
        value = r.string()
        r.end()
        return value

    def get_capabilities(self) -> Capabilities:
        r = self._query(Method.GET_CAPABILITIES)
        caps = p.read_capabilities(r)
        r.end()
        return caps

    def get_supported_extensions(self) -> list[Extension]:
        r = self._query(Method.GET_SUPPORTED_EXTENSIONS)
        exts = p.read_extensions(r)
        r.end()
        return exts

    def get_supported_operations(self, model: Model) -> list[bool]:
        r = self.connection.call(Method.GET_SUPPORTED_OPERATIONS, lambda w: self.connection.write_model(w, model))
        flags = [r.boolean() for _ in range(r.count(1))]
        r.end()
        return flags

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        r = self._query(Method.GET_NUMBER_OF_CACHE_FILES_NEEDED)
        counts = (r.i64(), r.i64())
        r.end()
        return counts

    def _prepared(self, r: Reader) -> ProxyPreparedModel | None:
        handle = r.u32()
        r.end()
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
        def write(w: Writer) -> None:
            self.connection.write_model(w, model)
            w.i64(int(preference))
            w.i64(int(priority))
            w.optional_i64(deadline)
            w.fd_list(list(model_cache))
            w.fd_list(list(data_cache))
            w.raw(bytes(token))

        return self._prepared(self.connection.call(Method.PREPARE_MODEL, write))  # type: ignore[return-value]

    def prepare_model_from_cache(self, deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                                 token: bytes) -> PreparedModel:
        def write(w: Writer) -> None:
            w.optional_i64(deadline)
            w.fd_list(list(model_cache))
            w.fd_list(list(data_cache))
            w.raw(bytes(token))

        return self._prepared(self.connection.call(Method.PREPARE_MODEL_FROM_CACHE, write))  # type: ignore[return-value]

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

        r = conn.call(Method.ALLOCATE, write)
        handle = r.u32()
        token = r.i64()
        r.end()
        buffer = ProxyBuffer(conn, handle) if handle != p.NULL_HANDLE else None
        return buffer, token  # type: ignore[return-value]

    def close(self) -> None:
        if self.connection.failure is None:
            with contextlib.suppress(DriverLost, DriverError, RemoteDriverException, ProtocolError):
                self.connection.call(Method.CLOSE).end()


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

    r = connection.call(Method.HELLO, hello)
    version = r.u32()
    connection.device_name = r.string()
    connection.device_flags = tuple(r.string() for _ in range(r.count(4)))
    r.end()
    connection.call_timeout = None
    if version != p.PROTOCOL_VERSION:
        raise ProtocolError(f"the driver speaks protocol version {version}, the harness {p.PROTOCOL_VERSION}")
    return ProxyDevice(connection)
