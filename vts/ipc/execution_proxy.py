"""Reusable executions over the protocol, harness side (AIDL v4 ``IExecution``, docs/protocol.md §5.5).

With ``aidl:4`` granted, ``ProxyPreparedModel.create_reusable_execution`` sends ``REUSABLE_CREATE`` and
returns a ``ProxyExecution`` naming the driver's execution by handle; each run is one ``REUSABLE_EXECUTE``
or ``REUSABLE_EXECUTE_FENCED``.  The proxy keeps none of IExecution's promises itself (it does not mark an
execution in flight, it does not hold the request's contents): they are the driver's, and a driver that
breaks them must be caught out of process as in process.  It keeps the request's pools alive, so the
driver's mappings of them stay declared while the execution lives.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vts import bounds
from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import Execution, FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.types import ExecutionResult, Request
from vts.ipc import protocol as p
from vts.ipc.fences import read_fence, write_fence
from vts.ipc.output_guard import OutputGuard
from vts.ipc.protocol import Method, Writer
from vts.ipc.remote_future import decode_result

if TYPE_CHECKING:
    from vts.ipc.connection import Connection

__all__ = ["ProxyExecution", "create_execution", "has_reusable_executions"]


def has_reusable_executions(connection: Connection) -> bool:
    """Whether the driver granted ``aidl:4``: the ``REUSABLE_*`` kinds may be sent."""
    return p.aidl_feature(p.REUSABLE_EXECUTION_AIDL) in connection.features


class ProxyExecution(Execution):
    """A reusable execution living in the driver, named by handle."""

    def __init__(self, connection: Connection, handle: int, prepared: PreparedModel, request: Request,
                 measure: MeasureTiming | int, loop_timeout: int | None,
                 callback: type[FencedExecutionCallback]) -> None:
        # Not ``Execution.__init__``: its in-flight mark is the driver's to keep, and a measure value the HAL
        # does not define goes to the driver as it is (the driver must refuse it).
        self.prepared = prepared
        self.request = request
        self.measure = measure  # type: ignore[assignment]
        self.loop_timeout = loop_timeout
        self.connection = connection
        self.handle = handle
        self._callback = callback
        weakref.finalize(self, connection.release_handle, handle)

    def execute(self, deadline: int | None = None) -> ExecutionResult:
        """``executeSynchronously``; the bytes outside the outputs are checked as after ``EXECUTE``."""
        guard = OutputGuard.of(self.request)

        def write(w: Writer) -> None:
            w.u32(self.handle)
            w.optional_i64(deadline)

        result = self.connection.call(Method.REUSABLE_EXECUTE, write, decode_result)
        if guard is not None:
            guard.check()
        return result  # type: ignore[no-any-return]

    def execute_fenced(self, wait_for: Sequence[SyncFence | None], deadline: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """``executeFenced``: the driver's fence and callback, as ``EXECUTE_FENCED`` answers them."""
        conn = self.connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            w.u32(len(wait_for))
            for fence in wait_for:
                write_fence(w, fence)
            w.optional_i64(deadline)
            w.optional_i64(timeout_after_fence)

        fence, handle = conn.call(Method.REUSABLE_EXECUTE_FENCED, write,
                                  lambda r, taken: (read_fence(r, taken), r.u32()), fds_allowed=bounds.MAX_REPLY_FDS)
        callback = self._callback(conn, handle) if handle != p.NULL_HANDLE else None  # type: ignore[call-arg]
        return fence, callback  # type: ignore[return-value]


def create_execution(connection: Connection, prepared: PreparedModel, handle: int, request: Request,
                     measure: MeasureTiming | int, loop_timeout: int | None,
                     callback: type[FencedExecutionCallback]) -> Execution:
    """``REUSABLE_CREATE`` for the prepared model named ``handle``: the driver's execution, by proxy.

    ``callback`` is the proxy class of fenced-execution callbacks (passed in: it lives with the proxies).
    A driver that returns no execution (the null handle) without an error gets None back, for the family
    to judge.
    """

    def write(w: Writer) -> None:
        w.u32(handle)
        connection.write_request(w, request)
        w.i64(int(measure))
        w.optional_i64(loop_timeout)

    made = connection.call(Method.REUSABLE_CREATE, write, lambda r, taken: r.u32())
    if made == p.NULL_HANDLE:
        return None  # type: ignore[return-value]
    return ProxyExecution(connection, made, prepared, request, measure, loop_timeout, callback)
