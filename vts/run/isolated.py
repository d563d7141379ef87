"""Running cases against a driver in its own process (the default of ``nnvts run``).

The case runs on the calling thread against a ``ProxyDevice``; every call
to the driver is bounded by the case deadline, so a hung driver ends in
``DriverTimeout`` rather than a stuck harness, and a dead one in
``DriverCrashed`` with the signal or exit status.  Either way the host is
killed and a fresh one serves the next case.

A case that was running when the host died is re-run once, alone, on a
fresh host before it is called a crash: the death may have been caused by
something earlier (an asynchronous execution of a previous case crashing
late), and a case must only be blamed for what it does by itself.  A death
that does not repeat is still never reported as a pass: the case ends as
UNREPRODUCED_CRASH (``unreproduced_crash_outcome``).
Timeouts are not re-run: a second attempt would cost the full limit again
and a driver that hangs is rarely flaky about it.

Whenever a host ends, the processes its driver left behind are killed with
it (``HostProcess.take_leftovers``) and named in the details of the case
during which that happened; those still there when the run ends are named
in a closing result, ``harness/driver_leftovers``.
"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass

from vts.families.base import Case, Family, Outcome
from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout, ProtocolViolation
from vts.ipc.process import HostProcess, HostStartError
from vts.results import CaseResult, Verdict
from vts.run import runner as base

#: Extra seconds past the case deadline before the harness stops waiting on
#: its own side (family code blocked on something other than a driver call).
BACKSTOP_GRACE = 2.0


def lost_outcome(failure: DriverLost, timeout: float) -> Outcome:
    """The verdict for a case during which the driver host was lost."""
    if isinstance(failure, DriverTimeout):
        return Outcome(Verdict.TIMEOUT, f"no answer within {timeout:g} s",
                       (failure.reason, "the driver host was killed and restarted"))
    if isinstance(failure, ProtocolViolation):
        return Outcome(Verdict.CRASH, failure.reason,
                       ("the connection was dropped and the driver host restarted (docs/protocol.md §8.1)",))
    tail = failure.stderr_tail if isinstance(failure, DriverCrashed) else ()
    return Outcome(Verdict.CRASH, f"driver crashed: {failure.reason}", tuple(tail))


def with_leftovers(outcome: Outcome, leftovers: list[str]) -> Outcome:
    """Name the processes of an ended host that had to be killed (they would have outlived it)."""
    if not leftovers:
        return outcome
    note = (f"the driver host left {len(leftovers)} process(es) running, killed by the harness: "
            + "; ".join(leftovers[:20]) + (f"; and {len(leftovers) - 20} more" if len(leftovers) > 20 else ""))
    return Outcome(outcome.verdict, outcome.reason, (*outcome.details, note),
                   {**outcome.extra, "leftover_processes": list(leftovers[:100])})


def unreproduced_crash_outcome(first: Outcome, rerun: Outcome) -> Outcome:
    """The verdict of a case whose host died on the first attempt but not when re-run alone.

    A re-run that fails (or times out) keeps its own verdict: that failure
    reproduces.  A re-run that passes (or is skipped) does not make the
    case a pass: the driver died while serving it, which the HAL never
    allows, so the case is UNREPRODUCED_CRASH with the death as its reason
    and the re-run's result in the details.
    """
    note = (f"the driver host died during the first attempt ({first.reason}); the case was then re-run alone "
            f"on a fresh host: {rerun.verdict.value}" + (f" ({rerun.reason})" if rerun.reason else ""))
    extra = {**rerun.extra, "host_died_first_attempt": first.reason, "rerun_verdict": rerun.verdict.value}
    if rerun.verdict.is_failure:
        return Outcome(rerun.verdict, rerun.reason, (*rerun.details, note), extra)
    return Outcome(Verdict.UNREPRODUCED_CRASH,
                   f"the driver host died during the case ({first.reason}) but not when it was re-run alone",
                   (note, *first.details), extra)


def _rerun_alone(first: Outcome, rerun: Outcome) -> Outcome:
    """The verdict of a case whose host was lost while it waited for a batch shared with later cases' calls.

    The loss may be a later case's doing (the host serves a batch's calls in order and answers them
    together), so the first attempt does not count: the case is judged on its re-run alone, with a note.
    """
    note = (f"the driver host was lost ({first.reason}) while this case waited for a batch that also held the "
            f"calls of the cases after it; the case was re-run alone on a fresh host: {rerun.verdict.value}")
    extra = {key: value for key, value in rerun.extra.items() if key != "lost_in_shared_batch"}
    return Outcome(rerun.verdict, rerun.reason, (*rerun.details, note),
                   {**extra, "lost_in_shared_batch_first": first.reason})


@dataclass(frozen=True)
class _EarlierDeath:
    """The host was found dead before the case started: why, and what to say about it."""

    died: str
    note: str

    def noted(self, outcome: Outcome) -> Outcome:
        """``outcome`` saying so (once: an unreproduced crash already carries its first attempt's details)."""
        details = outcome.details if self.note in outcome.details else (*outcome.details, self.note)
        return Outcome(outcome.verdict, outcome.reason, details, {**outcome.extra, "host_died_before_case": self.died})


@dataclass
class IsolatedRunner(base.Runner):
    """A ``Runner`` whose device is a driver host process (``host``), restarted after each loss."""

    host: HostProcess | None = None
    rerun_crashes: bool = True

    def run_case(self, family: Family, case: Case) -> CaseResult:
        start = time.perf_counter()
        earlier_death = self._earlier_death()
        outcome = self._attempt(family, case, earlier_death)
        if outcome.extra.get("lost_in_shared_batch") and self.rerun_crashes:
            outcome = _rerun_alone(outcome, self._attempt(family, case, None))
            if earlier_death is not None:
                outcome = earlier_death.noted(outcome)
        elif outcome.verdict is Verdict.CRASH and self.rerun_crashes:
            first = outcome
            outcome = self._attempt(family, case, None)
            if outcome.verdict is Verdict.CRASH:
                outcome = Outcome(outcome.verdict, outcome.reason,
                                  (*outcome.details, "crashed again when re-run alone on a fresh driver host"),
                                  outcome.extra)
            else:
                outcome = unreproduced_crash_outcome(first, outcome)
            if earlier_death is not None:  # a first attempt that crashed always said it
                outcome = earlier_death.noted(outcome)
        return self._result(case, outcome, time.perf_counter() - start)

    def _earlier_death(self) -> _EarlierDeath | None:
        """Whether the host ended before this case, read before anything restarts it (None: it did not).

        Recorded so the death is not silent.  With no call in flight it was not this case's doing (it had
        not started); with calls sent ahead for the cases to come (the validation sweep), it may have been
        one of them, which then runs alone on the fresh host and is judged on its own.
        """
        assert self.host is not None, "IsolatedRunner needs a host"
        died = self.host.died_unnoticed()
        if died is None:
            return None
        held = self.host.calls_in_flight()
        note = (f"the driver host had died after the previous case ({died}) and was restarted for this one"
                if not held else
                f"the driver host died after the previous case ({died}) while it held {held} call(s) sent "
                "ahead for the cases after it; it was restarted, and this case ran alone on it")
        return _EarlierDeath(died, note)

    def _attempt(self, family: Family, case: Case, earlier_death: _EarlierDeath | None) -> Outcome:
        assert self.host is not None, "IsolatedRunner needs a host"
        timeout = self.options.case_timeout
        try:
            device = self.host.device
        except HostStartError as error:
            return with_leftovers(Outcome(Verdict.ERROR, f"harness: cannot restart the driver host: {error}"),
                                  self.host.take_leftovers())
        # Killed with a host that ended before this case (not this case's doing, but never silent).
        earlier = self.host.take_leftovers()
        connection = device.connection
        connection.deadline = time.monotonic() + timeout
        try:
            outcome = self._guarded(family, case, device)
        finally:
            connection.deadline = None
        if earlier:
            outcome = with_leftovers(outcome, earlier)
        self.host.trim_log()
        failure = connection.failure
        if failure is not None:
            self.host.kill(failure)
            outcome = with_leftovers(lost_outcome(failure, timeout), [*earlier, *self.host.take_leftovers()])
            if connection.lost_in_shared_batch:
                outcome = Outcome(outcome.verdict, outcome.reason, outcome.details,
                                  {**outcome.extra, "lost_in_shared_batch": True})
        if earlier_death is not None:
            outcome = earlier_death.noted(outcome)
        if failure is not None:
            return outcome
        if outcome.verdict in (Verdict.CRASH, Verdict.TIMEOUT):
            # A loss the current host did not suffer: the case used an object of an earlier host
            # (a family cached it across a restart).  That is the harness's problem, not the driver's.
            return Outcome(Verdict.ERROR, f"harness: a driver object of an earlier, restarted host was used "
                           f"({outcome.reason})")
        return outcome

    def _guarded(self, family: Family, case: Case, device: object) -> Outcome:
        """Run the case here; a backstop ends it if the harness side itself stops returning."""
        limit = self.options.case_timeout + BACKSTOP_GRACE
        if base._can_use_alarm():
            previous = base.arm_case_alarm(limit, self._alarm_held)
            try:
                return base.run_family_case(family, case, device, self.options)  # type: ignore[arg-type]
            except base._CaseTimeout:
                return self._backstop()
            finally:
                base.disarm_case_alarm(previous)
        future = self._worker().submit(base.run_family_case, family, case, device, self.options)
        try:
            return future.result(timeout=limit)
        except concurrent.futures.TimeoutError:
            outcome = self._backstop()
            try:
                future.result(timeout=BACKSTOP_GRACE)  # killing the host released its calls
            except concurrent.futures.TimeoutError:
                self._pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[union-attr]
                self._pool = None
            return outcome

    def closing_results(self) -> list[CaseResult]:
        """Stop the host after the last case: what its driver leaves running is a closing result."""
        if self.host is None:
            return []
        self.host.stop()
        leftovers = self.host.take_leftovers()
        if not leftovers:
            return []
        return [CaseResult(
            name="harness/driver_leftovers", family="harness", verdict=Verdict.FAILED,
            reason=f"the driver left {len(leftovers)} process(es) running after its host ended; the harness "
                   "killed them",
            details=tuple(leftovers[:100]), extra={"leftover_processes": list(leftovers[:100])})]

    def _backstop(self) -> Outcome:
        assert self.host is not None
        failure = DriverTimeout(f"the case did not end within {self.options.case_timeout:g} s")
        self.host.kill(failure)
        return lost_outcome(failure, self.options.case_timeout)
