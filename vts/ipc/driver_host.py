"""The driver host's connection: serves any Python ``Device`` over the nnvts protocol on one socket.

The host owns the driver's side of every shared object: pools mapped from the
descriptors the harness sends (``from_fd``), and handles for the prepared
models, buffers and fenced-execution callbacks the driver returns.  The
HAL's handlers are ``HalCalls``'s; the session kinds (bursts, concurrency,
further clients) ``host_sessions``'s; the process around it ``vts.ipc.host``.

Calls are served by threads taking turns as reader (leader/follower): the
thread that reads a request handles it itself, so a call costs no thread
hand-off.  With ``threads`` above one a driver blocked in one call (a long
execution) does not stop another thread's call, as with a HAL service's
thread pool; the default is one thread, which serves calls in order
(asynchronous executions still run concurrently, on the driver's threads).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from vts.hal.clients import CALLING_CLIENT
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.hal.memory import Memory, from_fd, unmapped
from vts.ipc import protocol as p
from vts.ipc.answers import driver_error_answer, exception_body, text_body
from vts.ipc.errors import ProtocolError
from vts.ipc.host_calls import HalCalls, Handler, OpenedWith
from vts.ipc.host_config import config_handlers
from vts.ipc.host_executions import execution_handlers
from vts.ipc.host_exit import EXIT_OK, exit_after_grace, log, out_of_memory
from vts.ipc.host_interface import PROTOCOL_INTERFACE, hold_to_protocol
from vts.ipc.host_limits import ConnectionLimits
from vts.ipc.host_sessions import host_handlers
from vts.ipc.protocol import Method, Reader, WireStatus, Writer

__all__ = ["DEFAULT_THREADS", "PROTOCOL_INTERFACE", "DriverHost", "hold_to_protocol"]

#: One call's answer: status, body, descriptors, the reply's writer (None for an error), what to do once sent.
_Answer = tuple[int, bytes | bytearray, Sequence[int], Writer | None, Callable[[], None] | None]

#: How many threads take turns reading requests (concurrent calls served at once).  One by default:
#: threads taking turns cost 20-60 us of GIL and futex traffic per call, and the suite's concurrency
#: (asynchronous executions) runs on the driver's own threads anyway.
DEFAULT_THREADS = 1


class DriverHost(HalCalls):
    """Serves ``device`` on the connected stream socket ``sock`` until the harness hangs up."""

    def __init__(self, device: Device, sock: socket.socket, threads: int = DEFAULT_THREADS,
                 owns_process: bool = False, limits: ConnectionLimits | None = None,
                 opened_with: OpenedWith | None = None) -> None:
        if owns_process:
            # A host process's device is seen only through the protocol: HAL 1.3 until OPEN grants an AIDL
            # version (``host_interface``); a host in a thread of the harness (in-process multi-client cases,
            # tests) shares its device with the harness, which sees its version.
            hold_to_protocol(device)
        super().__init__(device, opened_with)
        #: What this connection may hold, where it is one of ``nnvts serve``'s clients (None: spawned host).
        self.limits = limits
        #: Whether the host may end the process when the harness hangs up (not when it runs in a thread).
        self.owns_process = owns_process
        self.sock = sock
        self._receiver = p.Receiver(sock, admit=limits.admit if limits is not None else None)
        self.threads = max(1, threads) if limits is None else min(max(1, threads), limits.max_threads)
        self.pools: dict[int, Memory] = {}
        self.objects: dict[int, object] = {}
        self._handles = itertools.count(1)
        self._read_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._table_lock = threading.Lock()
        self._stopped = threading.Event()
        #: Bumped by every preamble that may change the pool table (see ``HalCalls.decoded_model``).
        self.pools_generation = 0
        #: The kinds this host serves inside a ``BATCH`` (docs/protocol.md §5.4).
        self.batch_methods: frozenset[int] = p.BATCH_METHODS
        #: Method code -> handler: the HAL's methods and the session kinds (``host_sessions``).
        self.handlers: dict[int, Handler] = {**self.hal_handlers(), **host_handlers(self), **execution_handlers(self),
                                             **config_handlers(self), p.Method.BATCH: self._batch}
        #: Indexes of the threads taking turns as reader (0 is the thread that called ``serve``).
        self._live_threads: set[int] = {0}
        #: Serving ``nnvts serve``'s clients: HELLO is due by then (monotonic), and calls being served.
        self._hello_due = time.monotonic() + (limits.service.handshake_timeout if limits is not None else 0)
        self._greeted = limits is None
        if limits is not None:
            limits.on_evict = self._hang_up
        self._calls = 0
        #: Asynchronous executions launched and not yet done: cancelled when the peer goes.
        self._launched: set[Future[Any]] = set()

    def serve(self) -> int:
        """Serve until the connection ends; returns the exit status."""
        with self._table_lock:
            for index in range(1, self.threads):
                self._start_thread(index)
        try:
            self._loop(0)
            self._stopped.wait()
        finally:
            self.release()
        return EXIT_OK

    def release(self) -> None:
        """The peer is gone: cancel its queued executions, close every pool's descriptor, drop every handle,
        give back what it held.  (An execution the driver is running ends when the driver ends it.)"""
        self._stopped.set()
        with self._table_lock:
            pools, self.pools = self.pools, {}
            objects, self.objects = self.objects, {}
            launched, self._launched = self._launched, set()
        for future in launched:
            future.cancel()
        for pool in pools.values():
            with contextlib.suppress(Exception):
                pool.close()
        objects.clear()
        if self.limits is not None:
            self.limits.close()

    def _start_thread(self, index: int) -> None:
        """Start reader thread ``index`` (call with the table lock held)."""
        self._live_threads.add(index)
        threading.Thread(target=self._loop, args=(index,), daemon=True, name=f"nnvts-host-{index}").start()

    def set_threads(self, threads: int) -> int:
        """Serve up to ``threads`` calls at once from now on (SET_CONCURRENCY); returns the previous number.

        Extra threads start now; surplus ones end after their next call.
        """
        if self.limits is not None:
            threads = min(threads, self.limits.max_threads)
        with self._table_lock:
            previous, self.threads = self.threads, max(1, threads)
            for index in range(1, self.threads):
                if index not in self._live_threads:
                    self._start_thread(index)
        return previous

    def track_execution(self, future: Future[Any]) -> None:
        with self._table_lock:
            if self._stopped.is_set():
                future.cancel()
                return
            self._launched.add(future)
        future.add_done_callback(self._forget)

    def _forget(self, future: Future[Any]) -> None:
        with self._table_lock:
            self._launched.discard(future)

    def _hang_up(self) -> None:
        """Evicted by the service (full, and this connection silent): its reader sees the end and stops."""
        log("closed a connection that had not said HELLO: the service is full")
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def _read_timeout(self) -> float | None:
        """How long the next read may wait (None: for ever; only a spawned host's harness is trusted so)."""
        if self.limits is None:
            return None
        if not self._greeted:
            return max(0.001, self._hello_due - time.monotonic())  # 0 would make the socket non-blocking
        return self.limits.service.idle_timeout

    def _quiet(self) -> bool:
        """Nothing in flight: no call being served, no asynchronous execution launched and not done."""
        return self._calls == 0 and not self._launched

    def _loop(self, index: int = 0) -> None:
        while not self._stopped.is_set():
            if index >= self.threads:
                with self._table_lock:
                    if index >= self.threads:
                        self._live_threads.discard(index)
                        return
            with self._read_lock:
                if self._stopped.is_set():
                    return
                admitted = 0
                try:
                    timeout = self._read_timeout()
                    if timeout is not None:
                        self.sock.settimeout(timeout)
                    message = self._receiver.receive()
                    if message is not None and message.code == Method.HELLO and not self._greeted:
                        self._greeted = True
                        if self.limits is not None:
                            self.limits.service.greeted(self.limits)
                except p.Refused as error:  # from the header alone: nothing was taken
                    self.send(error.seq, error.code | p.REPLY, WireStatus.PROTOCOL_ERROR, text_body(str(error)))
                    continue
                except TimeoutError:
                    if self._greeted and not self._quiet():
                        continue  # silent, but waiting for its executions: not idle
                    log("closed a connection that did not say HELLO in time" if not self._greeted else
                        "closed a connection idle for too long")
                    message = None
                except (ProtocolError, OSError) as error:
                    log(f"connection lost: {error}")
                    message = None
                finally:
                    if self.limits is not None:
                        admitted, self.limits.admitted = self.limits.admitted, 0
                if message is None:
                    self._release_bytes(admitted)
                if message is None:
                    self._stopped.set()
                    if self.owns_process:
                        # The harness is gone.  A call stuck in the driver must not keep the process alive.
                        exit_after_grace()
                    return
                try:
                    reader, taken = self._start(message)
                except ProtocolError as error:
                    p.close_fds(message.fds)
                    self._release_bytes(admitted)
                    self.send(message.seq, message.code | p.REPLY, WireStatus.PROTOCOL_ERROR, text_body(str(error)))
                    continue
            with self._table_lock:
                self._calls += 1
            try:
                self._handle(message, reader, taken)
            finally:
                with self._table_lock:
                    self._calls -= 1
                self._release_bytes(admitted)

    def _release_bytes(self, admitted: int) -> None:
        if self.limits is not None:
            self.limits.release_bytes(admitted)

    def _start(self, message: p.Message) -> tuple[Reader, set[int]]:
        """Apply the preamble in stream order (pool declarations, releases) before the next read."""
        reader = Reader(message.body, message.fds)
        preamble = p.read_preamble(reader)
        taken: set[int] = set()
        if not (preamble.pools or preamble.released_pools or preamble.released_handles):
            return reader, taken
        self.pools_generation += 1  # a model decoded before may name pools this preamble changes
        with self._table_lock:
            released = 0
            for pool_id in preamble.released_pools:
                pool = self.pools.pop(pool_id, None)
                if pool is not None:
                    pool.close()
                    released += 1
            dropped = sum(self.objects.pop(handle, None) is not None for handle in preamble.released_handles)
            if self.limits is not None:
                self.limits.give_pools(released)
                self.limits.give_handles(dropped)
                # Counted before any descriptor is taken: a refused preamble leaves them all to be closed.
                self.limits.take_pools(len({d.pool_id for d in preamble.pools if d.pool_id not in self.pools}))
            for decl in preamble.pools:
                fd = message.fds[decl.fd_index] if decl.fd_index >= 0 else -1
                if fd >= 0:
                    taken.add(fd)
                old = self.pools.pop(decl.pool_id, None)
                if old is not None:
                    old.close()
                self.pools[decl.pool_id] = _map_pool(decl.name, decl.size, fd)
        return reader, taken

    def _handle(self, message: p.Message, reader: Reader, taken: set[int]) -> None:
        try:
            # A service's client is known to the driver during its calls (priorities compare within one).
            client = CALLING_CLIENT.set(self.limits.client) if self.limits is not None else None
            try:
                status, body, fds, writer, after = self._answer(message.code, reader, message.seq, taken)
            finally:
                if client is not None:
                    CALLING_CLIENT.reset(client)
        finally:
            for fd in message.fds:
                if fd not in taken:
                    _close(fd)
        self.send(message.seq, message.code | p.REPLY, status, body, fds)
        if writer is not None:
            for fd in writer.close_after_send:
                _close(fd)
        if after is not None:
            after()

    def _answer(self, code: int, reader: Reader, seq: int, taken: set[int]) -> _Answer:
        """Serve one call: its status, body, descriptors, reply writer and what to do once it is sent."""
        try:
            handler = self.handlers.get(code)
            if handler is None:
                raise ProtocolError(f"unknown request code {code}")
            writer, after = handler(reader, seq, taken)
            return ErrorStatus.NONE, writer.buf, writer.fds, writer, after
        except ProtocolError as error:
            return WireStatus.PROTOCOL_ERROR, text_body(str(error)), [], None, None
        except DriverError as error:
            status, body, fds, writer = driver_error_answer(error)
            return status, body, fds, writer, None
        except MemoryError:
            out_of_memory()
        except BaseException as error:
            return WireStatus.DRIVER_EXCEPTION, exception_body(error), [], None, None

    def _batch(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, Callable[[], None] | None]:
        """BATCH (revision 3, docs/protocol.md §5.4): each call served in order as if it came alone, each
        answered with its own status; the preamble was applied before, once for all of them."""
        items = p.read_batch_request(r)
        w = Writer()
        w.u32(len(items))
        afters: list[Callable[[], None]] = []
        for code, arguments in items:
            if code not in self.batch_methods:
                p.write_batch_answer(w, WireStatus.PROTOCOL_ERROR, text_body(f"request code {code} cannot be batched"))
                continue
            status, body, fds, writer, after = self._answer(code, Reader(arguments, r.fds), seq, taken)
            if fds or (writer is not None and writer.close_after_send):  # no batchable call answers with one
                p.close_fds([*fds, *(writer.close_after_send if writer is not None else ())])
                status, body = WireStatus.PROTOCOL_ERROR, text_body(f"the answer to request code {code} "
                                                                   "carries descriptors: it cannot be batched")
            p.write_batch_answer(w, status, body)
            if after is not None:
                afters.append(after)

        def run_afters() -> None:
            for after in afters:
                after()

        return w, run_afters if afters else None

    def send(self, seq: int, code: int, status: int, body: bytes | bytearray, fds: Sequence[int] = ()) -> None:
        try:
            with self._send_lock:
                p.send_message(self.sock, seq, code, status, body, fds)
        except OSError as error:
            log(f"cannot answer the harness: {error}")
            self._stopped.set()

    def pool(self, pool_id: int) -> Memory:
        try:
            return self.pools[pool_id]
        except KeyError:
            raise ProtocolError(f"pool id {pool_id} was never declared (or was released)") from None

    def register(self, obj: object | None) -> int:
        if obj is None:
            return p.NULL_HANDLE
        handle = next(self._handles)
        with self._table_lock:
            if self.limits is not None:
                self.limits.take_handle()
            self.objects[handle] = obj
        return handle

    def object_of(self, handle: int, kind: type) -> Any:
        obj = self.objects.get(handle)
        if not isinstance(obj, kind):
            raise ProtocolError(f"handle {handle} is not a live {kind.__name__}")
        return obj


def _map_pool(name: str, size: int, fd: int) -> Memory:
    """The pool the harness declared, mapped; one the host cannot map keeps its name and size, and no bytes."""
    if fd < 0:
        return unmapped(name, size, fd)
    try:
        return from_fd(name, size, fd)
    except (OSError, ValueError, OverflowError) as error:
        log(f"cannot map pool {name!r} of {size} bytes: {error}")
        return unmapped(name, size, fd)


def _close(fd: int) -> None:
    p.close_fds([fd])
