"""When a run will end, said only once it can be: per family, or from the stored durations.

A run's first cases are not like the rest: the device-level families come
first (discovery, caching, the deadline's long chain), then the models,
each with every family's cases, and a validation case costs a fraction of a
millisecond where a deadline or concurrency case costs tens.  An ETA from
the rate of the cases so far read 83h48m for a run of 11 minutes.

So the ETA weighs what is left of each family by that family's own mean
case time, and is given only once every family with cases left has run
``MIN_CASES`` of them (or all it has); with ``--durations-from`` it is the
stored seconds of the selection not yet matched by the seconds run.  Case
seconds become wall seconds by the pace of the last minute (wall time per
second of case time): that takes in the harness's own cost and ``-j``.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

#: Cases of a family that must have run before its mean time is trusted (or all of the family's cases).
MIN_CASES = 20
#: Seconds of wall time the pace is measured over.
PACE_WINDOW = 60.0


@dataclass
class Eta:
    """Case counts and seconds per family as results arrive; ``remaining`` once it means something."""

    #: Cases per family in the selection (from the background count), None until counted.
    totals: Counter[str] | None = None
    #: Stored seconds of the selection's cases (``--durations-from``), None without a durations file.
    expected_seconds: float | None = None
    done: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)
    _pace: deque[tuple[float, float]] = field(default_factory=deque)  # (wall time, case seconds so far)

    def add(self, family: str, count: int, seconds: float) -> None:
        self.done[family] += count
        self.seconds[family] += seconds

    def unmeasured(self) -> list[str]:
        """Families with cases left that have not yet run enough of them to be timed (all, before the count)."""
        if self.totals is None:
            return []
        return sorted(f for f, total in self.totals.items()
                      if total > self.done[f] and self.done[f] < min(MIN_CASES, total))

    def remaining(self, now: float) -> float | None:
        """Wall seconds left, or None while that cannot be said (``now``: a monotonic time)."""
        worked = sum(self.seconds.values())
        self._pace.append((now, worked))
        while len(self._pace) > 2 and now - self._pace[1][0] >= PACE_WINDOW:
            self._pace.popleft()
        (then, worked_then) = self._pace[0]
        if worked - worked_then <= 0 or now - then <= 0:
            return None
        pace = (now - then) / (worked - worked_then)
        if self.expected_seconds is not None:
            return max(self.expected_seconds - worked, 0.0) * pace
        if self.totals is None or self.unmeasured():
            return None
        left = sum((total - self.done[f]) * self.seconds[f] / self.done[f]
                   for f, total in self.totals.items() if total > self.done[f])
        return left * pace
