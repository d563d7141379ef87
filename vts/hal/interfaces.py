"""The driver interfaces: ``IDevice``, ``IPreparedModel`` and ``IBuffer`` of NN HAL 1.3.

A driver implements ``Device`` (and returns ``PreparedModel`` and ``Buffer``
objects).  Every method reports failure by raising ``DriverError``; anything
else it raises, returns malformed, or does by crashing or hanging is a
conformance failure of the case that called it.

Where the HAL splits a call into a synchronous "launch" status and an
asynchronous callback, the Python rendering keeps the split only where the
suite tells them apart:

* ``prepare_model`` and ``prepare_model_from_cache`` are synchronous: a raised
  ``DriverError`` stands for both the launch and the callback status.
* ``execute_async`` raising ``DriverError`` is the launch status (the HAL
  requires INVALID_ARGUMENT there for a malformed request); an error that
  surfaces through the returned future is the callback status (a missed
  deadline must arrive that way).

Deadlines are absolute ``time.monotonic_ns()`` values (the HAL's steady
clock); ``None`` means no deadline.  Durations are nanoseconds.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Sequence
from concurrent.futures import Future

from vts.hal.enums import DeviceStatus, DeviceType, ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from vts.hal.errors import DriverError
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

CacheFiles = Sequence[int]
"""Cache "handles": one open file descriptor per cache file."""


class SyncFence:
    """A sync fence: signalled once, successfully or in error.

    The HAL's fences are kernel sync files; here an event the harness and an
    in-process driver share.  ``None`` in a ``wait_for`` list stands for the
    HAL's null handle (which a driver must refuse).
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._ok = True

    def signal(self, ok: bool = True) -> None:
        self._ok = ok
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True when signalled without error within ``timeout`` seconds."""
        return self._event.wait(timeout) and self._ok

    @property
    def signalled(self) -> bool:
        return self._event.is_set()

    @classmethod
    def signalled_fence(cls, ok: bool = True) -> SyncFence:
        fence = cls()
        fence.signal(ok)
        return fence


class FencedExecutionCallback(abc.ABC):
    @abc.abstractmethod
    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """(status, timing launched, timing fenced) of a fenced execution."""


class Buffer(abc.ABC):
    """A driver-allocated memory-domain buffer (``IBuffer``)."""

    @abc.abstractmethod
    def copy_to(self, destination: Memory) -> None: ...

    @abc.abstractmethod
    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None: ...


class PreparedModel(abc.ABC):
    """A compiled model (``IPreparedModel`` 1.3)."""

    @abc.abstractmethod
    def execute(
        self,
        request: Request,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
    ) -> ExecutionResult:
        """``executeSynchronously_1_3``."""

    def execute_async(
        self,
        request: Request,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
    ) -> Future[ExecutionResult]:
        """``execute_1_3``: validate now (raise = launch status), run later.

        The default runs the synchronous path on a thread; drivers with a
        real queue override it.
        """
        future: Future[ExecutionResult] = Future()

        def work() -> None:
            try:
                future.set_result(self.execute(request, measure, deadline, loop_timeout))
            except BaseException as error:
                future.set_exception(error)

        threading.Thread(target=work, daemon=True, name="nnvts-execute-async").start()
        return future

    def execute_fenced(
        self,
        request: Request,
        wait_for: Sequence[SyncFence | None],
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
        timeout_after_fence: int | None = None,
    ) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """``executeFenced``; drivers that support it override this."""
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "fenced execution not supported")


class Device(abc.ABC):
    """An accelerator (``IDevice`` 1.3)."""

    #: ``{vendor}-{device}``: the HAL service instance name.
    name: str

    def get_status(self) -> DeviceStatus:
        return DeviceStatus.AVAILABLE

    @abc.abstractmethod
    def get_type(self) -> DeviceType: ...

    @abc.abstractmethod
    def get_version_string(self) -> str: ...

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities: ...

    def get_supported_extensions(self) -> list[Extension]:
        return []

    @abc.abstractmethod
    def get_supported_operations(self, model: Model) -> list[bool]:
        """One flag per operation of ``model.main``; INVALID_ARGUMENT for a bad model."""

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """(model cache files, data cache files); (0, 0) means no caching."""
        return (0, 0)

    @abc.abstractmethod
    def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
        priority: Priority | int = Priority.MEDIUM,
        deadline: int | None = None,
        model_cache: CacheFiles = (),
        data_cache: CacheFiles = (),
        token: bytes = bytes(32),
    ) -> PreparedModel: ...

    def prepare_model_from_cache(
        self,
        deadline: int | None,
        model_cache: CacheFiles,
        data_cache: CacheFiles,
        token: bytes,
    ) -> PreparedModel:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "compilation caching not supported")

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[PreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[Buffer, int]:
        """(buffer, token > 0); GENERAL_FAILURE when memory domains are unsupported."""
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "memory domains not supported")

    def close(self) -> None:  # noqa: B027 - optional hook, deliberately a no-op by default
        """Release the driver (end of a run). Optional."""
