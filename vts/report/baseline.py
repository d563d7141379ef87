"""Comparing a run with a previous one (``--baseline OLD.jsonl|OLD.json``).

A driver team gates on regressions, not on the list of things it already
knows are broken: every case gets ``extra["baseline"]``, one of

* ``new-failure``   failing now, not failing in the baseline;
* ``still-failing`` failing now and then;
* ``fixed``         failing then, not now;
* ``new``           not in the baseline at all (whatever its verdict);
* ``still-passing`` not failing now or then.

"Failing" is ``Verdict.is_failure`` on both sides, so every verdict,
including ones added later, is classified the same way.  With
``--fail-on new`` the run fails only when some failing case is not
``still-failing`` (a new case that fails is a regression too).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from vts.report.resultsfile import iter_results
from vts.results import CaseResult, Verdict

NEW_FAILURE, STILL_FAILING, FIXED, NEW, STILL_PASSING = (
    "new-failure", "still-failing", "fixed", "new", "still-passing")
STATUSES = (NEW_FAILURE, STILL_FAILING, FIXED, NEW, STILL_PASSING)


class Baseline:
    """Which cases failed in a previous results file (only a bit per name is kept)."""

    def __init__(self, failing_then: dict[str, bool], path: str = "") -> None:
        self.failing_then = failing_then
        self.path = path

    @classmethod
    def from_file(cls, path: str) -> Baseline:
        return cls({r.name: r.verdict.is_failure for r in iter_results(path)}, path)

    def status(self, name: str, verdict: Verdict) -> str:
        then = self.failing_then.get(name)
        now = verdict.is_failure
        if then is None:
            return NEW
        if now:
            return STILL_FAILING if then else NEW_FAILURE
        return FIXED if then else STILL_PASSING

    def annotate(self, result: CaseResult) -> CaseResult:
        return dataclasses.replace(result, extra={**result.extra, "baseline": self.status(result.name,
                                                                                          result.verdict)})


def is_regression(result: CaseResult) -> bool:
    """A failing case that was not already failing (what ``--fail-on new`` gates on)."""
    return result.verdict.is_failure and result.extra.get("baseline") != STILL_FAILING


class BaselineTally:
    """Counts per baseline status, and the regressions to lead the closing summary with."""

    def __init__(self, keep: int = 20) -> None:
        self.counts: Counter[str] = Counter()
        self.regressions: list[CaseResult] = []
        self.regression_count = 0
        self.keep = keep

    def add(self, result: CaseResult) -> None:
        self.counts[str(result.extra.get("baseline"))] += 1
        if is_regression(result):
            self.regression_count += 1
            if len(self.regressions) < self.keep:
                self.regressions.append(result)

    def lines(self, baseline_path: str) -> list[str]:
        """A short plain-text section: new failures first, then the counts."""
        out = [f"new failures against {baseline_path}: {self.regression_count}"]
        for result in self.regressions:
            out.append(f"  NEW {result.name} ({result.verdict.value}): {result.reason}")
        if self.regression_count > len(self.regressions):
            out.append(f"  ... and {self.regression_count - len(self.regressions)} more")
        out.append("baseline: " + ", ".join(f"{self.counts[s]} {s}" for s in STATUSES))
        return out
