"""Crash loops: a driver whose host keeps dying stops costing a restart and a re-run per case.

Each case during which the driver host was lost (``crash``, ``timeout``,
``unreproduced_crash``) costs the run a host restart, and a crash a re-run
alone on a fresh host as well: about two seconds a case.  A build broken
everywhere would take hours to be told so.  ``CrashLoopGuard`` watches the
verdicts as they come; once the driver has lost its host in
``max_consecutive`` cases in a row, or in more than ``max_share`` of the
last ``window`` cases, it declares a crash loop: every remaining case gets
the ``crash_loop`` verdict (not run, fails the run) without touching the
driver, and the run ends within seconds.

Below the threshold nothing changes: a single crash is still re-run alone
(and may end as ``unreproduced_crash``), because that is how real flakes are
caught.  The guard wraps a runner's ``run_case``, as re-runs do, so the run
loop, ``-j`` workers and the pytest plugin share it.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vts.families.base import Case, Family, Outcome
from vts.results import CaseResult, Verdict

#: Verdicts of a case during which the driver host died or had to be killed.
HOST_LOST = frozenset({Verdict.CRASH, Verdict.TIMEOUT, Verdict.UNREPRODUCED_CRASH})


@dataclass(frozen=True)
class CrashLoopPolicy:
    """When a driver counts as being in a crash loop (plain data: travels to ``-j`` workers).

    ``max_consecutive`` 0 turns the guard off.  The share is taken over a
    full window only, so the first few cases of a run cannot trip it alone.
    """

    max_consecutive: int = 10
    max_share: float = 0.5
    window: int = 50

    @property
    def enabled(self) -> bool:
        return self.max_consecutive > 0

    def describe(self) -> str:
        return (f"{self.max_consecutive} in a row, or more than {self.max_share:.0%} of the last {self.window} "
                "cases")


def lost_host(result: CaseResult) -> bool:
    """Whether the driver host died (or was killed) during this case, on any attempt."""
    if result.verdict in HOST_LOST:
        return True
    attempts = result.extra.get("attempts") if isinstance(result.extra, dict) else None
    return bool(attempts) and any(isinstance(a, dict) and a.get("verdict") in ("crash", "timeout")
                                  for a in attempts)


class CrashLoopGuard:
    """Counts host deaths over the cases as they end; says when the driver is in a crash loop."""

    def __init__(self, policy: CrashLoopPolicy) -> None:
        self.policy = policy
        self.consecutive = 0
        self.recent: collections.deque[bool] = collections.deque(maxlen=max(policy.window, 1))
        self.deaths = 0
        self.cases = 0
        #: Why the loop was declared (None until it is); the reason of every case not run.
        self.tripped: str | None = None
        self.not_run = 0

    def observe(self, result: CaseResult) -> None:
        lost = lost_host(result)
        self.cases += 1
        self.deaths += lost
        self.consecutive = self.consecutive + 1 if lost else 0
        self.recent.append(lost)
        if self.tripped is not None or not self.policy.enabled:
            return
        policy = self.policy
        last = f"the last: {result.verdict.value}: {result.reason}" if lost else ""
        if self.consecutive >= policy.max_consecutive:
            self.tripped = (f"not run: the driver is in a crash loop (its host died in {self.consecutive} cases in "
                            f"a row; {last})")
        elif len(self.recent) == policy.window and sum(self.recent) > policy.max_share * policy.window:
            self.tripped = (f"not run: the driver is in a crash loop (its host died in {sum(self.recent)} of the "
                            f"last {policy.window} cases; {last or 'the last case survived'})")

    def observe_survivor(self) -> None:
        """A case the host survived, known only by that (``observe`` without the result: it cannot trip)."""
        self.cases += 1
        self.consecutive = 0
        self.recent.append(False)

    def outcome(self) -> Outcome:
        """The verdict of a case not run because of the loop."""
        assert self.tripped is not None
        self.not_run += 1
        return Outcome(Verdict.CRASH_LOOP, self.tripped,
                       (f"the crash-loop limit is {self.policy.describe()} (--max-crashes, --max-crash-share)",))


RunCase = Callable[[Family, Case], CaseResult]


def install_crash_guard(runner: Any, policy: CrashLoopPolicy | None) -> CrashLoopGuard | None:
    """Wrap ``runner.run_case`` (after re-runs, so the guard sees each case's final verdict).

    Once the guard has tripped, a case is answered without running it: no
    host restart, no re-run, no driver call.  The host is stopped at once,
    so a dying driver holds nothing while the rest of the cases are listed.
    """
    if policy is None or not policy.enabled:
        return None
    guard = CrashLoopGuard(policy)
    inner: RunCase = runner.run_case
    make_result = runner._result
    host = getattr(runner, "host", None)

    def run_case(family: Family, case: Case) -> CaseResult:
        if guard.tripped is not None:
            return make_result(case, guard.outcome(), 0.0)
        result = inner(family, case)
        guard.observe(result)
        if guard.tripped is not None and host is not None:
            host.stop()
        return result

    runner.run_case = run_case
    runner.crash_guard = guard
    return guard
