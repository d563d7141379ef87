"""SIGTERM and SIGHUP end a run the way Ctrl-C does: reports written, then exit 128 + the signal.

CI cancels a job with SIGTERM (a closed terminal sends SIGHUP); by default
either kills the harness on the spot, leaving no JSON, JUnit or HTML report
and driver hosts behind.  ``interrupt_on_signals`` makes each of them raise
``Interrupted`` — a ``KeyboardInterrupt``, so every place that already
handles Ctrl-C (the run loop, the ``-j`` parent) stops dispatching, ends its
driver host(s) and finishes its reports.  Only the first signal interrupts:
a second one while reports are being written is noted and ignored, so the
reports are not torn (a job runner that will not wait sends SIGKILL anyway).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: Exit status of a run ended by each signal (the shell's 128 + signal number).
EXIT_SIGINT = 128 + signal.SIGINT  # 130
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143
EXIT_SIGHUP = 128 + getattr(signal, "SIGHUP", 1)  # 129

HANDLED = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by a handled signal; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_received: list[int] = []


def received() -> int | None:
    """The first signal that interrupted this process, or None."""
    return _received[0] if _received else None


def exit_status(default: int = signal.SIGINT) -> int:
    """128 + the signal that interrupted the run (a bare Ctrl-C: SIGINT)."""
    return 128 + (received() or default)


def _handler(signum: int, frame: FrameType | None) -> None:
    first = not _received
    _received.append(signum)
    if first and not _swallows_exceptions(frame):
        raise Interrupted(signum)


def _swallows_exceptions(frame: FrameType | None) -> bool:
    """Whether ``frame`` is the import system's module-lock callback, a weakref callback whose exceptions
    Python prints as "Exception ignored" and drops.  The signal is recorded all the same, and the run
    loops stop on ``received()`` once the case in progress ends."""
    return frame is not None and frame.f_code.co_name == "cb" and frame.f_code.co_filename.startswith(
        "<frozen importlib")


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` once (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()  # a signal that ended an earlier run in this process (tests, the pytest plugin) is past
    previous = {s: signal.signal(s, _handler) for s in _not_ignored()}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def install() -> None:
    """For a process that exists only to run (a ``-j`` worker): handled signals raise ``Interrupted``."""
    for s in _not_ignored():
        signal.signal(s, _handler)


def _not_ignored() -> list[int]:
    """The handled signals this process does not ignore: ``nohup`` ignores SIGHUP, and a shell
    ignores SIGINT for a background job; a run started that way must keep ignoring them."""
    return [s for s in HANDLED if signal.getsignal(s) is not signal.SIG_IGN]


def reset() -> None:
    """Forget received signals (tests, and a worker process reusing the module)."""
    _received.clear()
