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


class ProtocolViolation(DriverCrashed):
    """The driver broke the protocol (docs/protocol.md §8.1): an undecodable or oversize message, a
    message of the wrong kind, a field of the wrong type, descriptors nobody asked for.

    The byte stream can no longer be trusted, so the connection is dropped and
    the host restarted, as after a crash; the verdict is ``crash`` and
    ``reason`` says what was wrong.
    """


class EncodingError(Exception):
    """The harness could not encode a request (a value outside the wire's range, an object that is
    not a pool).  A harness or spec problem, never the driver's: verdict ``error``."""


class RequestRejected(Exception):
    """The driver answered PROTOCOL_ERROR: it could not decode a request the harness sent.

    The reply itself is well formed, so this is no protocol violation; the
    driver failed to understand a valid request: verdict ``failed``.
    """


class DriverMisbehaved(Exception):
    """A well-formed answer after which the harness found the driver broke a HAL rule on shared state
    (it wrote outside its output regions): verdict ``failed`` with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
