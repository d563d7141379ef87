"""The driver host: serves any Python ``Device`` over the nnvts protocol.

Run as ``nnvts serve --driver X --socket PATH`` (listen on a path) or, as
the harness does, ``python -m vts.ipc.host --driver X --fd 3`` on an
inherited socket.  The host owns the driver's side of every shared object:
pools mapped from the descriptors the harness sends (``from_fd``), and
handles for the prepared models, buffers and fenced-execution callbacks the
driver returns.

Calls are served by threads taking turns as reader (leader/follower): the
thread that reads a request handles it itself, so a call costs no thread
hand-off.  With ``--threads N`` a driver blocked in one call (a long
execution) does not stop another thread's call, as with a HAL service's
thread pool; the default is one thread, which serves calls in order
(asynchronous executions still run concurrently, on the driver's threads).

Exit status: 0 when the harness closed the connection (or, serving a path,
on SIGTERM, SIGINT or SIGHUP), 2 when the driver cannot be loaded, 3 when
the driver ran out of memory (``MemoryError`` usually means the memory limit
was hit; the process is no longer trustworthy, so it ends and the harness
reports the case as crashed), 4 when the path cannot be listened on.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import itertools
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from vts import bounds
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer, Device, FencedExecutionCallback, PreparedModel
from vts.hal.memory import Memory, from_fd, unmapped
from vts.hal.types import ExecutionResult, Model
from vts.ipc import protocol as p
from vts.ipc.answers import (
    MalformedAnswer,
    as_str,
    cut_wire_text,
    driver_error_answer,
    encode_answer,
    encode_result,
    exception_body,
    int_reply,
    measure_timing,
    short_repr,
    text_body,
)
from vts.ipc.errors import ProtocolError
from vts.ipc.fences import read_fence, write_fence
from vts.ipc.host_limits import ConnectionLimits, ServiceLimits
from vts.ipc.host_sessions import host_handlers, serve_client
from vts.ipc.listener import StopSignals, accept_until_stopped, listen_on
from vts.ipc.protocol import Method, Reader, WireStatus, Writer

EXIT_OK = 0
EXIT_DRIVER_NOT_LOADED = 2
EXIT_OUT_OF_MEMORY = 3
EXIT_CANNOT_LISTEN = 4

#: How many threads take turns reading requests (concurrent calls served at once).  One by default:
#: threads taking turns cost 20-60 us of GIL and futex traffic per call, and the suite's concurrency
#: (asynchronous executions) runs on the driver's own threads anyway.
DEFAULT_THREADS = 1
#: Seconds the host waits, once the harness hung up, for a stuck driver call before it exits anyway.
STUCK_EXIT_GRACE = 5.0


class ForeignPreparedModel(PreparedModel):
    """Stands for a prepared model the harness could not name (not from this driver).

    ``allocate`` must refuse it (INVALID_ARGUMENT); a driver that instead
    calls it gets GENERAL_FAILURE, as a remote object that is not its own.
    """

    def execute(self, request: Any, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "not a prepared model of this driver")


def _unmapped_pool(name: str, size: int, fd: int) -> Memory:
    """A pool the host could not map: it keeps its name and size, and has no bytes."""
    return unmapped(name, size, fd)


class DriverHost:
    """Serves ``device`` on the connected stream socket ``sock`` until the harness hangs up."""

    def __init__(self, device: Device, sock: socket.socket, threads: int = DEFAULT_THREADS,
                 owns_process: bool = False, limits: ConnectionLimits | None = None) -> None:
        self.device = device
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
        #: Bumped by every preamble that may change the pool table (see ``_read_model``).
        self._pools_generation = 0
        #: The last model read: the pool generation it was decoded in, its bytes, the model.
        self._last_model: tuple[int, bytes, Model] | None = None
        self._handlers: dict[int, Callable[[Reader, int, set[int]], tuple[Writer, Callable[[], None] | None]]] = {
            Method.HELLO: self._hello,
            Method.GET_STATUS: lambda r, s, t: int_reply(self.device.get_status()),
            Method.GET_TYPE: lambda r, s, t: int_reply(self.device.get_type()),
            Method.GET_VERSION_STRING: self._version_string,
            Method.GET_CAPABILITIES: self._capabilities,
            Method.GET_SUPPORTED_EXTENSIONS: self._extensions,
            Method.GET_SUPPORTED_OPERATIONS: self._supported_operations,
            Method.GET_NUMBER_OF_CACHE_FILES_NEEDED: self._cache_files_needed,
            Method.PREPARE_MODEL: self._prepare_model,
            Method.PREPARE_MODEL_FROM_CACHE: self._prepare_model_from_cache,
            Method.ALLOCATE: self._allocate,
            Method.EXECUTE: self._execute,
            Method.EXECUTE_ASYNC: self._execute_async,
            Method.EXECUTE_FENCED: self._execute_fenced,
            Method.FENCED_GET_EXECUTION_INFO: self._fenced_info,
            Method.BUFFER_COPY_TO: self._copy_to,
            Method.BUFFER_COPY_FROM: self._copy_from,
            Method.CLOSE: self._close,
        }
        self._handlers.update(host_handlers(self))
        #: Indexes of the threads taking turns as reader (0 is the thread that called ``serve``).
        self._live_threads: set[int] = {0}

    # -- serving --------------------------------------------------------------

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
        """The peer is gone: close every pool's descriptor, drop every handle, give back what it held."""
        self._stopped.set()
        with self._table_lock:
            pools, self.pools = self.pools, {}
            objects, self.objects = self.objects, {}
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
                    message = self._receiver.receive()
                except p.Refused as error:  # from the header alone: nothing was taken
                    self._send(error.seq, error.code | p.REPLY, WireStatus.PROTOCOL_ERROR, text_body(str(error)))
                    continue
                except (ProtocolError, OSError) as error:
                    _log(f"connection lost: {error}")
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
                        _exit_after_grace()
                    return
                try:
                    reader, taken = self._start(message)
                except ProtocolError as error:
                    p.close_fds(message.fds)
                    self._release_bytes(admitted)
                    self._send(message.seq, message.code | p.REPLY, WireStatus.PROTOCOL_ERROR, text_body(str(error)))
                    continue
            try:
                self._handle(message, reader, taken)
            finally:
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
        self._pools_generation += 1  # a model decoded before may name pools this preamble changes
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
        after: Callable[[], None] | None = None
        reply_code = message.code | p.REPLY
        try:
            handler = self._handlers.get(message.code)
            if handler is None:
                raise ProtocolError(f"unknown request code {message.code}")
            writer, after = handler(reader, message.seq, taken)
            status, body, fds = ErrorStatus.NONE, writer.buf, writer.fds
        except ProtocolError as error:
            status, body, fds, writer = WireStatus.PROTOCOL_ERROR, text_body(str(error)), [], None
        except DriverError as error:
            status, body, fds, writer = driver_error_answer(error)
        except MemoryError:
            _out_of_memory()
        except BaseException as error:
            status, body, fds, writer = WireStatus.DRIVER_EXCEPTION, exception_body(error), [], None
        finally:
            for fd in message.fds:
                if fd not in taken:
                    _close(fd)
        self._send(message.seq, reply_code, status, body, fds)
        if writer is not None:
            for fd in writer.close_after_send:
                _close(fd)
        if after is not None:
            after()

    def _send(self, seq: int, code: int, status: int, body: bytes | bytearray, fds: Sequence[int] = ()) -> None:
        try:
            with self._send_lock:
                p.send_message(self.sock, seq, code, status, body, fds)
        except OSError as error:
            _log(f"cannot answer the harness: {error}")
            self._stopped.set()

    # -- object tables ----------------------------------------------------------

    def _pool(self, pool_id: int) -> Memory:
        try:
            return self.pools[pool_id]
        except KeyError:
            raise ProtocolError(f"pool id {pool_id} was never declared (or was released)") from None

    def _register(self, obj: object | None) -> int:
        if obj is None:
            return p.NULL_HANDLE
        handle = next(self._handles)
        with self._table_lock:
            if self.limits is not None:
                self.limits.take_handle()
            self.objects[handle] = obj
        return handle

    def _object(self, handle: int, kind: type) -> Any:
        obj = self.objects.get(handle)
        if not isinstance(obj, kind):
            raise ProtocolError(f"handle {handle} is not a live {kind.__name__}")
        return obj

    # -- handlers ---------------------------------------------------------------

    def _hello(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        version = r.u32()
        r.string()  # client name: informative only
        r.end()
        if version != p.PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {version} requested; this host speaks {p.PROTOCOL_VERSION}")
        w = Writer()
        w.u32(p.PROTOCOL_VERSION)
        w.string(cut_wire_text(str(getattr(self.device, "name", type(self.device).__name__))))
        flags = [flag for flag in p.DEVICE_FLAGS if getattr(self.device, flag, False) is True]
        w.u32(len(flags))
        for flag in flags:
            w.string(flag)
        return w, None

    def _version_string(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        value = self.device.get_version_string()
        return encode_answer(lambda w: w.string(cut_wire_text(as_str(value))), "get_version_string", value), None

    def _capabilities(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        caps = self.device.get_capabilities()
        return encode_answer(lambda w: p.write_capabilities(w, caps), "get_capabilities", caps), None

    def _extensions(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        exts = self.device.get_supported_extensions()
        return encode_answer(lambda w: p.write_extensions(w, list(exts)), "get_supported_extensions", exts), None

    def _read_model(self, r: Reader) -> Model:
        """The model at the reader, decoded once when the same bytes come again.

        The harness sends a model to ``get_supported_operations`` and then the same model to
        ``prepare_model`` (every validation mutation, every prepared model): the second decode was a
        quarter of the host's time in a validation sweep.  The encoding is deterministic and
        self-delimiting, so bytes equal to the last model's decode to an equal model with the same pool
        ids, and the pool table has not changed since (a model decoded before any later preamble, even
        on another reader thread, is never reused).  The driver gets the
        same object twice, as an in-process driver does: the HAL passes a model as a const input.
        """
        generation, start = self._pools_generation, r.pos
        last = self._last_model
        if last is not None and last[0] == generation:
            end = start + len(last[1])
            if r.data[start:end] == last[1]:
                r.pos = end
                return last[2]
        model = p.read_model(r, self._pool)
        self._last_model = (generation, bytes(r.data[start:r.pos]), model)
        return model

    def _supported_operations(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        model = self._read_model(r)
        r.end()
        flags = self.device.get_supported_operations(model)

        def write(w: Writer) -> None:
            values = list(flags)
            if len(values) > bounds.MAX_LIST_ITEMS:
                raise MalformedAnswer(f"get_supported_operations returned {len(values)} flags "
                                      f"(the protocol carries at most {bounds.MAX_LIST_ITEMS})")
            wrong = [flag for flag in values if not isinstance(flag, (bool, np.bool_))]
            if wrong:
                raise MalformedAnswer(f"get_supported_operations returned {short_repr(wrong[0])} "
                                      f"({type(wrong[0]).__name__}) as a flag; each flag must be a bool")
            w.u32(len(values))
            for flag in values:
                w.boolean(bool(flag))

        return encode_answer(write, "get_supported_operations", flags), None

    def _cache_files_needed(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        counts = self.device.get_number_of_cache_files_needed()

        def write(w: Writer) -> None:
            model_files, data_files = counts
            w.i64(model_files)
            w.i64(data_files)

        return encode_answer(write, "get_number_of_cache_files_needed", counts), None

    def _prepare_model(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        model = self._read_model(r)
        preference = r.i64()
        priority = r.i64()
        deadline = r.optional_i64()
        model_cache = r.fd_list()
        data_cache = r.fd_list()
        token = r.raw()
        r.end()
        prepared = self.device.prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
        return self._handle_reply(prepared, PreparedModel, "prepare_model"), None

    def _prepare_model_from_cache(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        deadline = r.optional_i64()
        model_cache = r.fd_list()
        data_cache = r.fd_list()
        token = r.raw()
        r.end()
        prepared = self.device.prepare_model_from_cache(deadline, model_cache, data_cache, token)
        return self._handle_reply(prepared, PreparedModel, "prepare_model_from_cache"), None

    def _handle_reply(self, obj: object, kind: type, call: str) -> Writer:
        if obj is not None and not isinstance(obj, kind):
            raise MalformedAnswer(f"{call} returned {type(obj).__name__}, not a {kind.__name__}")
        w = Writer()
        w.u32(self._register(obj))
        return w

    def _allocate(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        desc = p.read_buffer_desc(r)
        models: list[Any] = []
        for _ in range(r.count(4)):
            handle = r.u32()
            if handle == p.NULL_HANDLE:
                models.append(None)
            else:
                obj = self.objects.get(handle)
                models.append(obj if isinstance(obj, PreparedModel) else ForeignPreparedModel())
        input_roles = p.read_roles(r)
        output_roles = p.read_roles(r)
        r.end()
        answer = self.device.allocate(desc, models, input_roles, output_roles)
        try:
            buffer, token = answer
        except (TypeError, ValueError):
            raise MalformedAnswer(f"allocate returned {answer!r}, not (buffer, token)") from None
        w = self._handle_reply(buffer, Buffer, "allocate")
        return encode_answer(lambda out: out.i64(token), "allocate token", token, w), None

    def _execution_args(self, r: Reader) -> tuple[PreparedModel, Any]:
        prepared = self._object(r.u32(), PreparedModel)
        request = p.read_request(r, self._pool)
        return prepared, request

    def _execute(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        prepared, request = self._execution_args(r)
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        r.end()
        result = prepared.execute(request, measure_timing(measure), deadline, loop_timeout)
        return encode_result(result, "execute"), None

    def _execute_async(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, Callable[[], None]]:
        prepared, request = self._execution_args(r)
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        r.end()
        limits = self.limits
        if limits is not None:
            limits.begin_execution()
        try:
            future = prepared.execute_async(request, measure_timing(measure), deadline, loop_timeout)
        except BaseException:
            if limits is not None:
                limits.end_execution()
            raise
        if not isinstance(future, Future):
            if limits is not None:
                limits.end_execution()
            raise MalformedAnswer(f"execute_async returned {type(future).__name__}, not a Future")
        if limits is not None:
            future.add_done_callback(lambda done: limits.end_execution())
        # The completion goes out only after the launch reply (``after`` runs once it is sent).
        return Writer(), lambda: future.add_done_callback(lambda done: self._notify(seq, done))

    def _notify(self, seq: int, future: Future[ExecutionResult]) -> None:
        code = Method.EXECUTE_ASYNC | p.NOTIFY
        try:
            result = future.result()
            body = encode_result(result, "execute_async").buf
            status: int = ErrorStatus.NONE
        except DriverError as error:
            status, body, _, _ = driver_error_answer(error)
        except MemoryError:
            _out_of_memory()
        except BaseException as error:
            status, body = WireStatus.DRIVER_EXCEPTION, exception_body(error)
        self._send(seq, code, status, body)

    def _execute_fenced(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        prepared, request = self._execution_args(r)
        wait_for = [read_fence(r, taken) for _ in range(r.count(1))]
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        after_fence = r.optional_i64()
        r.end()
        answer = prepared.execute_fenced(request, wait_for, measure_timing(measure), deadline, loop_timeout,
                                         after_fence)
        try:
            fence, callback = answer
        except (TypeError, ValueError):
            raise MalformedAnswer(f"execute_fenced returned {answer!r}, not (fence, callback)") from None
        w = Writer()
        encode_answer(lambda out: write_fence(out, fence), "execute_fenced fence", fence, w)
        if callback is not None and not isinstance(callback, FencedExecutionCallback):
            raise MalformedAnswer(f"execute_fenced returned a {type(callback).__name__} as its callback")
        w.u32(self._register(callback))
        return w, None

    def _fenced_info(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        callback = self._object(r.u32(), FencedExecutionCallback)
        r.end()
        info = callback.get_execution_info()

        def write(w: Writer) -> None:
            status, launched, fenced = info
            w.i64(int(status))
            p.write_timing(w, launched)
            p.write_timing(w, fenced)

        return encode_answer(write, "get_execution_info", info), None

    def _copy_to(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        buffer = self._object(r.u32(), Buffer)
        destination = p.read_pool_ref(r, self._pool)
        r.end()
        buffer.copy_to(destination)
        return Writer(), None

    def _copy_from(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        buffer = self._object(r.u32(), Buffer)
        source = p.read_pool_ref(r, self._pool)
        dims = r.i64_list()
        r.end()
        buffer.copy_from(source, dims)
        return Writer(), None

    def _close(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        self.device.close()
        return Writer(), None


# ---------------------------------------------------------------------------
# Helpers


def _map_pool(name: str, size: int, fd: int) -> Memory:
    if fd < 0:
        return _unmapped_pool(name, size, fd)
    try:
        return from_fd(name, size, fd)
    except (OSError, ValueError, OverflowError) as error:
        _log(f"cannot map pool {name!r} of {size} bytes: {error}")
        return _unmapped_pool(name, size, fd)


def _close(fd: int) -> None:
    p.close_fds([fd])


def _exit_after_grace() -> None:
    """End the process with status 0 in ``STUCK_EXIT_GRACE`` seconds unless it has ended by then."""
    exit_later = threading.Timer(STUCK_EXIT_GRACE, os._exit, (EXIT_OK,))
    exit_later.daemon = True
    exit_later.start()


def _log(message: str) -> None:
    print(f"nnvts host[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _out_of_memory() -> None:
    """A MemoryError leaves the process untrustworthy: say so and end it (exit status 3)."""
    try:
        traceback.print_exc()
        _log("the driver ran out of memory; exiting")
    finally:
        os._exit(EXIT_OUT_OF_MEMORY)


# ---------------------------------------------------------------------------
# Entry point


def serve_socket(device: Device, sock: socket.socket, threads: int = DEFAULT_THREADS,
                 owns_process: bool = False) -> int:
    return DriverHost(device, sock, threads, owns_process).serve()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nnvts-host", description="Serve a Python nnvts driver over a socket.")
    parser.add_argument("--driver", required=True, help="installed driver name or module:attr")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="an inherited, connected Unix stream socket")
    where.add_argument("--socket", help="listen on this Unix socket path (every connection a client of one driver)")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="concurrent calls served")
    parser.add_argument("--memory-limit", type=int, default=0, help="RLIMIT_AS in bytes (0: unlimited)")
    args = parser.parse_args(argv)
    trace_to = os.environ.get(TRACEMALLOC_ENV)
    if trace_to:
        _trace_allocations(trace_to)
    profile_to = os.environ.get(PROFILE_ENV)
    if profile_to:
        return _profiled(profile_to, serve, args)
    return serve(args.driver, fd=args.fd, path=args.socket, threads=args.threads, memory_limit=args.memory_limit)


#: ``NNVTS_HOST_PROFILE=PREFIX``: run the host's serving thread under cProfile and write its statistics to
#: ``PREFIX.PID.prof`` when the host ends normally (the harness hangs up); a development aid for measuring
#: what the driver host costs (bench/README.md, issue 23).  Reader threads beyond the first are not profiled.
PROFILE_ENV = "NNVTS_HOST_PROFILE"


def _profiled(prefix: str, run: Callable[..., int], args: argparse.Namespace) -> int:
    import cProfile

    profile = cProfile.Profile(time.process_time)  # CPU time: waiting for the harness is not the host's cost
    try:
        return profile.runcall(run, args.driver, fd=args.fd, path=args.socket, threads=args.threads,
                               memory_limit=args.memory_limit)
    finally:
        profile.dump_stats(f"{prefix}.{os.getpid()}.prof")


#: ``NNVTS_HOST_TRACEMALLOC=PREFIX``: trace the host's Python allocations (tracemalloc, 8 frames) and write a
#: snapshot to ``PREFIX.PID.N.snap`` on each SIGUSR1 and when the host ends normally; diff two of them
#: (``tracemalloc.Snapshot.load``, ``compare_to``) to see what a long run accumulates (bench/README.md, issue 23).
#: A development aid: tracing makes the host several times slower.
TRACEMALLOC_ENV = "NNVTS_HOST_TRACEMALLOC"


def _trace_allocations(prefix: str) -> None:
    import atexit
    import tracemalloc

    tracemalloc.start(8)
    taken = itertools.count(1)

    def dump(*_: object) -> None:
        tracemalloc.take_snapshot().dump(f"{prefix}.{os.getpid()}.{next(taken)}.snap")

    signal.signal(signal.SIGUSR1, dump)
    atexit.register(dump)


def serve(driver: str, *, fd: int | None = None, path: str | None = None, threads: int = DEFAULT_THREADS,
          memory_limit: int = 0) -> int:
    """Load ``driver`` and serve it on an inherited descriptor or a listening path."""
    from vts.ipc.drivers import DriverNotFound, DriverRef

    if fd is not None:
        # Spawned by the harness, which owns the terminal: Ctrl-C is its to handle.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A driver that dies by a signal leaves its Python stack in the log the harness reports.
    faulthandler.enable()
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    try:
        device = DriverRef.of(driver).load()
    except DriverNotFound as error:
        _log(str(error))
        return EXIT_DRIVER_NOT_LOADED
    except MemoryError:
        _out_of_memory()
        return EXIT_OUT_OF_MEMORY
    if fd is not None:
        sock = socket.socket(fileno=fd)
        try:
            return serve_socket(device, sock, threads, owns_process=True)
        finally:
            sock.close()
    assert path is not None
    service = ServiceLimits()

    def serve_one(conn: socket.socket) -> None:
        # Every connection is one more client of the same driver instance, served at once
        # with tables of its own (pool ids, handles): the driver must keep clients apart.
        try:
            limits = service.open()
        except ProtocolError as error:
            _log(f"refused a client: {error}")
            conn.close()
            return
        serve_client(DriverHost, device, conn, threads, limits)

    with StopSignals() as stop:  # before the path appears: a manager may signal as soon as it sees it
        try:
            listener = listen_on(path)
        except OSError as error:
            _log(f"cannot listen on {path}: {error}")
            return EXIT_CANNOT_LISTEN
        _log(f"serving {driver} on {path}")
        try:
            signum = accept_until_stopped(listener, stop, serve_one)
            _log(f"stopped by {signal.Signals(signum).name}")
        finally:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    # Clients' calls may still be in the driver; a thread of the driver's own must not keep the process
    # alive past a stop (the interpreter waits for non-daemon threads before it exits).
    _exit_after_grace()
    return EXIT_OK

if __name__ == "__main__":
    sys.exit(main())
