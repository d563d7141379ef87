"""The results protocol: a closed set of verdicts and one record per case.

Reporters are pure consumers of ``CaseResult`` records; nothing downstream
parses human-readable text (the lesson of log-scraping runners).  The
serialized form is versioned (``RESULTS_SCHEMA_VERSION``) and its keys are
stable, because CI jobs and other tools read the JSON report.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

RESULTS_SCHEMA_VERSION = 1


class Verdict(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"  # the harness could not run the case (not the driver's fault)
    CRASH = "crash"  # the driver process died
    TIMEOUT = "timeout"  # the driver did not answer within the case time limit
    XFAIL = "xfail"  # failed, and listed as an expected failure
    XPASS = "xpass"  # passed, but listed as an expected failure
    FLAKY = "flaky"  # failed, then did not fail when re-run alone (--reruns); fails only with --fail-on-flaky
    #: The driver host died during the case, and the case passed when the harness re-ran it alone on a
    #: fresh host.  Not a pass: a driver that dies (a crash, the --memory-limit kill of a leak) on a
    #: valid request broke the HAL contract even if the death does not repeat; fails the run unless
    #: ``--allow-unreproduced-crashes``.  Not FLAKY either (a failure the *user* asked to re-run).
    UNREPRODUCED_CRASH = "unreproduced_crash"
    #: Not run: the driver host had died in too many cases in a row (or too large a share of the last
    #: ones) for another restart to be worth it (vts/run/crashloop.py).  Fails the run: a case a driver
    #: build cannot be asked is not a pass.
    CRASH_LOOP = "crash_loop"

    @property
    def is_failure(self) -> bool:
        """Verdicts that make the run fail (exit status 1)."""
        return self in _FAILING


_FAILING = frozenset({Verdict.FAILED, Verdict.ERROR, Verdict.CRASH, Verdict.TIMEOUT, Verdict.XPASS,
                      Verdict.UNREPRODUCED_CRASH, Verdict.CRASH_LOOP})
VERDICT_ORDER = tuple(Verdict)


@dataclass(frozen=True, slots=True)
class CaseResult:
    name: str
    family: str
    verdict: Verdict
    reason: str = ""
    duration: float = 0.0
    details: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    operand_types: tuple[str, ...] = ()
    spec: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "family": self.family,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "duration": round(self.duration, 6),
            "spec": self.spec,
            "operations": list(self.operations),
            "operand_types": list(self.operand_types),
        }
        if self.details:
            data["details"] = list(self.details)
        if self.extra:
            data["extra"] = self.extra
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseResult:
        return cls(
            name=data["name"],
            family=data["family"],
            verdict=Verdict(data["verdict"]),
            reason=data.get("reason", ""),
            duration=float(data.get("duration", 0.0)),
            details=tuple(data.get("details", ())),
            operations=tuple(data.get("operations", ())),
            operand_types=tuple(data.get("operand_types", ())),
            spec=data.get("spec", ""),
            extra=dict(data.get("extra", {})),
        )


def summarize(results: Iterable[CaseResult]) -> dict[str, int]:
    """A count per verdict (every verdict present, zeros included) and ``total``."""
    counts = Counter(r.verdict for r in results)
    summary = {v.value: counts.get(v, 0) for v in VERDICT_ORDER}
    summary["total"] = sum(counts.values())
    return summary
