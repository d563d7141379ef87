"""How an out-of-process driver is lost: it died, or it stopped answering.

These are not HAL statuses (a driver reports those with ``DriverError``):
they say the *process* serving the driver is gone or stuck, which the runner
turns into the CRASH and TIMEOUT verdicts and answers by restarting the
host.  They live in a module of their own, free of heavy imports, so the
runner can catch them without loading the protocol machinery.
"""

from __future__ import annotations


class DriverLost(Exception):
    """The driver host can no longer answer; the connection is unusable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DriverCrashed(DriverLost):
    """The driver process died (signal, exit, closed connection, out of memory).

    ``reason`` is what the runner reports, e.g. "killed by SIGSEGV during
    execute"; ``stderr_tail`` holds the last lines the process wrote, which
    often name the fault (a Python traceback, an abort message).
    """

    def __init__(self, reason: str, stderr_tail: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.stderr_tail = stderr_tail


class DriverTimeout(DriverLost):
    """A call got no answer within its time limit (the case deadline)."""


class ProtocolError(Exception):
    """A message that does not follow docs/protocol.md (torn frame, bad field, unknown code).

    From the harness side this is a fault of whoever sent the bad message:
    for an ``exec:`` driver that is the driver; between the Python client and
    host it is a harness bug.  Either way the byte stream can no longer be
    trusted, so the connection is dropped.
    """
