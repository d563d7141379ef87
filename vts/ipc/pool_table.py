"""Which memory pools the driver host knows, under which ids, and what to tell it in the next preamble.

Pools are declared to the host once, on first use, with their descriptor
(SCM_RIGHTS), and named by id afterwards (docs/protocol.md §4.1); when a pool
object dies its id is released on the next request, and so is a handle
(prepared model, buffer, burst) the harness dropped.  Tensor data is never
copied through the socket.  Used by one connection under its send lock.
"""

from __future__ import annotations

import collections
import itertools
import weakref
from typing import Any

from vts.hal.memory import Memory
from vts.ipc import protocol as p
from vts.ipc.errors import ProtocolError
from vts.ipc.protocol import Writer

__all__ = ["PoolTable"]


class PoolTable:
    """One connection's pool ids and the releases not yet sent."""

    def __init__(self) -> None:
        self._ids: weakref.WeakKeyDictionary[Memory, tuple[int, str, int, bool]] = weakref.WeakKeyDictionary()
        self._counter = itertools.count(1)
        self._released_pools: collections.deque[int] = collections.deque()
        self._released_handles: collections.deque[int] = collections.deque()
        #: Pools the request being encoded declares: (id, name, size, fd).
        self._new: list[tuple[int, str, int, int]] = []

    def memory_id(self, pool: Any) -> int:
        """The wire id of ``pool``, declaring it (with its descriptor) in this request if new.

        Called while a request is encoded, under the send lock, so ids are
        declared in the order the host reads them.  A pool whose name or size
        changed since it was declared (a validation mutation) is declared
        again under a new id, and so is one closed since (the driver must see it
        closed, as it would in process).
        """
        if not isinstance(pool, Memory):
            raise ProtocolError(f"cannot send a {type(pool).__name__} as a memory pool")
        pool_id = self.declared_id(pool)
        if pool_id is not None:
            return pool_id
        entry = self._ids.get(pool)
        if entry is not None:
            self._released_pools.append(entry[0])
        pool_id = next(self._counter)
        self._ids[pool] = (pool_id, pool.name, pool.size, pool.fd >= 0)
        weakref.finalize(pool, self._released_pools.append, pool_id)
        self._new.append((pool_id, pool.name, pool.size, pool.fd))
        return pool_id

    def declared_id(self, pool: Memory) -> int | None:
        """The id ``pool`` is declared under as it is now (name, size, open); None if it must be declared."""
        entry = self._ids.get(pool)
        if entry is not None and entry[1:] == (pool.name, pool.size, pool.fd >= 0):
            return entry[0]
        return None

    def last_id(self, pool: Any) -> int | None:
        """The id ``pool`` was last declared under, whatever it has become since; None if never declared."""
        entry = self._ids.get(pool)
        return None if entry is None else entry[0]

    def release_handle(self, handle: int) -> None:
        """Tell the host, in the next preamble, that the harness dropped ``handle``."""
        self._released_handles.append(handle)

    def begin(self) -> None:
        """A request starts being encoded: nothing declared in it yet (an abandoned one's ids are dropped)."""
        self._new = []

    @property
    def declares(self) -> bool:
        """The request being encoded declares pools."""
        return bool(self._new)

    @property
    def releases(self) -> bool:
        """Pools or handles wait to be released in a preamble."""
        return bool(self._released_pools or self._released_handles)

    def write_preamble(self, args: Writer) -> list[int]:
        """Put this request's declarations and the waiting releases in ``args``'s preamble; the message's fds.

        ``args`` starts with ``EMPTY_PREAMBLE``, replaced here when there is
        anything to say; declared pools' descriptors follow the arguments' own.
        """
        if not (self._new or self.releases):
            return args.fds
        fds = list(args.fds)
        preamble = p.Preamble()
        for pool_id, name, size, fd in self._new:
            index = -1
            if fd >= 0:
                index = len(fds)
                fds.append(fd)
            preamble.pools.append(p.PoolDeclaration(pool_id, name, size, index))
        while self._released_pools:
            preamble.released_pools.append(self._released_pools.popleft())
        while self._released_handles:
            preamble.released_handles.append(self._released_handles.popleft())
        head = Writer()
        p.write_preamble(head, preamble)
        args.buf[: len(p.EMPTY_PREAMBLE)] = head.buf
        return fds
