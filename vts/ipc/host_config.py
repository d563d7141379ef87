"""AIDL v4's ``*WithConfig`` calls over the protocol, driver side (docs/protocol.md §5.5).

Three message kinds, served only on a connection whose ``OPEN`` granted ``aidl:4``, each the body of an older
kind followed by the hints trailer (``vts.ipc.protocol.hints``):

* ``PREPARE_MODEL_WITH_CONFIG``: ``PREPARE_MODEL``'s body + compilation hints -> ``prepare_model_with_config``;
* ``EXECUTE_WITH_CONFIG``: ``EXECUTE``'s body + execution hints -> ``execute_synchronously_with_config``;
* ``EXECUTE_FENCED_WITH_CONFIG``: ``EXECUTE_FENCED``'s body + execution hints -> ``execute_fenced_with_config``;
* ``BURST_EXECUTE_WITH_CONFIG``: ``BURST_EXECUTE``'s body + execution hints -> the burst's ``execute_with_config``
  (AIDL v4 ``IBurst.executeSynchronouslyWithConfig``).

Each is answered as the older kind is.  What the hints may change (nothing, for a hint the driver does not
know) is the driver's to keep and the ``hints`` family's to judge; the host passes them on untouched.
Harness side: ``vts.ipc.config_proxy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.interfaces import PreparedModel
from vts.ipc import protocol as p
from vts.ipc.answers import encode_result, measure_timing
from vts.ipc.errors import ProtocolError
from vts.ipc.fences import read_fence
from vts.ipc.host_calls import Handler
from vts.ipc.host_sessions import read_burst_execution
from vts.ipc.protocol import Method, Reader, Writer

if TYPE_CHECKING:
    from vts.ipc.driver_host import DriverHost

__all__ = ["config_handlers"]


def config_handlers(host: DriverHost) -> dict[int, Handler]:
    """The handlers of the ``*_WITH_CONFIG`` kinds for one connection's host."""

    def granted(method: Method) -> None:
        if host.aidl is None or host.aidl.feature_level - 4 < p.WITH_CONFIG_AIDL:
            feature = p.aidl_feature(p.WITH_CONFIG_AIDL)
            raise ProtocolError(f"{method.name} needs the {feature} feature, not granted on this connection")

    def prepare(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.PREPARE_MODEL_WITH_CONFIG)
        model = host.decoded_model(r)  # the same bytes as the prepare_model before it: decoded once
        preference, priority, deadline = r.i64(), r.i64(), r.optional_i64()
        model_cache, data_cache, token = r.fd_list(), r.fd_list(), r.raw()
        hints, table = p.read_hints(r)
        r.end()
        config = PrepareModelConfig(preference, priority, deadline, model_cache, data_cache, token, hints, table)
        prepared = host.device.prepare_model_with_config(model, config)
        return host.handle_reply(prepared, PreparedModel, "prepare_model_with_config"), None

    def execute(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.EXECUTE_WITH_CONFIG)
        prepared, request = host.object_of(r.u32(), PreparedModel), p.read_request(r, host.pool, host.aidl is not None)
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        hints, table = p.read_hints(r)
        r.end()
        config = ExecutionConfig(measure_timing(measure), loop_timeout, hints, table)
        result = prepared.execute_synchronously_with_config(request, config, deadline)
        return encode_result(result, "execute_synchronously_with_config"), None

    def execute_fenced(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.EXECUTE_FENCED_WITH_CONFIG)
        prepared, request = host.object_of(r.u32(), PreparedModel), p.read_request(r, host.pool, host.aidl is not None)
        wait_for = [read_fence(r, taken) for _ in range(r.count(1))]
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        after_fence = r.optional_i64()
        hints, table = p.read_hints(r)
        r.end()
        config = ExecutionConfig(measure_timing(measure), loop_timeout, hints, table)
        answer = prepared.execute_fenced_with_config(request, wait_for, config, deadline, after_fence)
        return host.fenced_reply(answer, "execute_fenced_with_config"), None

    def burst_execute(r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        granted(Method.BURST_EXECUTE_WITH_CONFIG)
        burst, request, memory_ids, measure, deadline, loop_timeout = read_burst_execution(r, host)
        hints, table = p.read_hints(r)
        r.end()
        config = ExecutionConfig(measure, loop_timeout, hints, table)
        return encode_result(burst.execute_with_config(request, memory_ids, config, deadline),
                             "burst execute_with_config"), None

    return {
        Method.BURST_EXECUTE_WITH_CONFIG: burst_execute,
        Method.PREPARE_MODEL_WITH_CONFIG: prepare,
        Method.EXECUTE_WITH_CONFIG: execute,
        Method.EXECUTE_FENCED_WITH_CONFIG: execute_fenced,
    }
