"""Proxies that make a driver host look like a local ``Device``.

``ProxyDevice``, ``ProxyPreparedModel``, ``ProxyBuffer`` and
``ProxyFencedCallback`` implement the ``vts.hal.interfaces`` ABCs, so
families cannot tell a remote driver from an in-process one: a HAL error
arrives as ``DriverError``, an exception the driver raised arrives as an
exception of the same type name (with the driver's traceback), a dead host
as ``DriverCrashed`` and a call past its time limit as ``DriverTimeout``.

After a successful execution the bytes of the output pools outside the
output regions are compared with a snapshot taken before it
(``OutputGuard``: ``DriverMisbehaved``, ``PoolTruncated``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from vts import bounds
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import (
    DeviceStatus,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    MeasureTiming,
    Priority,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import (
    Buffer,
    Burst,
    CacheFiles,
    Device,
    Execution,
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
from vts.ipc.burst_proxy import configure_burst
from vts.ipc.call_batch import CallBatch, batch_of
from vts.ipc.config_proxy import has_config_calls, with_hints
from vts.ipc.connection import Connection, PendingCall
from vts.ipc.driver_options import DriverOption
from vts.ipc.errors import DriverLost, EncodingError, RequestRejected
from vts.ipc.execution_proxy import create_execution, has_reusable_executions
from vts.ipc.fences import read_fence, write_fence
from vts.ipc.output_guard import OutputGuard
from vts.ipc.protocol import Method, Reader, Writer
from vts.ipc.remote_exceptions import RemoteDriverException
from vts.ipc.remote_future import decode_result

__all__ = ["ProxyBuffer", "ProxyDevice", "ProxyFencedCallback", "ProxyPreparedModel"]


def _decode_i64(r: Reader, taken: set[int]) -> int:
    return r.i64()


def _decode_flags(r: Reader, taken: set[int]) -> list[bool]:
    return [r.boolean() for _ in range(r.count(1, bounds.MAX_LIST_ITEMS))]


def _decode_handle(r: Reader, taken: set[int]) -> int:
    return r.u32()


class ProxyBuffer(Buffer):
    def __init__(self, connection: Connection, handle: int) -> None:
        self.connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def copy_to(self, destination: Memory) -> None:
        conn = self.connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            p.write_pool_ref(w, destination, conn.memory_id)

        conn.call(Method.BUFFER_COPY_TO, write)

    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None:
        conn = self.connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            p.write_pool_ref(w, source, conn.memory_id)
            w.i64_list(list(dimensions))

        conn.call(Method.BUFFER_COPY_FROM, write)


class ProxyFencedCallback(FencedExecutionCallback):
    def __init__(self, connection: Connection, handle: int) -> None:
        self.connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        status, launched, fenced = self.connection.call(
            Method.FENCED_GET_EXECUTION_INFO, lambda w: w.u32(self.handle),
            lambda r, taken: (r.i64(), p.read_timing(r), p.read_timing(r)))
        return ErrorStatus(status) if status in ErrorStatus._value2member_map_ else status, launched, fenced  # type: ignore[return-value]


class ProxyPreparedModel(PreparedModel):
    def __init__(self, connection: Connection, handle: int) -> None:
        self.connection = connection
        self.handle = handle
        weakref.finalize(self, connection.release_handle, handle)

    def _writer(self, request: Request, measure: MeasureTiming | int, deadline: int | None,
                loop_timeout: int | None) -> Callable[[Writer], None]:
        conn = self.connection

        def write(w: Writer) -> None:
            w.u32(self.handle)
            conn.write_request(w, request)
            w.i64(int(measure))
            w.optional_i64(deadline)
            w.optional_i64(loop_timeout)

        return write

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        guard = OutputGuard.of(request)
        result = self.connection.call(Method.EXECUTE, self._writer(request, measure, deadline, loop_timeout),
                                       decode_result)
        if guard is not None:
            guard.check()
        return result

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        """``EXECUTE_ASYNC``; for an AIDL driver that did not grant ``execute_async`` (AIDL has no asynchronous
        execute, docs/protocol.md §6), the base class's asynchronous path over ``execute``."""
        conn = self.connection
        if p.ASYNC_FEATURE not in conn.features and p.granted_aidl(conn.features) is not None:
            return super().execute_async(request, measure, deadline, loop_timeout)
        return conn.call_async(Method.EXECUTE_ASYNC, self._writer(request, measure, deadline, loop_timeout),
                               OutputGuard.of(request))

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        write = self._fenced_writer(request, wait_for, measure, deadline, loop_timeout, timeout_after_fence)
        return self._fenced_call(Method.EXECUTE_FENCED, write)

    def _fenced_writer(self, request: Request, wait_for: Sequence[SyncFence | None], measure: MeasureTiming | int,
                       deadline: int | None, loop_timeout: int | None,
                       timeout_after_fence: int | None) -> Callable[[Writer], None]:
        conn = self.connection

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

        return write

    def _fenced_call(self, method: Method, write: Callable[[Writer], None]
                     ) -> tuple[SyncFence | None, FencedExecutionCallback]:
        conn = self.connection
        fence, handle = conn.call(method, write, lambda r, taken: (read_fence(r, taken), r.u32()),
                                  fds_allowed=bounds.MAX_REPLY_FDS)
        callback = ProxyFencedCallback(conn, handle) if handle != p.NULL_HANDLE else None
        return fence, callback  # type: ignore[return-value]

    def execute_synchronously_with_config(self, request: Request, config: ExecutionConfig,
                                          deadline: int | None = None) -> ExecutionResult:
        """``EXECUTE_WITH_CONFIG`` when the driver granted ``aidl:4`` (docs/protocol.md §5.5), else the default."""
        if not has_config_calls(self.connection):
            return super().execute_synchronously_with_config(request, config, deadline)
        guard = OutputGuard.of(request)
        write = with_hints(self._writer(request, config.measure, deadline, config.loop_timeout),
                           config.execution_hints, config.extension_name_to_prefix)
        result = self.connection.call(Method.EXECUTE_WITH_CONFIG, write, decode_result)
        if guard is not None:
            guard.check()
        return result  # type: ignore[no-any-return]

    def execute_fenced_with_config(self, request: Request, wait_for: Sequence[SyncFence | None],
                                   config: ExecutionConfig, deadline: int | None = None,
                                   timeout_after_fence: int | None = None
                                   ) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """``EXECUTE_FENCED_WITH_CONFIG`` when the driver granted ``aidl:4``, else the default."""
        if not has_config_calls(self.connection):
            return super().execute_fenced_with_config(request, wait_for, config, deadline, timeout_after_fence)
        write = self._fenced_writer(request, wait_for, config.measure, deadline, config.loop_timeout,
                                    timeout_after_fence)
        return self._fenced_call(Method.EXECUTE_FENCED_WITH_CONFIG,
                                 with_hints(write, config.execution_hints, config.extension_name_to_prefix))

    def configure_execution_burst(self) -> Burst:
        return configure_burst(self.connection, self)

    def create_reusable_execution(self, request: Request, measure: MeasureTiming | int = MeasureTiming.NO,
                                  loop_timeout: int | None = None) -> Execution:
        """The driver's own reusable execution when it granted ``aidl:4`` (docs/protocol.md §5.5); else the base
        ``Execution`` over this model's executions (a driver below AIDL v4 has none: families skip it)."""
        if not has_reusable_executions(self.connection):
            return super().create_reusable_execution(request, measure, loop_timeout)
        return create_execution(self.connection, self, self.handle, request, measure, loop_timeout,
                                ProxyFencedCallback)


