"""Bursts, concurrency and further clients over the protocol (docs/protocol.md §5.1).

Five message kinds beyond the HAL's plain calls, kept here so the framing
and the core handlers stay where they are:

* ``BURST_CONFIGURE`` / ``BURST_EXECUTE`` / ``BURST_FREE_MEMORY``: HAL 1.2
  bursts.  A burst is a handle like a prepared model (released through the
  preamble).  A burst request names each pool by an identifier (slot) and
  carries the memory only for slots the client gives now; a pool the client
  expects the burst to hold already travels as "held" (tag 0).
* ``SET_CONCURRENCY``: the harness asks the host to serve up to N calls at
  once on this connection (the concurrency family keeps several executions
  in flight on one prepared model); the reply is the previous setting.
* ``OPEN_CONNECTION``: the host opens one more connection to the *same*
  driver instance and hands the harness its end (one fd).  Each connection
  has its own pool ids and handles; the multi_client family checks that the
  driver keeps clients apart.

A driver that does not know a kind answers PROTOCOL_ERROR; the families then
say what they could not check (``Unsupported``) instead of failing.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import Burst, Device, PreparedModel
from vts.hal.types import ExecutionResult, Request
from vts.ipc import protocol as p
from vts.ipc.errors import ProtocolError, RequestRejected
from vts.ipc.protocol import Method, Reader, Writer

if TYPE_CHECKING:
    from vts.ipc.client import Connection, ProxyDevice
    from vts.ipc.host import DriverHost

#: BurstPool tags.
HELD = 0
GIVEN = 1
#: The most calls a host serves at once on one connection (a bound on what a harness may ask).
MAX_CONCURRENCY = 64
#: Threads each additional connection's host serves calls with.
SIBLING_THREADS = 4


class Unsupported(Exception):
    """The driver (host) does not implement a message kind this module sends."""


# ---------------------------------------------------------------------------
# Harness side


class ProxyBurst(Burst):
    """A burst living in the driver host, named by handle."""

    def __init__(self, connection: Connection, handle: int, prepared_model: PreparedModel) -> None:
        super().__init__(prepared_model)
        import weakref

        self._connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def execute(self, request: Request, memory_ids: Sequence[int], measure: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout: int | None = None) -> ExecutionResult:
        conn = self._connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            conn.write_request(w, Request(request.inputs, request.outputs, []))
            w.u32(len(request.pools))
            for pool in request.pools:
                if pool is None:
                    w.u8(HELD)
                else:
                    w.u8(GIVEN)
                    p.write_pool_ref(w, pool, conn.memory_id)
            w.i64_list([int(slot) for slot in memory_ids])
            w.i64(int(measure))
            w.optional_i64(deadline)
            w.optional_i64(loop_timeout)

        return conn.call(Method.BURST_EXECUTE, write, decode=lambda r, _taken: p.read_execution_result(r))

    def free_memory(self, slot: int) -> None:
        self._connection.call(Method.BURST_FREE_MEMORY, lambda w: (w.u32(self.handle), w.i64(int(slot))))


def configure_burst(connection: Connection, prepared: Any) -> Burst:
    """The driver's burst, or for a driver without ``BURST_CONFIGURE`` the base ``Burst`` over its
    executions (Android's runtime falls back to plain executions the same way)."""
    try:
        handle = connection.call(Method.BURST_CONFIGURE, lambda w: w.u32(prepared.handle),
                                 decode=lambda r, _taken: r.u32())
    except (ProtocolError, RequestRejected):
        return Burst(prepared)
    return ProxyBurst(connection, handle, prepared) if handle != p.NULL_HANDLE else None  # type: ignore[return-value]


def set_concurrency(device: Device, calls: int) -> int | None:
    """Ask an out-of-process driver to serve ``calls`` calls at once; the previous setting.

    None in process (the harness's threads call the driver directly) and
    for a driver that does not know the message (it then serves calls as
    it always does; the families still run, with less overlap).
    """
    from vts.ipc.client import ProxyDevice

    if not isinstance(device, ProxyDevice):
        return None
    try:
        return device.connection.call(Method.SET_CONCURRENCY, lambda w: w.u32(min(max(calls, 1), MAX_CONCURRENCY)),
                                      decode=lambda r, _taken: r.u32())
    except (ProtocolError, RequestRejected):
        return None


def open_client(device: Device) -> ProxyDevice:
    """One more client of ``device``'s driver instance, with tables of its own.

    Out of process the host opens the connection (``OPEN_CONNECTION``); in
    process the harness serves the device itself, one ``DriverHost`` per
    client on a thread, as a HAL service does for its clients.  Close the
    client with ``close_client``.
    """
    from vts.ipc.client import ProxyDevice, connect

    if isinstance(device, ProxyDevice):
        parent = device.connection
        try:
            fd = parent.call(Method.OPEN_CONNECTION, decode=_take_fd, fds_allowed=1)
        except (ProtocolError, RequestRejected) as error:
            raise Unsupported(f"the driver does not open further connections ({error})") from None
        client = connect(socket.socket(fileno=fd), parent.describe_death, timeout=None)
        client.connection.deadline = parent.deadline
        return client
    ours, theirs = p.socket_pair()
    serve_client(device, theirs, SIBLING_THREADS)
    return connect(ours, timeout=30.0)


def _take_fd(r: Reader, taken: set[int]) -> int:
    """Decode one descriptor and keep it (the client closes every descriptor a decoder did not take)."""
    fd = r.fd()
    taken.add(fd)
    return fd


def declared_pool_id(connection: Connection, pool: Any) -> int:
    """The id under which ``connection`` declared ``pool`` (for tests of isolation between connections)."""
    entry = connection._pool_ids.get(pool)
    if entry is None:
        raise KeyError("the pool was never declared on this connection")
    return entry[0]


def close_client(client: ProxyDevice) -> None:
    """Hang up (without CLOSE: the driver instance is shared and stays open)."""
    client.connection.close()


def serve_client(device: Device, sock: socket.socket, threads: int) -> threading.Thread:
    """Serve one more client of ``device`` on ``sock`` from a thread (closes ``sock`` when it ends)."""
    from vts.ipc.host import DriverHost

    def run() -> None:
        try:
            host = DriverHost(device, sock, threads)
            host._handlers[Method.CLOSE] = _close_shared
            host.serve()
        finally:
            sock.close()

    thread = threading.Thread(target=run, daemon=True, name="nnvts-host-client")
    thread.start()
    return thread


def _close_shared(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
    """CLOSE from one of several clients ends that client only: the shared driver stays open."""
    r.end()
    return Writer(), None


# ---------------------------------------------------------------------------
# Driver side


Handler = Callable[[Reader, int, set[int]], tuple[Writer, Callable[[], None] | None]]


def host_handlers(host: DriverHost) -> dict[int, Handler]:
    """The handlers of this module's kinds for one connection's host."""
    from vts.ipc import host as h

    def configure(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        prepared = host._object(r.u32(), PreparedModel)
        r.end()
        burst = prepared.configure_execution_burst()
        return host._handle_reply(burst, Burst, "configure_execution_burst"), None

    def execute(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        burst = host._object(r.u32(), Burst)
        plain = p.read_request(r, host._pool)
        pools: list[Any] = []
        for _ in range(r.count(1)):
            tag = r.u8()
            if tag == HELD:
                pools.append(None)
            elif tag == GIVEN:
                pools.append(p.read_pool_ref(r, host._pool))
            else:
                raise ProtocolError(f"unknown burst pool tag {tag}")
        memory_ids = r.i64_list()
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        r.end()
        result = burst.execute(Request(plain.inputs, plain.outputs, pools), memory_ids, h._measure(measure),
                               deadline, loop_timeout)
        return h._encode_result(result, "burst execute"), None

    def free_memory(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        burst = host._object(r.u32(), Burst)
        slot = r.i64()
        r.end()
        burst.free_memory(slot)
        return Writer(), None

    def concurrency(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        calls = r.u32()
        r.end()
        if not 1 <= calls <= MAX_CONCURRENCY:
            raise ProtocolError(f"concurrency {calls} outside [1, {MAX_CONCURRENCY}]")
        w = Writer()
        w.u32(host.set_threads(calls))
        return w, None

    def open_connection(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        ours, theirs = p.socket_pair()
        serve_client(host.device, ours, max(host.threads, SIBLING_THREADS))
        w = Writer()
        w.fd(theirs.detach())
        w.close_after_send.extend(w.fds)
        return w, None

    return {
        Method.BURST_CONFIGURE: configure,
        Method.BURST_EXECUTE: execute,
        Method.BURST_FREE_MEMORY: free_memory,
        Method.SET_CONCURRENCY: concurrency,
        Method.OPEN_CONNECTION: open_connection,
    }
