"""The output guard: an execution may write its outputs' regions only (checked after it succeeds).

The HAL lets a driver write only the ``DataLocation`` regions of its outputs
(NN HAL 1.3 ``IPreparedModel::execute``); a driver writing past them
corrupts the caller's other data silently.  In process nothing can tell; out
of process the pools are shared memory, so the harness snapshots the bytes
outside the output regions before an execution and compares them after.
"""

from __future__ import annotations

from vts.hal.memory import Memory
from vts.hal.types import Request
from vts.ipc.errors import DriverMisbehaved

__all__ = ["GUARD_LIMIT", "OutputGuard"]

#: Bytes of guarded pool content above which the output guard is skipped (a copy per execution).
GUARD_LIMIT = 1 << 20


class OutputGuard:
    """Bytes of the request's output pools outside every output region, saved before an execution.

    The HAL lets a driver write its outputs' regions only; ``check`` after a
    successful execution raises ``DriverMisbehaved`` if any other byte of
    those pools changed, and ``PoolTruncated`` if a pool that cannot be
    sealed was resized.
    """

    __slots__ = ("paddings", "saved", "unsealed")

    def __init__(self, saved: list[tuple[Memory, int, bytes]], unsealed: list[Memory],
                 paddings: tuple[tuple[Memory, int, int], ...] = ()) -> None:
        self.saved = saved
        self.unsealed = unsealed
        #: AIDL outputs' padding spans (pool, start, end): a change there is named as such (DataLocation.aidl).
        self.paddings = paddings

    @classmethod
    def of(cls, request: Request) -> OutputGuard | None:
        regions: dict[Memory, list[tuple[int, int]]] = {}
        paddings: list[tuple[Memory, int, int]] = []
        pools = request.pools
        for argument in request.outputs:
            if argument.has_no_value:
                continue
            loc = argument.location
            if not 0 <= loc.pool_index < len(pools):
                continue
            pool = pools[loc.pool_index]
            if isinstance(pool, Memory) and pool.fd >= 0 and pool.size > 0:
                start = min(max(loc.offset, 0), pool.size)
                end = min(max(loc.offset + loc.length, start), pool.size)
                regions.setdefault(pool, []).append((start, end))
                if loc.padding:
                    paddings.append((pool, end, end + loc.padding))
        unsealed = [pool for pool in pools if isinstance(pool, Memory) and not pool.sealed and pool.fd >= 0]
        saved: list[tuple[Memory, int, bytes]] = []
        total = 0
        for pool, spans in regions.items():
            at = 0
            for start, end in [*sorted(spans), (pool.size, pool.size)]:
                if start > at:
                    total += start - at
                    if total > GUARD_LIMIT:
                        return cls([], unsealed) if unsealed else None
                    saved.append((pool, at, pool.read(at, start - at)))
                at = max(at, end)
        return cls(saved, unsealed, tuple(paddings)) if saved or unsealed else None

    def check(self) -> None:
        for pool in self.unsealed:
            pool.check_size()
        for pool, at, before in self.saved:
            after = pool.read(at, len(before))
            if after != before:
                changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
                first = at + changed[0]
                if any(p is pool and start <= first < end for p, start, end in self.paddings):
                    raise DriverMisbehaved(
                        f"the driver wrote into an output's padding: {len(changed)} byte(s) of the {pool.name} "
                        f"output pool changed at offsets {first}..{at + changed[-1]}, after an output's length "
                        "(DataLocation.aidl: the padding must not hold output data)")
                raise DriverMisbehaved(
                    f"the driver wrote outside its output regions: {len(changed)} byte(s) of the {pool.name} "
                    f"output pool changed at offsets {at + changed[0]}..{at + changed[-1]}, which belong to no "
                    "output (the HAL lets a driver write only its outputs' DataLocation regions)")

