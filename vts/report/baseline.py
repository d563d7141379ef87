"""Comparing a run with a previous one (``--baseline OLD.jsonl|OLD.json``).

A driver team gates on regressions, not on the list of things it already
knows are broken: every case gets ``extra["baseline"]``, one of

* ``new-failure``   failing now, not failing in the baseline;
* ``still-failing`` failing now and then;
* ``fixed``         failing then, not now;
* ``new``           not in the baseline at all (whatever its verdict);
* ``lost-coverage`` passed then, skipped now (the driver stopped claiming
  it: nothing fails, yet the case no longer proves anything);
* ``still-passing`` not failing now or then.

"Failing" is ``Verdict.is_failure`` on both sides, so every verdict,
including ones added later, is classified the same way.  With
``--fail-on new`` the run fails only when some failing case is not
``still-failing`` (a new case that fails is a regression too); with
``--fail-on-lost-coverage`` it also fails when a case that passed is now
skipped.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from vts.report.resultsfile import iter_results
from vts.results import CaseResult, Verdict

NEW_FAILURE, STILL_FAILING, FIXED, NEW, LOST_COVERAGE, STILL_PASSING = (
    "new-failure", "still-failing", "fixed", "new", "lost-coverage", "still-passing")
STATUSES = (NEW_FAILURE, STILL_FAILING, FIXED, NEW, LOST_COVERAGE, STILL_PASSING)
#: What a baseline keeps per case name: failing, passed, or anything else (skipped, xfail, ...).
_FAILING, _PASSED, _OTHER = "f", "p", "o"


def _then(verdict: Verdict) -> str:
    if verdict.is_failure:
        return _FAILING
    return _PASSED if verdict is Verdict.PASSED else _OTHER


class Baseline:
    """Which cases failed, and which passed, in a previous results file (one letter per name is kept).

    ``then`` maps a case name to its verdict then; a bool (failing or not)
    is read as a failure or a pass.
    """

    def __init__(self, then: dict[str, Verdict | bool], path: str = "") -> None:
        self.then = {name: (_FAILING if value else _PASSED) if isinstance(value, bool) else _then(value)
                     for name, value in then.items()}
        self.path = path

    @classmethod
    def from_file(cls, path: str) -> Baseline:
        return cls({r.name: r.verdict for r in iter_results(path)}, path)

    def status(self, name: str, verdict: Verdict) -> str:
        then = self.then.get(name)
        if then is None:
            return NEW
        if verdict.is_failure:
            return STILL_FAILING if then == _FAILING else NEW_FAILURE
        if then == _FAILING:
            return FIXED
        if then == _PASSED and verdict is Verdict.SKIPPED:
            return LOST_COVERAGE
        return STILL_PASSING

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
        self.lost: list[CaseResult] = []
        self.keep = keep

    @property
    def lost_count(self) -> int:
        return self.counts[LOST_COVERAGE]

    def add(self, result: CaseResult) -> None:
        self.counts[str(result.extra.get("baseline"))] += 1
        if result.extra.get("baseline") == LOST_COVERAGE and len(self.lost) < self.keep:
            self.lost.append(result)
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
        if self.lost_count:
            out.append(f"lost coverage against {baseline_path}: {self.lost_count} passed then, skipped now")
            out.extend(f"  LOST {result.name}: {result.reason}" for result in self.lost)
            if self.lost_count > len(self.lost):
                out.append(f"  ... and {self.lost_count - len(self.lost)} more")
        out.append("baseline: " + ", ".join(f"{self.counts[s]} {s}" for s in STATUSES))
        return out
