"""``BATCH``: several calls in one message and their answers in one reply (docs/protocol.md §5.4), both ends.

A call's round trip costs both processes a send, a poll and a receive and,
in Python, the framing around them: about 45 us of harness CPU and 15 us of
host CPU a call against the C sample (bench/README.md), more than the
driver's own work on a validation mutation.  A revision-3 driver that grants
the ``batch`` feature in ``OPEN`` takes a ``BATCH`` request holding several
calls, serves them in order as if each had come alone, and answers once with
each call's status and body, in order.

Only calls whose answers carry no descriptor and come once are batched
(``BATCH_METHODS``): no opening, no asynchronous or fenced execution, no
session kinds.  One preamble (pools declared, releases) starts the batch's
body and applies to every call in it; a call names descriptors of the batch
message.
"""

from __future__ import annotations

from vts.ipc.errors import ProtocolError
from vts.ipc.protocol.framing import Method
from vts.ipc.protocol.primitives import Reader, Writer

__all__ = [
    "BATCHED_WITH_FEATURE",
    "BATCH_EXTRA_FEATURES",
    "BATCH_METHODS",
    "MAX_BATCH_ITEMS",
    "read_batch_reply",
    "read_batch_request",
    "write_batch_answer",
    "write_batch_item",
]

#: The calls a ``BATCH`` may hold: answered once, with no descriptor attached.
BATCH_METHODS = frozenset({
    Method.GET_STATUS, Method.GET_TYPE, Method.GET_VERSION_STRING, Method.GET_CAPABILITIES,
    Method.GET_SUPPORTED_EXTENSIONS, Method.GET_SUPPORTED_OPERATIONS, Method.GET_NUMBER_OF_CACHE_FILES_NEEDED,
    Method.PREPARE_MODEL, Method.PREPARE_MODEL_FROM_CACHE, Method.ALLOCATE, Method.EXECUTE,
    Method.FENCED_GET_EXECUTION_INFO, Method.BUFFER_COPY_TO, Method.BUFFER_COPY_FROM,
    # aidl:4 only (a host that did not grant it refuses the call, alone): the validation sweep sends a model
    # mutation's prepareModelWithConfig in the batch of its query and preparation, to a driver that granted
    # ``batch_config`` too (``BATCHED_WITH_FEATURE``).
    Method.PREPARE_MODEL_WITH_CONFIG,
})
#: Calls the harness batches only for a driver that granted the named feature besides ``batch``: kinds made
#: batchable after ``batch`` was first published, so a driver written to that first text, which answers them
#: PROTOCOL_ERROR inside a ``BATCH``, is never sent them there (docs/protocol.md §5.4).
BATCHED_WITH_FEATURE = {Method.PREPARE_MODEL_WITH_CONFIG: "batch_config"}
#: Those features, each once, in a stable order (what the harness asks for and a host serving them all grants).
BATCH_EXTRA_FEATURES: tuple[str, ...] = tuple(sorted(set(BATCHED_WITH_FEATURE.values())))
#: At most this many calls in one ``BATCH`` (a bound on both ends).
MAX_BATCH_ITEMS = 64


def write_batch_item(w: Writer, method: Method | int, arguments: bytes | bytearray) -> None:
    """One call of a ``BATCH`` request: ``u32 code``, ``bytes arguments`` (the call's arguments, no preamble)."""
    w.u32(int(method))
    w.raw(arguments)


def read_batch_request(r: Reader) -> list[tuple[int, bytes]]:
    """The calls of a ``BATCH`` request after its preamble: ``list<(u32 code, bytes arguments)>``."""
    items = [(r.u32(), r.raw()) for _ in range(r.count(8, MAX_BATCH_ITEMS))]
    r.end()
    return items


def write_batch_answer(w: Writer, status: int, body: bytes | bytearray) -> None:
    """One answer of a ``BATCH`` reply: ``u32 status``, ``bytes body`` (what the call's own reply would carry)."""
    w.u32(status)
    w.raw(body)


def read_batch_reply(r: Reader, calls: int) -> list[tuple[int, bytes]]:
    """A ``BATCH`` reply's answers, exactly one per call sent (``ProtocolError`` otherwise)."""
    n = r.count(8, MAX_BATCH_ITEMS)
    if n != calls:
        raise ProtocolError(f"{n} answers to a batch of {calls} calls")
    answers = []
    for _ in range(n):
        status = r.u32()
        if status > 0xFFFF:
            raise ProtocolError(f"an answer with status {status} in a batch")
        answers.append((status, r.raw()))
    r.end()
    return answers

