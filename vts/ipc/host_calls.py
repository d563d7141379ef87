"""The HAL's calls as the driver host serves them: decode the request, call the driver, encode its answer.

One handler per method of docs/protocol.md §5 (``HELLO`` to ``CLOSE``, and ``OPEN``).
Whatever the driver returns is checked before it is encoded
(``vts.ipc.answers``): an answer the protocol cannot carry is the driver's
fault (``MalformedAnswer``), never a torn reply.  ``HalCalls`` is a base of
``DriverHost``, which owns the tables and the socket these handlers use
through ``pool``, ``object_of``, ``register`` and ``send``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from vts import bounds
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer, Device, FencedExecutionCallback, PreparedModel
from vts.hal.memory import Memory
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
)
from vts.ipc.driver_options import DriverOption
from vts.ipc.errors import ProtocolError
from vts.ipc.fences import read_fence, write_fence
from vts.ipc.host_exit import out_of_memory
from vts.ipc.host_interface import open_interface
from vts.ipc.host_limits import ConnectionLimits
from vts.ipc.protocol import Method, Reader, WireStatus, Writer

__all__ = ["ForeignPreparedModel", "HalCalls", "Handler", "OpenedWith"]

#: A request handler: (arguments, sequence number, descriptors it keeps) -> (reply body, what to do once sent).
Handler = Callable[[Reader, int, set[int]], tuple[Writer, Callable[[], None] | None]]


class ForeignPreparedModel(PreparedModel):
    """Stands for a prepared model the harness could not name (not from this driver).

    ``allocate`` must refuse it (INVALID_ARGUMENT); a driver that instead
    calls it gets GENERAL_FAILURE, as a remote object that is not its own.
    """

    def execute(self, request: Any, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "not a prepared model of this driver")


@dataclass(frozen=True)
class OpenedWith:
    """The options the host's driver was made with, and those its factory accepts (None: any)."""

    options: tuple[tuple[str, str], ...] = ()
    accepted: tuple[DriverOption, ...] | None = ()


