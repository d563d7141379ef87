"""The first execution of a prepared model against its steady state ("first frame stutter").

The driver guide asks drivers to do their one-off work at preparation, so an
application's first inference is not the slow one.  The measure is the
first execution's latency over the median of the next ``k``; it is always
reported, and fails only past a ratio the user sets (timing depends on the
machine, so there is no default bound).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: Executions after the first that make the steady state.
DEFAULT_STEADY_EXECUTIONS = 5


@dataclass(frozen=True, slots=True)
class FirstExecution:
    name: str
    first_ms: float
    steady_median_ms: float
    steady_executions: int

    @property
    def ratio(self) -> float:
        return self.first_ms / self.steady_median_ms if self.steady_median_ms > 0 else float("inf")

    def exceeds(self, max_ratio: float | None) -> bool:
        return max_ratio is not None and self.ratio > max_ratio

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "first_ms": round(self.first_ms, 3),
                "steady_median_ms": round(self.steady_median_ms, 3), "steady_executions": self.steady_executions,
                "ratio": round(self.ratio, 2)}


def first_execution(name: str, latencies_s: Sequence[float], k: int = DEFAULT_STEADY_EXECUTIONS) \
        -> FirstExecution | None:
    """From a model's latencies in order (seconds); None until there is at least one steady execution."""
    steady = list(latencies_s[1:1 + k])
    if not steady:
        return None
    return FirstExecution(name, latencies_s[0] * 1e3, statistics.median(steady) * 1e3, len(steady))