def _no_hints() -> bytes:
    w = Writer()
    p.write_hints(w, (), ())
    return bytes(w.buf)


#: The hints trailer of a ``*_WITH_CONFIG`` kind with no hint and no extension table.
_NO_HINTS = _no_hints()


def _write_preparation_tail(w: Writer, preference: ExecutionPreference | int, priority: Priority | int,
                            deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                            token: bytes) -> None:
    """``PREPARE_MODEL``'s arguments after the model (docs/protocol.md §5)."""
    w.i64(int(preference))
    w.i64(int(priority))
    w.optional_i64(deadline)
    w.fd_list(list(model_cache))
    w.fd_list(list(data_cache))
    w.raw(bytes(token))


class ProxyDevice(Device):
    """A driver served by a host process, seen through one connection."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.name = connection.device_name
        #: The options the driver accepts, from the opening exchange (None: any; ``()`` for a revision-1 driver).
        self.accepted_options: tuple[DriverOption, ...] | None = connection.accepted_options
        #: The AIDL version the driver granted (``aidl:N``, docs/protocol.md §5.3), else HAL 1.3: the rules it is
        #: judged by.
        self.hal_version = p.granted_aidl(connection.features) or HalVersion.V1_3
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

    def batch_ahead(self) -> CallBatch | None:
        """A batch of calls to send ahead in one message, or None when the driver did not grant ``batch``
        (``vts.ipc.call_batch``; nnvts, not HAL)."""
        return batch_of(self.connection)

    def get_supported_operations_ahead(self, model: Model, batch: CallBatch | None = None) -> PendingCall | None:
        """``get_supported_operations`` sent now (or added to ``batch``), its answer read later
        (``Connection.send_ahead``; nnvts, not HAL): ``result()`` returns or raises what the call would have."""
        write = lambda w: self.connection.write_model(w, model)  # noqa: E731
        if batch is not None:
            return batch.add(Method.GET_SUPPORTED_OPERATIONS, write, _decode_flags, model.pools, model=model)
        return self.connection.send_ahead(Method.GET_SUPPORTED_OPERATIONS, write, _decode_flags, model.pools)

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

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        """``PREPARE_MODEL_WITH_CONFIG`` when the driver granted ``aidl:4`` (docs/protocol.md §5.5), else the
        default (``prepare_model``)."""
        if not has_config_calls(self.connection):
            return super().prepare_model_with_config(model, config)
        write = self._preparation_writer(model, config.preference, config.priority, config.deadline,
                                         config.model_cache, config.data_cache, config.token)
        write = with_hints(write, config.compilation_hints, config.extension_name_to_prefix)
        return self._prepared(  # type: ignore[return-value]
            self.connection.call(Method.PREPARE_MODEL_WITH_CONFIG, write, _decode_handle))

    def prepare_model_ahead(self, model: Model, preference: ExecutionPreference | int,
                            priority: Priority | int, batch: CallBatch | None = None) -> PendingCall | None:
        """``prepare_model`` (no deadline, no cache) sent now (or added to ``batch``), its answer read later
        (``Connection.send_ahead``; nnvts, not HAL): ``result()`` returns the prepared model or raises what the
        call would have."""
        decode = lambda r, taken: self._prepared(_decode_handle(r, taken))  # noqa: E731
        if batch is not None and batch.extends_model(model):  # after its query: the model's bytes copied
            tail = Writer()
            _write_preparation_tail(tail, preference, priority, None, (), (), bytes(32))
            return batch.add_extending(Method.PREPARE_MODEL, bytes(tail.buf), decode)
        write = self._preparation_writer(model, preference, priority, None, (), (), bytes(32))
        if batch is not None:
            return batch.add(Method.PREPARE_MODEL, write, decode, model.pools)
        return self.connection.send_ahead(Method.PREPARE_MODEL, write, decode, model.pools)

    def prepare_model_with_config_ahead(self, model: Model, config: PrepareModelConfig,
                                        batch: CallBatch | None = None) -> PendingCall | None:
        """``prepare_model_with_config`` sent now (or added to ``batch``), its answer read later, as
        ``prepare_model_ahead``; None when it cannot go ahead, or the driver did not grant ``aidl:4`` (then the
        call falls back to ``prepare_model``, which the caller sends itself)."""
        if not has_config_calls(self.connection):
            return None
        write = self._preparation_writer(model, config.preference, config.priority, config.deadline,
                                         config.model_cache, config.data_cache, config.token)
        write = with_hints(write, config.compilation_hints, config.extension_name_to_prefix)
        decode = lambda r, taken: self._prepared(_decode_handle(r, taken))  # noqa: E731
        if batch is not None:
            return batch.add(Method.PREPARE_MODEL_WITH_CONFIG, write, decode, model.pools)
        return self.connection.send_ahead(Method.PREPARE_MODEL_WITH_CONFIG, write, decode, model.pools)

    def prepare_model_both_ways_ahead(self, model: Model, preference: ExecutionPreference | int,
                                      priority: Priority | int, batch: CallBatch
                                      ) -> tuple[PendingCall, PendingCall] | None:
        """``prepare_model`` and ``prepare_model_with_config`` of ``model`` with the same preference and priority and
        nothing else (no deadline, cache or hint: the validation sweep's pair, ValidateModel.cpp) added to
        ``batch``, the model encoded once: the second call's arguments are the first's and an empty hints trailer
        (docs/protocol.md §5.5).  None, and nothing added, when either cannot go or the driver did not grant
        ``aidl:4``."""
        if not has_config_calls(self.connection):
            return None
        mark = batch.mark()
        preparation = self.prepare_model_ahead(model, preference, priority, batch)
        decode = lambda r, taken: self._prepared(_decode_handle(r, taken))  # noqa: E731
        with_config = (batch.add_extending(Method.PREPARE_MODEL_WITH_CONFIG, _NO_HINTS, decode)
                       if preparation is not None else None)
        if preparation is None or with_config is None:
            batch.rollback(mark)
            return None
        return preparation, with_config

    def _preparation_writer(self, model: Model, preference: ExecutionPreference | int, priority: Priority | int,
                            deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                            token: bytes) -> Callable[[Writer], None]:
        def write(w: Writer) -> None:
            self.connection.write_model(w, model)
            _write_preparation_tail(w, preference, priority, deadline, model_cache, data_cache, token)

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
                elif isinstance(model, ProxyPreparedModel) and model.connection is conn:
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

