"""``-j`` workers that take models as they reach them, instead of the units that hash to their slot.

With units split by a hash, each worker's share is fixed before the run: a worker whose share happens to
cost more runs alone at the end while the others idle (46 s of the whole corpus's 1,126 s under ``-j 2``;
over a 1/20 shard, a hash split bounds ``-j 16`` at 11.2x from balance alone).  Here every worker walks
the models in the same order, and a worker takes the next model nobody has taken when it gets to it
(``ModelClaims``, a table in shared memory): the models of a run go to whichever worker is free, and the
last of them decides how long the others wait: one model's cases, not a hash's luck.

A model is claimed just in time: when the worker's walk reaches it, after the cases before it have run
(``vts.model.casemodel.iter_spec_models`` is lazy).  The loader's names pass, which every worker runs over
every concrete-layer JSON spec file, gives every model its place in the walk (``register_spec``) and,
without claiming anything, tells whether a file still holds a model this worker could take
(``peeking``): a file whose models others have all taken is neither checked nor parsed.  Two workers
that reach the same file both read it and share its models.

What stays hashed (``vts.run.selection.WorkerSlot``): a heavy model (``vts.run.runner.HEAVY_MODEL_SIZE``:
every worker parses it and takes its share of its validation cases by name), the models of a file the
names pass cannot read (YAML, variations), device-level cases, and models past the table's capacity.

The worker that replaces a dead one walks the same models: those its slot had claimed are still its own,
in the same order, so the case numbers the parent keeps per slot go on meaning the same cases; what
nobody has claimed yet it claims as any worker would.  The parent, listing a slot's remaining cases when
it gives the slot up, only reads the table (``ClaimingSlot(replay=True)``).  A model is claimed by one
worker or none, so no case runs twice; a worker only finishes once it has walked past every model, so
none is left unclaimed while a worker lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from vts.run.selection import WorkerSlot

#: Models a run's table holds (two bytes each, in a memfd whose untouched pages take no memory); models
#: walked after these are hashed.
CAPACITY = 1 << 20
#: The most slots a table names (its entries hold the slot plus one).
MAX_SLOTS = (1 << 16) - 1
_ENTRY = struct.Struct("<H")


class ModelClaims:
    """Which ``-j`` slot took each model, by the model's place in the walk (0: nobody yet).

    A memfd the parent creates and every worker maps (it travels to a spawned worker as an argument of
    its ``Process``, like ``vts.run.ledger.WorkerLedger``).  A claim reads and writes its entry under an
    ``fcntl`` lock on the memfd, which the kernel drops when its holder dies: a worker killed mid-claim
    (an in-process driver that crashes its process on another thread) cannot leave the others waiting.
    """

    def __init__(self, capacity: int = CAPACITY, fd: int | None = None) -> None:
        if fd is None:
            fd = os.memfd_create("nnvts-model-claims", os.MFD_CLOEXEC)
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
        """Take model ``place`` for ``slot`` unless another slot has it; whether ``slot`` has it now."""
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
        """The slot that took model ``place``, or None."""
        (owner,) = _ENTRY.unpack_from(self.map, place * _ENTRY.size)
        return None if owner == 0 else owner - 1


def _attach(fd: Any, capacity: int) -> ModelClaims:
    """A worker's side: the table the parent created, from the descriptor ``spawn`` handed over."""
    return ModelClaims(capacity, fd.detach() if hasattr(fd, "detach") else fd)


class ClaimingSlot:
    """One ``-j`` worker's share when workers claim models (a ``Selection.partition``).

    ``unit(key)`` answers for the models the names pass registered: this worker's (claimed now if nobody
    has it) or another's; while ``peeking``, it only says whether this worker could still take it.  Any
    other unit, and ``__call__`` on a case name (device-level cases, a heavy model's shared cases), falls
    back on the hash of ``vts.run.selection.WorkerSlot``.
    """

    def __init__(self, slot: int, jobs: int, claims: ModelClaims, replay: bool = False) -> None:
        if jobs > MAX_SLOTS:
            raise ValueError(f"a claim table names at most {MAX_SLOTS} slots")
        self.slot = slot
        self.jobs = jobs
        self.hashed = WorkerSlot(slot, jobs)
        self.claims = claims
        #: Only read the table (the parent listing a given-up slot's cases): claim nothing new.
        self.replay = replay
        self._walked = 0
        self._places: dict[str, int] = {}
        self._owned: dict[str, bool] = {}
        self._peeking = False

    def __call__(self, key: str) -> bool:
        return self.hashed(key)

    def unit(self, key: str) -> bool:
        owned = self._owned.get(key)
        if owned is not None:
            return owned
        place = self._places.get(key)
        if place is None:
            return self.hashed(key)
        if self._peeking:
            return self.claims.owner(place) in (None, self.slot)
        owned = self.claims.owner(place) == self.slot if self.replay else self.claims.claim(place, self.slot)
        self._owned[key] = owned
        return owned

    def register_spec(self, units: Iterable[str]) -> None:
        """The names pass reached a spec file: give its claimable units (models) their places in the walk.

        Every worker calls this for the same files, with the same units, in the same order, so a model's
        place names it in the shared table.
        """
        for unit in units:
            if self._walked >= self.claims.capacity:
                return
            if unit not in self._places:
                self._places[unit] = self._walked
                self._walked += 1

    @contextlib.contextmanager
    def peeking(self) -> Iterator[None]:
        """``unit`` claims nothing meanwhile: it says whether this worker has or could take the unit."""
        self._peeking = True
        try:
            yield
        finally:
            self._peeking = False
