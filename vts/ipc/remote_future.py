"""The future of an asynchronous execution in the driver host (``EXECUTE_ASYNC``, docs/protocol.md §6).

Its ``result()`` reads the socket itself instead of waiting for another
thread to (a hand-off costs more than the call); the completion message sets
it, checked by the output guard like a synchronous execution's answer.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from vts.hal.types import ExecutionResult
from vts.ipc import protocol as p
from vts.ipc.protocol import Reader

if TYPE_CHECKING:
    from vts.ipc.connection import Connection
    from vts.ipc.output_guard import OutputGuard

__all__ = ["RemoteFuture", "decode_result"]


def decode_result(r: Reader, taken: set[int]) -> ExecutionResult:
    """The ``ExecutionResult`` of an execution's answer (a decoder for ``Connection.call``)."""
    return p.read_execution_result(r)


class RemoteFuture(Future[ExecutionResult]):
    """A future whose ``result()`` reads the socket itself instead of waiting for another thread."""

    def __init__(self, connection: Connection, what: str, guard: OutputGuard | None = None) -> None:
        super().__init__()
        self._connection = connection
        #: The call it completes ("execute_async"), named by crash and timeout reasons.
        self.what = what
        self._guard = guard

    def _pump(self, timeout: float | None) -> None:
        if self.done():
            return
        caller = None if timeout is None else time.monotonic() + timeout
        self._connection.wait(self.done, self.what, caller_deadline=caller)

    def result(self, timeout: float | None = None) -> ExecutionResult:
        self._pump(timeout)
        return super().result(0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._pump(timeout)
        return super().exception(0)

    def complete(self, message: p.Message) -> None:
        """Set the result (or exception) the completion ``message`` carries."""
        try:
            result = self._connection.answer(message, self.what, decode_result)
            if self._guard is not None:
                self._guard.check()
        except BaseException as error:
            self.set_exception(error)
        else:
            self.set_result(result)
