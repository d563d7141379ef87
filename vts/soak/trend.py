"""Deciding from a series whether something grows or drifts.

Growth: a least-squares line through the second half of the samples (the
first half holds warm-up: allocator arenas, caches, lazily loaded code),
fitted against the number of executions -- not time, so a loaded machine
does not change the answer -- and multiplied by the executions of that half
(from the middle execution to the last, however sparse the samples).  A
driver that leaks a little on every execution grows linearly and shows up
however noisy single samples are; one that settles does not.

Drift: the median latency of the last windows against that of the first
windows after warm-up.  Medians, because one slow execution on a busy
machine says nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Growth:
    start: float  # value of the first sample
    end: float  # value of the last sample
    slope: float  # per execution, fitted over the second half
    growth: float  # slope times the executions of the second half
    samples_fitted: int

    def as_dict(self, scale: float = 1.0, digits: int = 3) -> dict[str, float | int]:
        return {"start": round(self.start * scale, digits), "end": round(self.end * scale, digits),
                "slope_per_execution": round(self.slope * scale, 6), "growth": round(self.growth * scale, digits),
                "samples_fitted": self.samples_fitted}


def least_squares_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The slope of the least-squares line through (xs, ys); 0 when xs do not vary."""
    n = len(xs)
    if n < 2:
        return 0.0
    mean_x = sum(xs) / n
    mean_y = sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var


def second_half_growth(executions: Sequence[int], values: Sequence[float]) -> Growth:
    """Fit over the samples from the midpoint of the executions on; growth over that span."""
    if not values:
        return Growth(0.0, 0.0, 0.0, 0.0, 0)
    middle = executions[0] + (executions[-1] - executions[0]) / 2
    pairs = [(x, y) for x, y in zip(executions, values, strict=True) if x >= middle]
    if len(pairs) < 2:
        pairs = list(zip(executions, values, strict=True))[-2:]
    xs = [float(x) for x, _ in pairs]
    ys = [float(y) for _, y in pairs]
    slope = least_squares_slope(xs, ys)
    span = executions[-1] - min(middle, xs[0])
    return Growth(float(values[0]), float(values[-1]), slope, slope * span, len(pairs))


@dataclass(frozen=True, slots=True)
class Drift:
    early_median: float
    late_median: float
    windows: tuple[float, ...]  # median of each window, in order

    @property
    def ratio(self) -> float:
        return self.late_median / self.early_median if self.early_median > 0 else 1.0


def latency_drift(latencies: Sequence[float], windows: int = 10, compared: int = 2,
                  warm_up_fraction: float = 0.1) -> Drift | None:
    """Median of the last ``compared`` windows over that of the first ``compared`` (after warm-up).

    None when there are too few executions to fill the windows.
    """
    start = int(len(latencies) * warm_up_fraction)
    steady = latencies[start:]
    if len(steady) < windows * 2:
        return None
    size = len(steady) // windows
    chunks = [steady[i * size:(i + 1) * size] for i in range(windows)]
    medians = tuple(statistics.median(c) for c in chunks)
    early = statistics.median([v for c in chunks[:compared] for v in c])
    late = statistics.median([v for c in chunks[-compared:] for v in c])
    return Drift(early, late, medians)
