"""Reference drivers that get worse the longer they run: what ``nnvts soak`` must catch.

Each answers every execution correctly (so every other family passes them)
and misbehaves on the side: ``leaks_memory`` keeps a buffer per execution,
``leaks_fds`` opens a descriptor per execution, ``stutters`` sleeps on the
first execution of each prepared model, ``keeps_released`` never frees a
prepared model (nor its ballast) after the client released it.  Each
factory is a ``module:attr`` for ``--driver``.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import Future
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import PreparedModel
from vts.hal.types import ExecutionResult, Request

#: Bytes kept per execution by ``leaks_memory`` (written, so the pages are resident).
LEAK_BYTES = 256 * 1024
#: Seconds ``stutters`` sleeps on a prepared model's first execution.
STUTTER_SECONDS = 2.0
#: Bytes each prepared model of ``keeps_released`` holds (and never gives back).
BALLAST_BYTES = 4 << 20


class _Wrapped(PreparedModel):
    """Delegates to the reference prepared model; ``before_execute`` is the fault."""

    def __init__(self, inner: PreparedModel, owner: _SideEffectDevice) -> None:
        self.inner = inner
        self.owner = owner
        self.executions = 0

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        self.owner.before_execute(self)
        self.executions += 1
        return self.inner.execute(request, measure, deadline, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        self.owner.before_execute(self)
        self.executions += 1
        return self.inner.execute_async(request, measure, deadline, loop_timeout)


class _SideEffectDevice(ReferenceDevice):
    def prepare_model(self, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = _Wrapped(super().prepare_model(*args, **kwargs), self)
        self.after_prepare(prepared)
        return prepared

    def after_prepare(self, prepared: _Wrapped) -> None:
        pass

    def before_execute(self, prepared: _Wrapped) -> None:
        pass


class MemoryLeakingDevice(_SideEffectDevice):
    def __init__(self) -> None:
        super().__init__()
        self.kept: list[bytes] = []

    def before_execute(self, prepared: _Wrapped) -> None:
        self.kept.append(b"\x5a" * LEAK_BYTES)


class DescriptorLeakingDevice(_SideEffectDevice):
    def before_execute(self, prepared: _Wrapped) -> None:
        os.open(os.devnull, os.O_RDONLY)  # never closed


class StutteringDevice(_SideEffectDevice):
    def before_execute(self, prepared: _Wrapped) -> None:
        if prepared.executions == 0:
            time.sleep(STUTTER_SECONDS)


class HoardingDevice(_SideEffectDevice):
    """Keeps every prepared model it ever made, each with a ballast: releasing gives nothing back."""

    def __init__(self) -> None:
        super().__init__()
        self.hoard: list[tuple[_Wrapped, bytes]] = []

    def after_prepare(self, prepared: _Wrapped) -> None:
        self.hoard.append((prepared, b"\xa5" * BALLAST_BYTES))


def leaks_memory() -> MemoryLeakingDevice:
    return MemoryLeakingDevice()


def leaks_fds() -> DescriptorLeakingDevice:
    return DescriptorLeakingDevice()


def stutters() -> StutteringDevice:
    return StutteringDevice()


def keeps_released() -> HoardingDevice:
    return HoardingDevice()


class DriftingDevice(_SideEffectDevice):
    """Correct for 100 executions of a model, then every output byte it writes is off."""

    def before_execute(self, prepared: _Wrapped) -> None:
        pass

    def prepare_model(self, *args: Any, **kwargs: Any) -> PreparedModel:
        return _Drifting(super().prepare_model(*args, **kwargs).inner, self)


class _Drifting(_Wrapped):
    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        result = super().execute(request, measure, deadline, loop_timeout)
        if self.executions > 100:
            for argument in request.outputs:
                pool = request.pools[argument.location.pool_index]
                view = pool.buffer[argument.location.offset:argument.location.offset + argument.location.length]
                view[:1] = bytes([view[0] ^ 0xFF])
        return result


class DyingDevice(_SideEffectDevice):
    """Exits the process on the 51st execution (a crash in the middle of a soak)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def before_execute(self, prepared: _Wrapped) -> None:
        self.count += 1
        if self.count > 50:
            os._exit(9)


def drifts_after_100() -> DriftingDevice:
    return DriftingDevice()


def dies_after_50() -> DyingDevice:
    return DyingDevice()


class RaisingDevice(_SideEffectDevice):
    """Raises a non-HAL exception from the 51st execution on."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def before_execute(self, prepared: _Wrapped) -> None:
        self.count += 1
        if self.count > 50:
            raise KeyError("execution slot table")


def raises_after_50() -> RaisingDevice:
    return RaisingDevice()


class ParentTerminatingDevice(_SideEffectDevice):
    """Sends SIGTERM to its parent (the harness) on the 20th execution: how CI cancels a soak, on cue."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def before_execute(self, prepared: _Wrapped) -> None:
        self.count += 1
        if self.count == 20:
            os.kill(os.getppid(), signal.SIGTERM)  # reaches the harness only uncontained (NNVTS_NO_NAMESPACES)


def terminates_harness_after_20() -> ParentTerminatingDevice:
    return ParentTerminatingDevice()
