"""Several calls sent ahead in one ``BATCH`` message (docs/protocol.md §5.4), harness side.

``Connection.send_ahead`` already lets the host work while the harness
judges; each call still costs both processes a message.  A ``CallBatch``
collects calls (their arguments encoded at once; a preparation after the
query of the same model copies the query's arguments and adds its own,
``add_extending``), then sends them in one message; each call's answer is read by
its own ``PendingCall``, under its reader's deadline, exactly as if it had
gone alone.  Only for a driver that granted the ``batch`` feature
(``Connection.batch``), and only under ``send_ahead``'s rules: a batch never
waits, declares no pool and carries no descriptor, and what cannot go is
left to its case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vts.ipc import protocol as p
from vts.ipc.connection import MAX_AHEAD_BODY, Connection, Decode, PendingCall
from vts.ipc.protocol import Method, Writer
from vts.ipc.protocol.primitives import U32
from vts.ipc.reply_reader import BatchSlot, Slot

__all__ = ["CallBatch", "batch_of"]

#: u32 code + u32 length before each call's arguments.
_ITEM_HEAD = 8


def batch_of(connection: Connection) -> CallBatch | None:
    """A new batch for ``connection``, or None when its driver did not grant ``batch`` (or is lost)."""
    if p.BATCH_FEATURE not in connection.features or connection.failure is not None:
        return None
    return CallBatch(connection)


class CallBatch:
    """Calls collected for one ``BATCH`` message; ``send`` sends them, each answer read by its ``PendingCall``."""

    __slots__ = ("_calls", "_last", "_last_model", "_slots", "body", "connection")

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.body = Writer()
        self.body.buf += p.EMPTY_PREAMBLE
        self.body.u32(0)  # the number of calls, written by send
        self._slots: list[Slot] = []
        self._calls: list[PendingCall] = []
        #: The arguments of the call added last (None after a rollback), for ``add_extending``.
        self._last: bytes | None = None
        #: The model whose encoding those arguments are, and nothing else (``add(model=...)``), or None.
        self._last_model: object | None = None

    def __len__(self) -> int:
        return len(self._slots)

    def add(self, method: Method, write: Callable[[Writer], None], decode: Decode | None,
            pools: Sequence[Any] = (), model: object | None = None) -> PendingCall | None:
        """Add a call; its ``PendingCall`` (answered once the batch is sent), or None if it cannot go ahead.

        ``model``: the call's arguments are that model's encoding and nothing else (``GET_SUPPORTED_OPERATIONS``),
        so a call whose arguments begin with it may extend them (``extends_model``)."""
        if not self._batchable(method):
            return None
        arguments = self.connection.encode_ahead(write, pools)
        if arguments is None or len(self.body.buf) + _ITEM_HEAD + len(arguments) > MAX_AHEAD_BODY:
            return None
        call = self._append(method, arguments, decode)
        self._last_model = model
        return call

    def extends_model(self, model: object) -> bool:
        """Whether the call added last carries ``model``'s encoding alone (``add(model=...)``), for the next call
        to extend (``add_extending``) rather than encode the model again."""
        return self._last is not None and self._last_model is model

    def add_extending(self, method: Method, tail: bytes, decode: Decode | None) -> PendingCall | None:
        """Add a call whose arguments are those of the call added last followed by ``tail``, copied rather than
        encoded again: a kind whose body extends another's, as each ``*_WITH_CONFIG`` kind's extends its older
        kind's (docs/protocol.md §5.5).  None if it cannot go (no call added last, a full batch)."""
        last = self._last
        if last is None or not self._batchable(method):
            return None
        arguments = last + tail
        if len(self.body.buf) + _ITEM_HEAD + len(arguments) > MAX_AHEAD_BODY:
            return None
        return self._append(method, arguments, decode)

    def _batchable(self, method: Method) -> bool:
        """Whether ``method`` may join this batch: a batchable kind (its feature granted, where it needs one)
        and room for one more call."""
        if method not in p.BATCH_METHODS or len(self._slots) >= p.MAX_BATCH_ITEMS:
            return False
        feature = p.BATCHED_WITH_FEATURE.get(method)
        return feature is None or feature in self.connection.features

    def _append(self, method: Method, arguments: bytes, decode: Decode | None) -> PendingCall:
        p.write_batch_item(self.body, method, arguments)
        slot = Slot(method)
        call = PendingCall(self.connection, 0, slot, decode)
        self._slots.append(slot)
        self._calls.append(call)
        self._last, self._last_model = arguments, None
        return call

    def mark(self) -> tuple[int, int]:
        """Where the batch stands now, to go back to with ``rollback``."""
        return len(self._slots), len(self.body.buf)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Drop the calls added since ``mark`` (a mutation whose second call could not be added)."""
        calls, size = mark
        del self._slots[calls:], self._calls[calls:]
        del self.body.buf[size:]
        self._last = self._last_model = None

    @property
    def calls(self) -> tuple[PendingCall, ...]:
        """The calls added so far, in order."""
        return tuple(self._calls)

    def send(self, shared: bool = False) -> bool:
        """Send the calls in one message; False (nothing sent, the calls void) when it cannot go now.

        ``shared``: the batch holds the calls of several cases (``PendingCall.shared``).
        """
        if not self._slots:
            return False
        U32.pack_into(self.body.buf, len(p.EMPTY_PREAMBLE), len(self._slots))
        seq = self.connection.send_batch_ahead(self.body.buf, BatchSlot(self._slots))
        if seq is None:
            return False
        for call in self._calls:
            call.seq, call.shared = seq, shared
        return True
