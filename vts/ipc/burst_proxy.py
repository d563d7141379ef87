"""Bursts over the protocol, harness side: a burst living in the driver host (docs/protocol.md §5.1).

``BURST_CONFIGURE`` / ``BURST_EXECUTE`` / ``BURST_FREE_MEMORY``: HAL 1.2
bursts.  A burst is a handle like a prepared model (released through the
preamble).  A burst request names each pool by an identifier (slot) and
carries the memory only for slots the client gives now; a pool the client
expects the burst to hold already travels as "held" (tag 0).

Memory identifiers travel as ``i64`` and pools as ``PoolRef`` (a driver-buffer token included), so the
driver sees exactly what the family sends: AIDL's token -1 and driver-buffer pools reach an AIDL driver
(``aidl:N`` granted) as they are, and the driver judges them by its version's rules; under AIDL,
``BURST_FREE_MEMORY`` of a token below -1 comes back INVALID_ARGUMENT (``releaseMemoryResource``) like
any refused call.  Where the driver has no bursts of its own the harness stands in with the base ``Burst``
and the rules of the version granted (``AidlFallbackBurst`` for AIDL, ``vts.hal.aidl_burst``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from vts.hal.config import ExecutionConfig
from vts.hal.enums import HalVersion, MeasureTiming
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.types import ExecutionResult, Request
from vts.ipc import protocol as p
from vts.ipc.config_proxy import has_config_calls, with_hints
from vts.ipc.errors import ProtocolError, RequestRejected
from vts.ipc.protocol import Method, Writer

if TYPE_CHECKING:
    from vts.ipc.connection import Connection

#: BurstPool tags.
HELD = 0
GIVEN = 1


class ProxyBurst(Burst):
    """A burst living in the driver host, named by handle."""

    def __init__(self, connection: Connection, handle: int, prepared_model: PreparedModel) -> None:
        super().__init__(prepared_model, p.granted_aidl(connection.features) or HalVersion.V1_3)
        self._connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def execute(self, request: Request, memory_ids: Sequence[int], measure: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout: int | None = None) -> ExecutionResult:
        write = self._writer(request, memory_ids, measure, deadline, loop_timeout)
        return self._connection.call(Method.BURST_EXECUTE, write, decode=lambda r, _taken: p.read_execution_result(r))

    def execute_with_config(self, request: Request, memory_ids: Sequence[int], config: ExecutionConfig,
                            deadline: int | None = None) -> ExecutionResult:
        """``BURST_EXECUTE_WITH_CONFIG`` when the driver granted ``aidl:4`` (docs/protocol.md §5.5), else the
        default."""
        if not has_config_calls(self._connection):
            return super().execute_with_config(request, memory_ids, config, deadline)
        write = with_hints(self._writer(request, memory_ids, config.measure, deadline, config.loop_timeout),
                           config.execution_hints, config.extension_name_to_prefix)
        return self._connection.call(Method.BURST_EXECUTE_WITH_CONFIG, write,
                                     decode=lambda r, _taken: p.read_execution_result(r))

    def _writer(self, request: Request, memory_ids: Sequence[int], measure: MeasureTiming | int,
                deadline: int | None, loop_timeout: int | None) -> Callable[[Writer], None]:
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

        return write

    def free_memory(self, slot: int) -> None:
        self._connection.call(Method.BURST_FREE_MEMORY, lambda w: (w.u32(self.handle), w.i64(int(slot))))


class AidlFallbackBurst(Burst):
    """The base ``Burst`` by AIDL's rules (IBurst.aidl, ``vts.hal.aidl_burst``), for an AIDL driver without
    bursts of its own: a pool given with token -1 has no identity and serves this execution only, a token
    >= 0 names its memory until released, a driver-managed buffer is a pool like any other; token -2 and
    lower, and a token count other than the pool count, are INVALID_ARGUMENT.  The base ``Burst`` does it
    all once the version is AIDL's: this class only names the version the driver granted.
    """

    def __init__(self, prepared_model: PreparedModel, hal_version: HalVersion = HalVersion.FL8) -> None:
        if not hal_version.is_aidl:
            raise ValueError(f"AidlFallbackBurst needs an AIDL version, not {hal_version}")
        super().__init__(prepared_model, hal_version)


def configure_burst(connection: Connection, prepared: Any) -> Burst:
    """The driver's burst, or for a driver without ``BURST_CONFIGURE`` the base ``Burst`` over its
    executions (Android's runtime falls back to plain executions the same way), by the rules of the AIDL
    version the driver granted (``AidlFallbackBurst``) or HAL 1.3's."""
    try:
        handle = connection.call(Method.BURST_CONFIGURE, lambda w: w.u32(prepared.handle),
                                 decode=lambda r, _taken: r.u32())
    except (ProtocolError, RequestRejected):
        version = p.granted_aidl(connection.features)
        return AidlFallbackBurst(prepared, version) if version is not None else Burst(prepared, HalVersion.V1_3)
    return ProxyBurst(connection, handle, prepared) if handle != p.NULL_HANDLE else None  # type: ignore[return-value]
