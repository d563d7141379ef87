"""The isolated runner as a library: restarts, re-runs, and deaths between cases."""

from __future__ import annotations

import time

from tests.conftest import hand_add_float
from tests.ipc.conftest import hand_mul_float
from vts.families.base import RunOptions
from vts.families.generated import GeneratedFamily
from vts.ipc.process import HostProcess
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.isolated import IsolatedRunner


def _case(document: dict):
    family = GeneratedFamily()
    (model,) = parse_spec(document)
    (case,) = family.model_cases(model, "<inline>")
    return family, case


def _runner(driver: str, timeout: float = 10.0) -> IsolatedRunner:
    host = HostProcess(driver)
    return IsolatedRunner(host.start(), RunOptions(case_timeout=timeout), host=host)


def test_a_death_between_cases_is_recorded_on_the_next_case():
    runner = _runner("tests.fakes.misbehaving:late_crash_device")
    try:
        first = runner.run_case(*_case(hand_mul_float()))
        assert first.verdict is Verdict.PASSED, first.reason
        time.sleep(1.0)  # the driver's thread crashes the host meanwhile
        second = runner.run_case(*_case(hand_add_float()))
        assert second.verdict is Verdict.PASSED, second.reason
        assert second.extra["host_died_before_case"] == "killed by SIGSEGV"
        assert runner.host is not None and runner.host.starts == 2
    finally:
        assert runner.host is not None
        runner.host.stop()


def test_a_timeout_restarts_the_host_and_the_next_case_passes():
    runner = _runner("tests.fakes.misbehaving:hang_device", timeout=2.0)
    try:
        hung = runner.run_case(*_case(hand_mul_float()))
        assert hung.verdict is Verdict.TIMEOUT and hung.reason == "no answer within 2 s"
        assert 2.0 <= hung.duration < 6.0
        after = runner.run_case(*_case(hand_add_float()))
        assert after.verdict is Verdict.PASSED, after.reason
        assert "host_died_before_case" not in after.extra  # killed by the harness: not a silent death
    finally:
        assert runner.host is not None
        runner.host.stop()