def _listed(options: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{key}={value}" for key, value in options) or "(none)"


class HalCalls:
    """The handlers of the HAL's methods for one connection to ``device``."""

    #: Set by the host: what this connection may hold (None: a spawned host), its handles' objects.
    limits: ConnectionLimits | None
    objects: dict[int, object]
    #: Bumped by the host at every preamble that may change the pool table (see ``decoded_model``).
    pools_generation: int

    def __init__(self, device: Device, opened_with: OpenedWith | None = None) -> None:
        self.device = device
        #: What OPEN answers (docs/protocol.md §5.3).
        self.opened_with = opened_with or OpenedWith()
        #: The last model read: the pool generation it was decoded in, its bytes, the model.
        self._last_model: tuple[int, bytes, Model] | None = None
        #: The AIDL interface this connection's OPEN granted (``aidl:N``; None: HAL 1.3, docs/protocol.md §5.3).
        self.aidl: HalVersion | None = None

    def pool(self, pool_id: int) -> Memory:
        """The pool declared under ``pool_id`` (``ProtocolError`` if none)."""
        raise NotImplementedError

    def track_execution(self, future: Future[ExecutionResult]) -> None:
        """An asynchronous execution launched for this connection (the host cancels it when the peer goes)."""

    def object_of(self, handle: int, kind: type) -> Any:
        """The live ``kind`` object named by ``handle`` (``ProtocolError`` if none)."""
        raise NotImplementedError

    def register(self, obj: object | None) -> int:
        """A new handle for ``obj`` (``NULL_HANDLE`` for None)."""
        raise NotImplementedError

    def send(self, seq: int, code: int, status: int, body: bytes | bytearray, fds: Sequence[int] = ()) -> None:
        """Send one message to the harness."""
        raise NotImplementedError

    def hal_handlers(self) -> dict[int, Handler]:
        """Method code -> handler, for every HAL method."""
        return {
            Method.HELLO: self._hello,
            Method.GET_STATUS: lambda r, s, t: (r.end(), int_reply(self.device.get_status()))[1],
            Method.GET_TYPE: lambda r, s, t: (r.end(), int_reply(self.device.get_type()))[1],
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
            Method.OPEN: self._open,
        }

    def _hello(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        version = r.u32()
        r.string()  # client name: informative only
        r.end()
        if version != p.PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {version} requested; this host speaks {p.PROTOCOL_VERSION}")
        w = Writer()
        w.u32(p.PROTOCOL_VERSION)
        w.string(cut_wire_text(str(getattr(self.device, "name", type(self.device).__name__))))
        flags = self.hello_flags()
        w.u32(len(flags))
        for flag in flags:
            w.string(flag)
        return w, None

    def hello_flags(self) -> list[str]:
        """HELLO's reply flags: the device flags set to true, and the highest protocol revision spoken."""
        flags = [flag for flag in p.DEVICE_FLAGS if getattr(self.device, flag, False) is True]
        return [*flags, p.revision_flag()]

    def features(self) -> tuple[str, ...]:
        """The features this host grants when asked in OPEN (revision 3): ``batch`` and ``batch_config`` (it
        serves every kind of ``BATCH_METHODS`` in a batch), and ``execute_async`` (it serves ``EXECUTE_ASYNC``
        whatever interface its driver speaks)."""
        return (p.BATCH_FEATURE, *p.BATCH_EXTRA_FEATURES, p.ASYNC_FEATURE)

    def grant_aidl(self, asked: Sequence[str]) -> str | None:
        """The ``aidl:N`` feature granted of those ``asked`` in OPEN (revision 3), None for HAL 1.3; the device
        speaks it from now on (``vts.ipc.host_interface``)."""
        return open_interface(self.device, asked)

    def _open(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        """OPEN (revision 2): the driver was made with its options when the host started; they must match."""
        revision, options, features = p.read_open_request(r)
        r.end()
        if not p.OPTIONS_REVISION <= revision <= p.PROTOCOL_REVISION:
            raise ProtocolError(f"OPEN for revision {revision}; this host speaks revisions up to {p.PROTOCOL_REVISION}")
        opened = self.opened_with
        if tuple(sorted(options)) != opened.options:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                              f"this driver host made its driver with options {_listed(opened.options)}, not "
                              f"{_listed(options)} (a Python driver's options are given when its host starts)")
        w = Writer()
        name = cut_wire_text(str(getattr(self.device, "name", type(self.device).__name__)))
        granted = tuple(feature for feature in features if feature in self.features())
        aidl = self.grant_aidl(features)
        self.aidl = p.granted_aidl((aidl,)) if aidl is not None else None
        granted += (aidl,) if aidl is not None else ()
        p.write_open_reply(w, p.OpenReply(revision, name, opened.accepted, granted))
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

    def decoded_model(self, r: Reader) -> Model:
        """The model at the reader, decoded once when the same bytes come again.

        The harness sends a model to ``get_supported_operations`` and then the same model to
        ``prepare_model`` (every validation mutation, every prepared model), and to a driver of AIDL v4
        ``prepare_model_with_config`` after them: each decode after the first was a quarter of the host's
        time in a validation sweep.  The encoding is deterministic and
        self-delimiting, so bytes equal to the last model's decode to an equal model with the same pool
        ids, and the pool table has not changed since (a model decoded before any later preamble, even
        on another reader thread, is never reused).  The driver gets the
        same object twice, as an in-process driver does: the HAL passes a model as a const input.
        """
        generation, start = self.pools_generation, r.pos
        last = self._last_model
        if last is not None and last[0] == generation:
            end = start + len(last[1])
            if r.data[start:end] == last[1]:
                r.pos = end
                return last[2]
        model = p.read_model(r, self.pool)
        self._last_model = (generation, bytes(r.data[start:r.pos]), model)
        return model

    def _supported_operations(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        model = self.decoded_model(r)
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
        model = self.decoded_model(r)
        preference = r.i64()
        priority = r.i64()
        deadline = r.optional_i64()
        model_cache = r.fd_list()
        data_cache = r.fd_list()
        token = r.raw()
        r.end()
        prepared = self.device.prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
        return self.handle_reply(prepared, PreparedModel, "prepare_model"), None

    def _prepare_model_from_cache(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        deadline = r.optional_i64()
        model_cache = r.fd_list()
        data_cache = r.fd_list()
        token = r.raw()
        r.end()
        prepared = self.device.prepare_model_from_cache(deadline, model_cache, data_cache, token)
        return self.handle_reply(prepared, PreparedModel, "prepare_model_from_cache"), None

    def handle_reply(self, obj: object, kind: type, call: str) -> Writer:
        """A reply naming ``obj`` (a ``kind`` the driver returned, or None) by a new handle."""
        if obj is not None and not isinstance(obj, kind):
            raise MalformedAnswer(f"{call} returned {type(obj).__name__}, not a {kind.__name__}")
        w = Writer()
        w.u32(self.register(obj))
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
        w = self.handle_reply(buffer, Buffer, "allocate")
        return encode_answer(lambda out: out.i64(token), "allocate token", token, w), None

    def _execution_args(self, r: Reader) -> tuple[PreparedModel, Any]:
        prepared = self.object_of(r.u32(), PreparedModel)
        request = p.read_request(r, self.pool, self.aidl is not None)
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
        self.track_execution(future)
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
            out_of_memory()
        except BaseException as error:
            status, body = WireStatus.DRIVER_EXCEPTION, exception_body(error)
        self.send(seq, code, status, body)

    def _execute_fenced(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        prepared, request = self._execution_args(r)
        wait_for = [read_fence(r, taken) for _ in range(r.count(1))]
        measure, deadline, loop_timeout = r.i64(), r.optional_i64(), r.optional_i64()
        after_fence = r.optional_i64()
        r.end()
        answer = prepared.execute_fenced(request, wait_for, measure_timing(measure), deadline, loop_timeout,
                                         after_fence)
        return self.fenced_reply(answer, "execute_fenced"), None

    def fenced_reply(self, answer: object, call: str) -> Writer:
        """The reply to a fenced execution: its ``(fence, callback)`` answer, the callback named by a new handle."""
        try:
            fence, callback = answer  # type: ignore[misc]
        except (TypeError, ValueError):
            raise MalformedAnswer(f"{call} returned {answer!r}, not (fence, callback)") from None
        w = Writer()
        encode_answer(lambda out: write_fence(out, fence), f"{call} fence", fence, w)
        if callback is not None and not isinstance(callback, FencedExecutionCallback):
            raise MalformedAnswer(f"{call} returned a {type(callback).__name__} as its callback")
        w.u32(self.register(callback))
        return w

    def _fenced_info(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        callback = self.object_of(r.u32(), FencedExecutionCallback)
        r.end()
        info = callback.get_execution_info()

        def write(w: Writer) -> None:
            status, launched, fenced = info
            w.i64(int(status))
            p.write_timing(w, launched)
            p.write_timing(w, fenced)

        return encode_answer(write, "get_execution_info", info), None

    def _copy_to(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        buffer = self.object_of(r.u32(), Buffer)
        destination = p.read_pool_ref(r, self.pool)
        r.end()
        buffer.copy_to(destination)
        return Writer(), None

    def _copy_from(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        buffer = self.object_of(r.u32(), Buffer)
        source = p.read_pool_ref(r, self.pool)
        dims = r.i64_list()
        r.end()
        buffer.copy_from(source, dims)
        return Writer(), None

    def _close(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        r.end()
        self.device.close()
        return Writer(), None

