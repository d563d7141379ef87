"""``--reruns N``: re-run an unexpectedly failing case alone on a fresh driver, and call out flakes.

A case that fails and then passes is not a pass and not a failure: it is
``flaky``, with every attempt kept in ``extra["attempts"]`` so the vendor
sees what happened.  Each re-run starts from a fresh driver host (the
previous one is restarted), so the case runs alone: a state the driver
kept from earlier cases cannot be what makes it pass or fail.  In process
(``--in-process``) there is no host to restart; the case re-runs on the
same device.

Expected failures (xfail) and unexpected passes (xpass) are not re-run:
neither is a failure to reproduce; nor is an unreproduced crash (the
isolated runner's own re-run already happened).  Flaky does not fail the run (as with
pytest-rerunfailures) unless ``--fail-on-flaky`` is given.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from vts.families.base import Case, Family
from vts.results import CaseResult, Verdict

RunCase = Callable[[Family, Case], CaseResult]


#: Failing verdicts a re-run cannot change: an unexpected pass (the list is stale, not the driver), and a
#: crash that the isolated runner already re-ran alone without reproducing it (its own verdict, which a
#: further passing attempt must not turn into "flaky").
_NOT_RERUN = frozenset({"xpass", "unreproduced_crash"})


def should_rerun(result: CaseResult) -> bool:
    return result.verdict.is_failure and result.verdict.value not in _NOT_RERUN


def attempt_record(result: CaseResult) -> dict[str, Any]:
    return {"verdict": result.verdict.value, "reason": result.reason, "duration": round(result.duration, 6)}


def combine_attempts(attempts: list[CaseResult]) -> CaseResult:
    """One result for all attempts of a case.

    Every attempt failed: the first failure stands (it happened in the real
    run).  Some re-run did not fail: ``flaky``, with the first failure as
    the reason.  Durations add up (it is what the case cost the run).
    """
    first, last = attempts[0], attempts[-1]
    total = sum(a.duration for a in attempts)
    extra = {**first.extra, "attempts": [attempt_record(a) for a in attempts]}
    if last.verdict.is_failure:
        details = (*first.details, f"failed all {len(attempts)} attempts (re-run alone on a fresh driver)")
        return dataclasses.replace(first, duration=total, details=details, extra=extra)
    reason = f"{last.verdict.value} on attempt {len(attempts)} after {first.verdict.value}: {first.reason}"
    return dataclasses.replace(last, verdict=Verdict.FLAKY, reason=reason, duration=total,
                               details=first.details, extra={**last.extra, "attempts": extra["attempts"]})


class Rerunner:
    """Wraps a runner's ``run_case`` with re-runs; ``restart`` gives the next attempt a fresh driver."""

    def __init__(self, run_case: RunCase, reruns: int, restart: Callable[[], None] | None = None) -> None:
        self.inner = run_case
        self.reruns = reruns
        self.restart = restart

    def run_case(self, family: Family, case: Case) -> CaseResult:
        result = self.inner(family, case)
        if self.reruns <= 0 or not should_rerun(result):
            return result
        attempts = [result]
        for _ in range(self.reruns):
            if self.restart is not None:
                self.restart()
            attempts.append(self.inner(family, case))
            if not attempts[-1].verdict.is_failure:
                break
        return combine_attempts(attempts)


def install_reruns(runner: Any, reruns: int) -> None:
    """Give ``runner`` (a ``Runner`` or ``IsolatedRunner``) re-runs; its ``run`` loop then uses them.

    The runner's ``run`` calls ``self.run_case``; an instance attribute of
    that name takes precedence over the method, which keeps the runner
    classes unaware of re-runs.
    """
    if reruns <= 0:
        return
    host = getattr(runner, "host", None)
    restart = None
    if host is not None:
        def restart() -> None:
            # A host that will not start again is the attempt's ERROR verdict (the runner asks for
            # its device and gets the start error); it must not end the run here.
            with contextlib.suppress(Exception):
                host.restart()
    runner.run_case = Rerunner(runner.run_case, reruns, restart).run_case
