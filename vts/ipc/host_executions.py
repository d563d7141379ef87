"""Reusable executions over the protocol, driver side (AIDL v4 ``IExecution``, docs/protocol.md §5.5).

Three message kinds, served only on a connection whose ``OPEN`` granted ``aidl:4``:

* ``REUSABLE_CREATE``: ``createReusableExecution`` of a prepared model (request, measure, loop timeout),
  answered with a handle to the driver's ``Execution`` (released like any handle);
* ``REUSABLE_EXECUTE``: its ``executeSynchronously`` (deadline) -> ``ExecutionResult``;
* ``REUSABLE_EXECUTE_FENCED``: its ``executeFenced`` (wait fences, deadline, timeout after fence), answered
  as ``EXECUTE_FENCED``.

The execution is the driver's object: the request it keeps names the pools as this host mapped them (the
harness keeps those pools declared while its proxy lives), and what IExecution promises (one execution at
a time, the request fixed at creation, inputs read as they are at each run) is the driver's to keep and
the family's to judge; the host adds nothing.  Harness side: ``vts.ipc.execution_proxy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts.hal.interfaces import Execution, PreparedModel
from vts.ipc import protocol as p
from vts.ipc.answers import encode_result, measure_timing
from vts.ipc.errors import ProtocolError
from vts.ipc.fences import read_fence
from vts.ipc.host_calls import Handler
from vts.ipc.protocol import Method, Reader, Writer

if TYPE_CHECKING:
    from vts.ipc.driver_host import DriverHost

__all__ = ["execution_handlers"]


def execution_handlers(host: DriverHost) -> dict[int, Handler]:
    """The handlers of the ``REUSABLE_*`` kinds for one connection's host."""

    def granted(method: Method) -> None:
        if host.aidl is None or host.aidl.feature_level - 4 < p.REUSABLE_EXECUTION_AIDL:
            feature = p.aidl_feature(p.REUSABLE_EXECUTION_AIDL)
            raise ProtocolError(f"{method.name} needs the {feature} feature, not granted on this connection")

    def create(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.REUSABLE_CREATE)
        prepared = host.object_of(r.u32(), PreparedModel)
        request = p.read_request(r, host.pool)
        measure, loop_timeout = r.i64(), r.optional_i64()
        r.end()
        execution = prepared.create_reusable_execution(request, measure_timing(measure), loop_timeout)
        return host.handle_reply(execution, Execution, "create_reusable_execution"), None

    def execute(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.REUSABLE_EXECUTE)
        execution = host.object_of(r.u32(), Execution)
        deadline = r.optional_i64()
        r.end()
        return encode_result(execution.execute(deadline), "reusable execute"), None

    def execute_fenced(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.REUSABLE_EXECUTE_FENCED)
        execution = host.object_of(r.u32(), Execution)
        wait_for = [read_fence(r, taken) for _ in range(r.count(1))]
        deadline, after_fence = r.optional_i64(), r.optional_i64()
        r.end()
        answer = execution.execute_fenced(wait_for, deadline, after_fence)
        return host.fenced_reply(answer, "reusable execute_fenced"), None

    return {
        Method.REUSABLE_CREATE: create,
        Method.REUSABLE_EXECUTE: execute,
        Method.REUSABLE_EXECUTE_FENCED: execute_fenced,
    }
