"""What a ``-j`` worker has done, kept where its death cannot take it: shared memory the parent reads.

A worker used to send the parent two messages per case: one when the case
started, so that the worker's death could be charged to it, and one with
its result.  Each message is a system call on each side, a wake-up of the
parent and a pickle, for about a millisecond of work in a validation case.

Instead, the worker writes to a *ledger*, a memfd mapped by both processes:

* the case it starts (index and its labels), overwritten by the next one;
* each result, appended as the line the results stream will hold for it
  (``vts.report.stream.case_line``); a batch of them is sent down the pipe as one
  message when it is due (``BATCH_RESULTS`` results, ``BATCH_BYTES`` bytes,
  or ``BATCH_SECONDS`` after the first one), and only then forgotten.

When a worker dies, the parent reads the results the worker had recorded
but not sent, and the case it had started: nothing that finished is lost,
and the case that was running gets the death verdict.  The parent reads
the ledger only once the worker is dead, so no two processes ever touch it
at once.  Batches are numbered: a worker that died after its batch reached
the pipe, before it forgot it, leaves a batch the parent already has, and
the parent ignores it.

The worker writes every field in an order that leaves the ledger readable
whatever instruction it dies at: a record is complete before ``used``
covers it, ``used`` is 0 before the batch number moves on, and the
started index is written after its labels.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
from collections.abc import Iterator
from typing import Any

#: Send the pending results when this many have piled up...
BATCH_RESULTS = 256
#: ...or they take this many bytes...
BATCH_BYTES = 64 << 10
#: ...or the oldest has waited this long (the progress display lags by at most about this much).
BATCH_SECONDS = 0.2

_HEADER = struct.Struct("<QQqI")  # batch number, bytes of records used, started index, started labels' length
_U64 = struct.Struct("<Q")
_STARTED = struct.Struct("<qI")  # the header's last two fields, written together
_BATCH_AT, _USED_AT, _STARTED_AT = 0, 8, 16
_LABELS_AT = 64
_META_SPACE = 64 << 10
_RECORDS_AT = _LABELS_AT + _META_SPACE
_RECORD = struct.Struct("<IqI")  # line length, case index (-1: a result of no case), flags
_PLAIN = 1  # flag: the result is tallied in its batch's PlainTally (vts.report.batch)
SIZE = 2 << 20


def _attach(fd: Any, size: int) -> WorkerLedger:
    """The worker's side: the ledger the parent created, from the descriptor ``spawn`` handed over."""
    return WorkerLedger(size, fd.detach() if hasattr(fd, "detach") else fd)


class WorkerLedger:
    """One worker's ledger (see the module docstring); created by the parent, pickled into the worker."""

    def __init__(self, size: int = SIZE, fd: int | None = None) -> None:
        created = fd is None
        if fd is None:
            fd = os.memfd_create("nnvts-worker-ledger", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
        self.fd = fd
        self.size = size
        self.map = mmap.mmap(fd, size)
        if created:
            _HEADER.pack_into(self.map, 0, 0, 0, -1, 0)  # no case started yet
        self.capacity = size - _RECORDS_AT
        self.batch = 0
        self.used = 0
        self.count = 0

    def __reduce__(self) -> tuple[Any, ...]:
        from multiprocessing import reduction

        return _attach, (reduction.DupFd(self.fd), self.size)

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)

    # -- the worker's side -------------------------------------------------------------------------

    def start(self, index: int, labels: dict[str, Any]) -> None:
        """Case ``index`` starts: its labels (name, family, spec, ...) replace the last case's."""
        data = pickle.dumps(labels, protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) > _META_SPACE:
            data = pickle.dumps(_cut_labels(labels), protocol=pickle.HIGHEST_PROTOCOL)
        self.map[_LABELS_AT:_LABELS_AT + len(data)] = data
        _STARTED.pack_into(self.map, _STARTED_AT, index, len(data))

    def append(self, index: int, line: bytes, plain: bool = False) -> bool:
        """Record one result, as its stream line (``index`` -1: no case's; ``plain``: tallied in its batch);
        False when it cannot fit even in an empty ledger."""
        at = _RECORDS_AT + self.used
        end = self.used + _RECORD.size + len(line)
        if end > self.capacity:
            return False
        _RECORD.pack_into(self.map, at, len(line), index, _PLAIN if plain else 0)
        self.map[at + _RECORD.size:at + _RECORD.size + len(line)] = line
        self.used = end
        self.count += 1
        _U64.pack_into(self.map, _USED_AT, end)
        return True

    def due(self) -> bool:
        return self.count >= BATCH_RESULTS or self.used >= BATCH_BYTES

    def pending(self) -> tuple[int, bytes] | None:
        """(batch number, the records) to send, or None when nothing is recorded."""
        if not self.used:
            return None
        return self.batch, self.map[_RECORDS_AT:_RECORDS_AT + self.used]

    def sent(self) -> None:
        """The pending batch reached the pipe: forget it."""
        self.used = 0
        self.count = 0
        _U64.pack_into(self.map, _USED_AT, 0)
        self.batch += 1
        _U64.pack_into(self.map, _BATCH_AT, self.batch)

    # -- the parent's side, once the worker is dead -------------------------------------------------

    def unsent(self, received_batches: int) -> bytes:
        """The records of the results recorded but not received (the parent had ``received_batches``)."""
        batch, used, _, _ = _HEADER.unpack_from(self.map, 0)
        if batch < received_batches or used > self.capacity:
            return b""
        return self.map[_RECORDS_AT:_RECORDS_AT + used]

    def started(self) -> tuple[int, dict[str, Any] | None]:
        """(index, labels) of the last case the worker started: index -1 when it started none."""
        _, _, index, length = _HEADER.unpack_from(self.map, 0)
        if index < 0 or length > _META_SPACE:
            return -1, None
        try:
            labels = pickle.loads(self.map[_LABELS_AT:_LABELS_AT + length])
        except Exception:
            # Only a worker dying while it wrote the next case's labels leaves them torn, and the index
            # then still names the case before, whose result the parent has: it is not charged.
            labels = None
        return index, labels if isinstance(labels, dict) else None


def records(blob: bytes) -> Iterator[tuple[int, bytes, bool]]:
    """The (case index, stream line, plain) records of a batch, in the order the worker recorded them."""
    at, end = 0, len(blob)
    while at + _RECORD.size <= end:
        length, index, flags = _RECORD.unpack_from(blob, at)
        at += _RECORD.size
        if at + length > end:
            return
        yield index, blob[at:at + length], bool(flags & _PLAIN)
        at += length


def _cut_labels(labels: dict[str, Any]) -> dict[str, Any]:
    """Labels that fit the ledger (a spec may name a case at any length; reports cut names at 1 024 anyway)."""
    return {key: (value[:1024] if isinstance(value, str) else [str(v)[:256] for v in value[:64]])
            for key, value in labels.items()}
