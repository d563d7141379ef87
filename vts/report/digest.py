"""What a person reading a run wants to know, gathered in one pass over the results in bounded memory.

A ``Digest`` is fed results one at a time (live by the terminal, from the
stream by the HTML report) and keeps counts, a family × operation × operand
type grid, the slowest cases, and the first failures, flaky cases and
baseline changes in full.  Every list has a cap and a count of what fell
beyond it, so a million-case sweep costs the same memory as a small run.

Verdicts are handled by value, never from a closed list: a verdict added
later (flaky, unreproduced_crash, ...) is counted and shown like any other,
toned by ``Verdict.is_failure``.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vts.report.causes import CauseTally
from vts.report.sanitize import clean
from vts.results import CaseResult, Verdict

if TYPE_CHECKING:
    from vts.report.batch import PlainTally

#: Failures kept in full (with comparison detail); the rest are counted and listed by name only.
MAX_FAILURES_KEPT = 500
MAX_FLAKY_KEPT = 200
MAX_BASELINE_KEPT = 200
SLOWEST_KEPT = 20
#: Distinct (family, operation, operand type) cells before further ones are pooled as "(other)".
MAX_GRID_CELLS = 20000
OPERATION_LABEL_LIMIT = 60

#: The verdicts that mean "not run as such" (not counted in a pass rate).
NOT_RUN = frozenset({"skipped", "xfail"})

BASELINE_ORDER = ("new-failure", "still-failing", "fixed", "new", "lost-coverage", "still-passing")
#: Distinct failure reasons counted before further ones are pooled.
MAX_FAILURE_GROUPS = 2000


def tone(verdict: Verdict | str) -> str:
    """A display class for a verdict: pass, fail, skip or other (flaky, anything new and not failing)."""
    value = verdict.value if isinstance(verdict, Verdict) else verdict
    if value == "passed":
        return "pass"
    if value in NOT_RUN:
        return "skip"
    try:
        failing = Verdict(value).is_failure
    except ValueError:
        failing = False
    return "fail" if failing else "other"


def verdict_order(values: list[str] | set[str]) -> list[str]:
    """Verdict values in the enum's order, unknown ones after (alphabetically)."""
    known = [v.value for v in Verdict]
    return [v for v in known if v in values] + sorted(set(values) - set(known))


def is_flaky(result: CaseResult) -> bool:
    return result.verdict.value == "flaky" or len(attempts_of(result)) > 1


def attempts_of(result: CaseResult) -> list[dict[str, object]]:
    attempts = result.extra.get("attempts")
    return [a for a in attempts if isinstance(a, dict)] if isinstance(attempts, list) else []


#: Where a case name says its model's inputs were fed through helper ADDs (Android's lifetime variation).
HELPER_ADD_MARKERS = ("inputs_as_internal",)


def operation_under_test(result: CaseResult) -> tuple[str, ...]:
    """The model's operations without the ADDs a lifetime variation inserted in front of its inputs.

    ``all_inputs_as_internal`` feeds every input through ``ADD(x, 0)``, so a CONV_2D case's model
    holds ADD and CONV_2D; the row a vendor looks for is CONV_2D.  The ADD stays where it is the
    only operation (the ADD tests' own variations).
    """
    operations = result.operations
    if ("ADD" in operations and len(operations) > 1
            and any(marker in f"{result.name} {result.spec}" for marker in HELPER_ADD_MARKERS)):
        operations = tuple(op for op in operations if op != "ADD")
    return operations


def keep_slowest(heap: list, entry: tuple, limit: int = SLOWEST_KEPT) -> None:
    """Keep ``entry`` in ``heap`` (a min-heap of at most ``limit`` entries) if it is among the largest so far.

    Entries are compared whole (duration, then what follows it: the digest's sequence number), so the
    heap ends as the ``limit`` largest whatever order they came in, and heaps of consecutive parts of a
    run merge exactly (``Digest.merge``): of equal durations, the later cases stay.
    """
    if len(heap) < limit:
        heapq.heappush(heap, entry)
    elif entry > heap[0]:
        heapq.heapreplace(heap, entry)


def grid_key(result: CaseResult) -> tuple[str, str, str]:
    operation = ",".join(operation_under_test(result)) or "-"
    if len(operation) > OPERATION_LABEL_LIMIT:
        operation = operation[:OPERATION_LABEL_LIMIT - 1] + "…"
    return result.family, operation, ",".join(result.operand_types) or "-"


