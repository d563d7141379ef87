"""Where the fuzzed calls go: a driver loaded in process, or one in a driver host process.

Both bound every call by ``timeout`` seconds and turn a hang or a crash into
a ``Finding`` the engine can shrink like any other: in process through
SIGALRM (which ends a call stuck in Python code; a segfault ends the run, so
fuzz an untrusted driver out of process), out of process through the
connection deadline, after which the host is killed and restarted for the
next input.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from vts.families.fuzz_replay import Finding
from vts.hal.interfaces import Device

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef


class Target(Protocol):
    timeout: float

    def device(self) -> Device: ...

    def call(self, fn: Callable[..., Any], *args: Any) -> Any: ...

    def close(self) -> None: ...


class _Hang(BaseException):
    """Raised by SIGALRM; a BaseException so a driver's ``except Exception`` cannot swallow it."""


def _on_alarm(signum: int, frame: object) -> None:
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # re-arm in case it lands where Python ignores it
    raise _Hang


class InProcessTarget:
    def __init__(self, device: Device, timeout: float) -> None:
        self._device = device
        self.timeout = timeout
        self._alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def device(self) -> Device:
        return self._device

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if not self._alarm:
            return fn(*args)
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            return fn(*args)
        except _Hang:
            raise Finding("hang", f"{_name(fn)} did not return within {self.timeout:g} s") from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a driver's failing close() is not the fuzzer's concern
            self._device.close()


class HostTarget:
    def __init__(self, driver: str, timeout: float, memory_limit: int = 0) -> None:
        from vts.ipc.process import HostProcess

        self.timeout = timeout
        self.host = HostProcess(driver, memory_limit=memory_limit)
        self.host.start()

    def device(self) -> Device:
        return self.host.device  # restarts a lost host

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        import time

        from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout

        connection = self.host.device.connection
        connection.deadline = time.monotonic() + self.timeout
        try:
            return fn(*args)
        except DriverTimeout:
            self.host.kill(DriverTimeout("fuzz call timed out"))
            raise Finding("hang", f"{_name(fn)} did not return within {self.timeout:g} s") from None
        except DriverCrashed as crash:
            self.host.kill()
            tail = "; ".join(crash.stderr_tail[-3:])
            raise Finding("crash", f"{_name(fn)}: driver crashed: {crash.reason}" + (f" ({tail})" if tail else "")) \
                from None
        except DriverLost as lost:
            self.host.kill()
            raise Finding("crash", f"{_name(fn)}: driver lost: {lost.reason}") from None
        finally:
            connection.deadline = None

    def close(self) -> None:
        self.host.stop()


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", "call").lstrip("_")


def open_target(driver: DriverRef, in_process: bool, timeout: float, memory_limit: int = 0) -> Target:
    """A target for ``driver`` (name, module:attr or exec:COMMAND)."""
    ref = driver
    if in_process:
        return InProcessTarget(ref.load(), timeout)
    if not ref.is_exec:
        ref.target  # noqa: B018 - an unknown driver is a usage error before a process starts
    return HostTarget(driver, timeout, memory_limit)
