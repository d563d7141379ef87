"""The case alarm: its handler installed once for a run, checked before each case, its backstop intact.

``Runner.run`` installs the SIGALRM handler for all its cases; each case only checks it (in process, a
driver's code may have replaced it), and sets and clears the timer.
"""

from __future__ import annotations

import signal
import time

from tests.conftest import CollectingSink, hand_add_float
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed
from vts.families.generated import GeneratedFamily
from vts.ipc.process import HostProcess
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run import runner as base
from vts.run.isolated import BACKSTOP_GRACE, IsolatedRunner


class _Scripted(Family):
    """A family whose cases do, in turn, what ``steps`` says: pass, hang in its own code (only the case
    alarm ends that; bounded so that a broken alarm fails instead of hanging the suite), or replace
    SIGALRM's handler (in process, a driver's code can do what a family's can)."""

    name = "scripted"

    def __init__(self, *steps: str) -> None:
        self.steps = list(steps)

    def run(self, case: Case, device: object, options: RunOptions) -> Outcome:
        step = self.steps.pop(0)
        if step == "replace the alarm":
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
        elif step == "hang":
            give_up = time.monotonic() + 20
            while time.monotonic() < give_up:
                time.sleep(0.01)
            return failed("the case alarm never went off")
        return passed()


def _cases(count: int) -> list[tuple[Family, Case]]:
    family = GeneratedFamily()
    (model,) = parse_spec(hand_add_float())
    (case,) = family.model_cases(model, "<inline>")
    return [(family, case)] * count


def _runner(timeout: float = 10.0) -> IsolatedRunner:
    host = HostProcess("reference")
    return IsolatedRunner(host.start(), RunOptions(case_timeout=timeout), host=host)


def _sigalrm_installs(monkeypatch) -> list[object]:
    installed: list[object] = []
    real = signal.signal

    def counting(signum, handler):
        if signum == signal.SIGALRM:
            installed.append(handler)
        return real(signum, handler)

    monkeypatch.setattr(base.signal, "signal", counting)
    return installed


def test_a_run_out_of_process_installs_the_alarm_once_and_puts_the_old_handler_back(monkeypatch):
    before = signal.getsignal(signal.SIGALRM)
    installed = _sigalrm_installs(monkeypatch)
    sink = CollectingSink()
    runner = _runner()
    assert runner.run(_cases(5), [sink])
    assert [r.verdict for r in sink.results] == [Verdict.PASSED] * 5
    assert installed == [base._raise_case_timeout, before]  # once for the run, then back
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_case_alone_out_of_process_still_installs_and_restores_the_alarm(monkeypatch):
    before = signal.getsignal(signal.SIGALRM)
    installed = _sigalrm_installs(monkeypatch)
    runner = _runner()
    try:
        (family, case), = _cases(1)
        assert runner.run_case(family, case).verdict is Verdict.PASSED
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert installed == [base._raise_case_timeout, before]
    assert signal.getsignal(signal.SIGALRM) == before


def test_the_backstop_ends_harness_code_that_hangs_under_a_held_alarm(monkeypatch):
    family = _Scripted("hang", "pass")
    (_, case), = _cases(1)
    sink = CollectingSink()
    runner = _runner(timeout=0.5)
    start = time.monotonic()
    assert runner.run([(family, case), (family, case)], [sink])
    hung, after = sink.results
    assert hung.verdict is Verdict.TIMEOUT and hung.reason == "no answer within 0.5 s", hung.reason
    assert 0.5 + BACKSTOP_GRACE <= hung.duration < 0.5 + BACKSTOP_GRACE + 3.0
    assert after.verdict is Verdict.PASSED, after.reason  # the next case runs, with the alarm still armed
    assert time.monotonic() - start < 30
    assert signal.getsignal(signal.SIGALRM) is not base._raise_case_timeout


def test_in_process_a_handler_a_driver_replaced_is_put_back_for_the_next_case(monkeypatch):
    from nnvts.drivers.reference import create_device

    before = signal.getsignal(signal.SIGALRM)
    family = _Scripted("replace the alarm", "hang")
    (_, case), = _cases(1)
    sink = CollectingSink()
    assert base.Runner(create_device(), RunOptions(case_timeout=0.5)).run([(family, case), (family, case)], [sink])
    replaced, hung = sink.results
    assert replaced.verdict is Verdict.PASSED
    assert hung.verdict is Verdict.TIMEOUT and hung.reason == "no answer within 0.5 s", hung.reason
    assert signal.getsignal(signal.SIGALRM) == before


def test_in_process_a_run_installs_the_alarm_once(monkeypatch):
    from nnvts.drivers.reference import create_device

    installed = _sigalrm_installs(monkeypatch)
    sink = CollectingSink()
    assert base.Runner(create_device(), RunOptions()).run(_cases(3), [sink])
    assert [r.verdict for r in sink.results] == [Verdict.PASSED] * 3
    assert installed.count(base._raise_case_timeout) == 1