@dataclass
class Digest:
    counts: Counter[str] = field(default_factory=Counter)
    by_family: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    grid: dict[tuple[str, str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    failures: list[CaseResult] = field(default_factory=list)
    failing: int = 0
    flaky: list[CaseResult] = field(default_factory=list)
    flaky_count: int = 0
    baseline: Counter[str] = field(default_factory=Counter)
    baseline_cases: dict[str, list[CaseResult]] = field(default_factory=lambda: defaultdict(list))
    #: Failing cases by verdict and reason: [count, example case, whether it is a new failure, its position].
    failure_groups: dict[str, list[object]] = field(default_factory=dict)
    #: Whether a grid cell or a failure reason was pooled (a cap was reached): ``merge`` is then inexact.
    pooled: bool = False
    #: Time in cases, in whole microseconds: a sum that does not depend on the order it is taken in.
    case_us: int = 0
    #: The failures by root cause (``vts.report.causes``).
    causes: CauseTally = field(default_factory=CauseTally)
    _slowest: list[tuple[float, int, str, str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def case_time(self) -> float:
        return self.case_us / 1e6

    def _count(self, key: tuple[str, str, str], value: str, count: int, seconds: float) -> None:
        """``count`` results of verdict ``value`` in grid cell ``key``, taking ``seconds`` in all."""
        family = key[0]
        self.counts[value] += count
        self.by_family[family][value] += count
        if key not in self.grid and len(self.grid) >= MAX_GRID_CELLS:
            key, self.pooled = (family, "(other)", "-"), True
        self.grid[key][value] += count
        self.case_us += round(seconds * 1e6)

    def add(self, result: CaseResult) -> None:
        value = result.verdict.value
        self._count(grid_key(result), value, 1, result.duration)
        keep_slowest(self._slowest, (result.duration, self.total, result.name, result.family, value))
        if result.verdict.is_failure:
            self.failing += 1
            self.causes.add(result)
            if len(self.failures) < MAX_FAILURES_KEPT:
                self.failures.append(result)
            reason = clean(f"{value}: {result.reason}", 300)
            if reason not in self.failure_groups and len(self.failure_groups) >= MAX_FAILURE_GROUPS:
                reason, self.pooled = "(other reasons)", True
            group = self.failure_groups.setdefault(reason, [0, result, False, self.total])
            group[0] = int(group[0]) + 1  # type: ignore[call-overload]
            if result.extra.get("baseline") == "new-failure" and not group[2]:
                group[1:] = [result, True, self.total]  # a new failure speaks for its group
        if is_flaky(result):
            self.flaky_count += 1
            if len(self.flaky) < MAX_FLAKY_KEPT:
                self.flaky.append(result)
        status = result.extra.get("baseline")
        if isinstance(status, str):
            status = clean(status, 64)
            self.baseline[status] += 1
            kept = self.baseline_cases[status]
            if status in ("new-failure", "fixed", "lost-coverage") and len(kept) < MAX_BASELINE_KEPT:
                kept.append(result)

    def add_plain(self, tally: PlainTally) -> None:
        """Plain results a ``-j`` worker tallied (``vts.report.batch``): as if each were added."""
        for (family, operation, types, value), (count, seconds) in tally.cells.items():
            self._count((family, operation, types), value, int(count), seconds)
        total = self.total
        for duration, name, family, value in tally.slowest:
            keep_slowest(self._slowest, (duration, total, name, family, value))

    def merge(self, later: Digest) -> None:
        """Add ``later``, the digest of the results that follow this one's, as if each had been added here.

        Exact when ``later`` pooled nothing itself (``later.pooled`` false): each of its cells and failure
        reasons then holds all of its results, and is placed as this digest would place it at its first
        result (a cell or reason it already has, a new one while there is room, else the pool).  Kept
        cases stay in order within their caps; the slowest are re-sequenced after this digest's results.
        """
        offset = self.total
        for key, counts in later.grid.items():
            for value, count in counts.items():
                self._count(key, value, count, 0.0)
        self.case_us += later.case_us
        self.pooled = self.pooled or later.pooled
        for duration, sequence, name, family, value in later._slowest:
            keep_slowest(self._slowest, (duration, sequence + offset, name, family, value))
        self.failing += later.failing
        self.causes.merge(later.causes)
        self.failures.extend(later.failures[:MAX_FAILURES_KEPT - len(self.failures)])
        for reason, (count, example, new, position) in later.failure_groups.items():
            if reason not in self.failure_groups and len(self.failure_groups) >= MAX_FAILURE_GROUPS:
                reason, self.pooled = "(other reasons)", True
            group = self.failure_groups.get(reason)
            mine = [count, example, new, int(position) + offset]  # type: ignore[call-overload]
            if group is None:
                self.failure_groups[reason] = mine
                continue
            group[0] = int(group[0]) + int(count)  # type: ignore[call-overload]
            # A group speaks through its first new failure, else its first case: whichever came first.
            if (not new, mine[3]) < (not group[2], group[3]):
                group[1:] = mine[1:]
        self.flaky_count += later.flaky_count
        self.flaky.extend(later.flaky[:MAX_FLAKY_KEPT - len(self.flaky)])
        self.baseline.update(later.baseline)
        for status, cases in later.baseline_cases.items():
            kept = self.baseline_cases[status]
            kept.extend(cases[:MAX_BASELINE_KEPT - len(kept)])

    def grouped_failures(self) -> list[tuple[str, int, CaseResult, bool]]:
        """(reason, count, example case, holds a new failure): new failures' reasons first, then the commonest."""
        groups = [(reason, int(count), first, bool(new))  # type: ignore[call-overload]
                  for reason, (count, first, new, _) in self.failure_groups.items()]
        return sorted(groups, key=lambda g: (not g[3], -g[1], g[0]))  # type: ignore[return-value]

    def slowest(self) -> list[tuple[float, str, str, str]]:
        """(duration, name, family, verdict), slowest first."""
        return [(d, n, f, v) for d, _, n, f, v in sorted(self._slowest, reverse=True)]

    def verdicts(self) -> list[str]:
        return verdict_order(set(self.counts))


def pass_rate(counts: Counter[str]) -> float | None:
    """Share of the cases that ran (skips and expected failures aside) that did not fail; None if none ran."""
    ran = sum(n for v, n in counts.items() if v not in NOT_RUN)
    if ran == 0:
        return None
    failed = sum(n for v, n in counts.items() if v not in NOT_RUN and tone(v) == "fail")
    return (ran - failed) / ran
