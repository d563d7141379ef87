"""The driver host's message kinds beyond the HAL's plain calls (docs/protocol.md §5.1).

Bursts (``BURST_*``), ``SET_CONCURRENCY`` (serve up to N calls at once on a
connection) and ``OPEN_CONNECTION`` (one more client of the *same* driver
instance, with pool ids and handles of its own).  Driver side only: the
harness side is ``vts.ipc.burst_proxy`` and ``vts.ipc.clients``.
"""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Any

from vts.hal.interfaces import Burst, Device, PreparedModel
from vts.hal.types import Request
from vts.ipc import protocol as p
from vts.ipc.answers import encode_result, measure_timing
from vts.ipc.burst_proxy import GIVEN, HELD
from vts.ipc.errors import ProtocolError
from vts.ipc.host_calls import Handler, OpenedWith
from vts.ipc.protocol import Method, Reader, Writer

if TYPE_CHECKING:
    from vts.ipc.driver_host import DriverHost
    from vts.ipc.host_limits import ConnectionLimits

#: The most calls a host serves at once on one connection (a bound on what a harness may ask).
MAX_CONCURRENCY = 64
#: Threads each additional connection's host serves calls with.
SIBLING_THREADS = 4


def serve_client(host_class: type[DriverHost], device: Device, sock: socket.socket, threads: int,
                 limits: ConnectionLimits | None = None, opened_with: OpenedWith | None = None) -> threading.Thread:
    """Serve one more client of ``device`` on ``sock`` from a thread (closes ``sock`` when it ends).

    ``host_class`` is the caller's ``DriverHost``: passed in, so this module needs the host only for its type.
    ``opened_with``: the options the shared driver was made with (what OPEN answers).
    """

    def run() -> None:
        try:
            host = host_class(device, sock, threads, limits=limits, opened_with=opened_with)
            host.handlers[Method.CLOSE] = _close_shared
            host.serve()
        finally:
            sock.close()
            if limits is not None:
                limits.close()  # also when the host could not be made

    thread = threading.Thread(target=run, daemon=True, name="nnvts-host-client")
    thread.start()
    return thread


def _close_shared(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
    """CLOSE from one of several clients ends that client only: the shared driver stays open."""
    r.end()
    return Writer(), None


def read_burst_execution(r: Reader, host: DriverHost) -> tuple[Burst, Request, list[int], Any, int | None, int | None]:
    """``BURST_EXECUTE``'s arguments (also the head of ``BURST_EXECUTE_WITH_CONFIG``'s body): (burst, request with
    its pools by slot, memory identifiers, measure, deadline, loop timeout)."""
    burst = host.object_of(r.u32(), Burst)
    plain = p.read_request(r, host.pool, host.aidl is not None)
    pools: list[Any] = []
    for _ in range(r.count(1)):
        tag = r.u8()
        if tag == HELD:
            pools.append(None)
        elif tag == GIVEN:
            pools.append(p.read_pool_ref(r, host.pool))
        else:
            raise ProtocolError(f"unknown burst pool tag {tag}")
    memory_ids = r.i64_list()
    measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
    request = Request(plain.inputs, plain.outputs, pools)
    return burst, request, memory_ids, measure_timing(measure), deadline, loop_timeout


def host_handlers(host: DriverHost) -> dict[int, Handler]:
    """The handlers of this module's kinds for one connection's host."""
    def configure(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        prepared = host.object_of(r.u32(), PreparedModel)
        r.end()
        burst = prepared.configure_execution_burst()
        return host.handle_reply(burst, Burst, "configure_execution_burst"), None

    def execute(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        burst, request, memory_ids, measure, deadline, loop_timeout = read_burst_execution(r, host)
        r.end()
        result = burst.execute(request, memory_ids, measure, deadline, loop_timeout)
        return encode_result(result, "burst execute"), None

    def free_memory(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        burst = host.object_of(r.u32(), Burst)
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
        limits = host.limits.sibling() if host.limits is not None else None  # ProtocolError beyond a bound
        ours, theirs = p.socket_pair()
        serve_client(type(host), host.device, ours, max(host.threads, SIBLING_THREADS), limits, host.opened_with)
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
