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

A streak of crashes is not yet a crash loop: a driver that segfaults on one
operation crashes in every case of the models holding it, ten in a row and
more, and is otherwise sound.  So when the threshold is reached on a driver
host, the guard first runs a *canary* alone on a fresh host, once, not re-run:
the last case of the generated family the driver passed in this run (a case
that executes its model: a validation case passes on a build that crashes on
every execution), else the first of the hand-made
ADD models of ``vts.families`` (float32, float16, quantized) the generated
family does not skip.  The canary passes: the streak was the driver's bug in
those cases, which keep their crash verdicts, the counts start again and the
run goes on; the operations and operand types of the streak's cases are
remembered, and a later case of the same labels that crashes is not re-run
alone (its crash is known to reproduce; it saves a host start).  The canary
crashes too (or no canary passes): the crash loop is declared as before.  The
canary's result is no case of the run; the case that reached the threshold
says in its details what the canary did.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vts.families.base import Case, Family, Outcome
from vts.results import CaseResult, Verdict

#: Labels of a case: (operation names, operand type names) of its model.
Labels = tuple[tuple[str, ...], tuple[str, ...]]
#: The family whose passed cases serve as canaries: each executes its model and judges the outputs.
CANARY_FAMILY = "generated"

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
        self.tripped = self.streak(result)

    def streak(self, result: CaseResult) -> str | None:
        """Why the counts reached the threshold with ``result`` the last case seen (None: they did not)."""
        policy = self.policy
        lost = lost_host(result)
        last = f"the last: {result.verdict.value}: {result.reason}" if lost else ""
        if self.consecutive >= policy.max_consecutive:
            return (f"not run: the driver is in a crash loop (its host died in {self.consecutive} cases in "
                    f"a row; {last})")
        if len(self.recent) == policy.window and sum(self.recent) > policy.max_share * policy.window:
            return (f"not run: the driver is in a crash loop (its host died in {sum(self.recent)} of the "
                    f"last {policy.window} cases; {last or 'the last case survived'})")
        return None

    def forgive(self) -> None:
        """A canary passed: the streak was the driver's bug in those cases; the counts start again."""
        self.tripped = None
        self.consecutive = 0
        self.recent.clear()

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


class Canary:
    """The canary of a streak on a driver host: a case run alone, on a fresh host, once (no re-run).

    Runs below every wrapper of ``run_case`` (the runner class's own method), so neither re-runs nor
    the guard itself see it, and it is no result of the run.
    """

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        #: The last case of the generated family the driver passed in this run (None: none yet).
        self.passed: tuple[Family, Case] | None = None
        #: Labels of the cases in streaks a canary forgave: their crashes are not re-run alone.
        self.known: set[Labels] = set()
        self.runs = 0

    def note(self, family: Family, case: Case, result: CaseResult) -> None:
        # Only a golden execution: a validation case passes on a build that crashes on every execution
        # (the driver refuses the invalid model before running anything), so it proves nothing.
        if result.verdict is Verdict.PASSED and case.model is not None and family.name == CANARY_FAMILY:
            self.passed = (family, case)

    def candidates(self) -> list[tuple[Family, Case]]:
        if self.passed is not None:
            return [self.passed]
        from vts.families import add_models  # the fallback: hand-made ADDs, run by the generated family
        from vts.families.generated import GeneratedFamily

        family = GeneratedFamily()
        return [(family, case) for model in add_models("canary_add")
                for case in family.model_cases(model, "<canary>")]

    def fly(self, run_alone: Callable[[Family, Case], CaseResult]) -> tuple[bool, str]:
        """(whether a canary passed, what happened): the passed case first, else each ADD until one runs."""
        said = []
        for family, case in self.candidates():
            self.runs += 1
            result = run_alone(family, case)
            said.append(f"{case.name}: {result.verdict.value}" + (f" ({result.reason})" if result.reason else ""))
            if result.verdict is Verdict.PASSED:
                return True, "; ".join(said)
            if result.verdict is not Verdict.SKIPPED:  # a crash (or any failure) on a fresh host: no more canaries
                break
        return False, "; ".join(said) or "no canary case"


def install_crash_guard(runner: Any, policy: CrashLoopPolicy | None) -> CrashLoopGuard | None:
    """Wrap ``runner.run_case`` (after re-runs, so the guard sees each case's final verdict).

    Once the guard has tripped, a case is answered without running it: no
    host restart, no re-run, no driver call.  The host is stopped at once,
    so a dying driver holds nothing while the rest of the cases are listed.
    On a driver host, a canary decides first whether the streak is a loop
    (the module's docstring).
    """
    if policy is None or not policy.enabled:
        return None
    guard = CrashLoopGuard(policy)
    inner: RunCase = runner.run_case
    make_result = runner._result
    host = getattr(runner, "host", None)
    canary = Canary(runner) if host is not None and hasattr(runner, "rerun_crashes") else None

    def run_alone(family: Family, case: Case) -> CaseResult:
        assert host is not None
        host.stop()  # a fresh host for the canary, whatever the streak left behind
        rerun = runner.rerun_crashes
        runner.rerun_crashes = False
        try:
            return type(runner).run_case(runner, family, case)
        finally:
            runner.rerun_crashes = rerun

    def run_known(family: Family, case: Case) -> CaseResult:
        """A case whose labels crashed in a forgiven streak: its crash is not re-run alone."""
        rerun = runner.rerun_crashes
        runner.rerun_crashes = False
        try:
            result = inner(family, case)
        finally:
            runner.rerun_crashes = rerun
        if result.verdict is Verdict.CRASH:
            result = _noted(result, "not re-run alone: cases of the same operations and operand types crashed "
                                    "earlier in this run while a canary passed")
        return result

    def run_case(family: Family, case: Case) -> CaseResult:
        if guard.tripped is not None:
            return make_result(case, guard.outcome(), 0.0)
        known = canary is not None and case.model is not None and case.labels() in canary.known
        result = run_known(family, case) if known else inner(family, case)
        if canary is not None:
            canary.note(family, case, result)
            if lost_host(result) and case.model is not None:
                streak.append(case.labels())
        guard.observe(result)
        if guard.tripped is not None and canary is not None:
            survived, said = canary.fly(run_alone)
            if survived:
                guard.forgive()
                canary.known.update(streak)
                streak.clear()
                result = _noted(result, f"the crash-loop limit ({guard.policy.describe()}) was reached, but a "
                                        f"canary run alone on a fresh host passed ({said}): the crashes are the "
                                        "driver's bug in those cases, not a crash loop, and the run goes on")
            else:
                guard.tripped = f"{guard.tripped}; a canary run alone on a fresh host did not pass: {said}"
        if guard.tripped is not None and host is not None:
            host.stop()
        return result

    streak: collections.deque[Labels] = collections.deque(maxlen=max(policy.window, policy.max_consecutive))
    runner.run_case = run_case
    runner.crash_guard = guard
    runner.crash_canary = canary
    return guard


def _noted(result: CaseResult, note: str) -> CaseResult:
    return dataclasses.replace(result, details=(*result.details, note))
