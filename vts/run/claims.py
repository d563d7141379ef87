"""``-j`` workers that take spec files as they get to them, instead of the units that hash to their slot.

With units split by a hash, each worker's share is fixed before the run: a worker whose share happens to
cost more runs alone at the end while the others idle (46 s of the whole corpus's 1,126 s under ``-j 2``;
over a 1/20 shard, a hash split bounds ``-j 16`` at 11.5x from balance alone).  Here every worker walks
the spec files in the same order, and a worker that reaches a file nobody has taken takes it whole
(``SpecClaims``, a table in shared memory); the files of a run go to whichever worker is free,
and the last of them decides how long the others wait: one file's cases, not a hash's luck.

What is claimed, and what stays hashed (``ClaimingSlot``):

* a concrete-layer JSON spec file, once the loader's names pass has read its models' names (every worker
  reads every file's names: that pass is what gives them the same walk); its models are the claimant's,
  every family's cases of them;
* not a file holding a heavy model (``vts.run.runner.HEAVY_MODEL_SIZE``): every worker already parses it
  and takes its share of the heavy model's validation cases by name, and its other units stay hashed;
* not a file the names pass cannot read (YAML, variations) nor a device-level case: hashed, as before.

The worker that replaces a dead one walks the same files: those its slot had claimed are still its own,
in the same order, so the case numbers the parent keeps per slot go on meaning the same cases; what
nobody has claimed yet it claims as any worker would.  The parent, listing a slot's remaining cases when
it gives the slot up, only reads the table (``ClaimingSlot(replay=True)``).  A file is claimed by one
worker or none, so no case runs twice; a worker only finishes once it has walked past every file, so none
is left unclaimed while a worker lives.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from collections.abc import Iterable
from typing import Any

from vts.run.selection import worker_slot

#: Spec files a run's table holds (two bytes each); files walked after these are hashed like YAML ones.
CAPACITY = 1 << 16
#: The most slots a table names (its entries hold the slot plus one).
MAX_SLOTS = (1 << 16) - 1
_ENTRY = struct.Struct("<H")


class SpecClaims:
    """Which ``-j`` slot took each spec file, by the file's place in the walk (0: nobody yet).

    A memfd the parent creates and every worker maps (it travels to a spawned worker as an argument of
    its ``Process``, like ``vts.run.ledger.WorkerLedger``).  A claim reads and writes its entry under an
    ``fcntl`` lock on the memfd, which the kernel drops when its holder dies: a worker killed mid-claim
    (an in-process driver that crashes its process on another thread) cannot leave the others waiting.
    """

    def __init__(self, capacity: int = CAPACITY, fd: int | None = None) -> None:
        if fd is None:
            fd = os.memfd_create("nnvts-spec-claims", os.MFD_CLOEXEC)
            os.ftruncate(fd, capacity * _ENTRY.size)
        self.fd = fd
        self.capacity = capacity
        self.map = mmap.mmap(fd, capacity * _ENTRY.size)

    def __reduce__(self) -> tuple[Any, ...]:
        from multiprocessing import reduction

        return _attach, (reduction.DupFd(self.fd), self.capacity)

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)

    def claim(self, place: int, slot: int) -> bool:
        """Take file ``place`` for ``slot`` unless another slot has it; whether ``slot`` has it now."""
        at = place * _ENTRY.size
        fcntl.lockf(self.fd, fcntl.LOCK_EX)
        try:
            (owner,) = _ENTRY.unpack_from(self.map, at)
            if owner == 0:
                owner = slot + 1
                _ENTRY.pack_into(self.map, at, owner)
        finally:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)
        return owner == slot + 1

    def owner(self, place: int) -> int | None:
        """The slot that took file ``place``, or None."""
        (owner,) = _ENTRY.unpack_from(self.map, place * _ENTRY.size)
        return None if owner == 0 else owner - 1


def _attach(fd: Any, capacity: int) -> SpecClaims:
    """A worker's side: the table the parent created, from the descriptor ``spawn`` handed over."""
    return SpecClaims(capacity, fd.detach() if hasattr(fd, "detach") else fd)


class ClaimingSlot:
    """One ``-j`` worker's share when workers claim spec files (a ``Selection.partition``).

    ``unit(key)`` answers for the models of the files the names pass handed to ``claim_spec`` (this
    worker's file or another's); any other unit, and ``__call__`` on a case name (device-level cases, a
    heavy model's shared cases), falls back on the hash of ``vts.run.selection.WorkerSlot``.
    """

    def __init__(self, slot: int, jobs: int, claims: SpecClaims, replay: bool = False) -> None:
        if jobs > MAX_SLOTS:
            raise ValueError(f"a spec claim table names at most {MAX_SLOTS} slots")
        self.slot = slot
        self.jobs = jobs
        self.claims = claims
        #: Only read the table (the parent listing a given-up slot's cases): claim nothing new.
        self.replay = replay
        self._walked = 0
        self._owned: dict[str, bool] = {}

    def __call__(self, key: str) -> bool:
        return worker_slot(key, self.jobs) == self.slot

    def unit(self, key: str) -> bool:
        owned = self._owned.get(key)
        return self(key) if owned is None else owned

    def claim_spec(self, units: Iterable[str]) -> bool | None:
        """The names pass reached a claimable spec file with these units: whether this worker has it.

        Every worker calls this for the same files in the same order, so a file's place in the walk
        names it in the shared table.  None: past the table's capacity, the file's units stay hashed.
        """
        place = self._walked
        self._walked += 1
        if place >= self.claims.capacity:
            return None
        mine = self.claims.owner(place) == self.slot if self.replay else self.claims.claim(place, self.slot)
        for unit in units:
            self._owned[unit] = mine
        return mine
