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


def test_a_host_that_closes_its_socket_and_lives_on_is_ended_at_once(monkeypatch):
    """Issue 43: the host closed its protocol socket mid-call and kept running.  It is not dying (not
    marked exiting), so the harness kills it at once instead of waiting for an exit status that will not
    come (the old 2 s wait, twice with the re-run: a minute on a busy machine)."""
    import subprocess

    from vts.ipc import process as process_module

    waited: list[float | None] = []
    real_wait = subprocess.Popen.wait

    def wait(self, timeout=None):
        waited.append(timeout)
        return real_wait(self, timeout)

    monkeypatch.setattr(process_module.subprocess.Popen, "wait", wait)
    runner = _runner("tests.fakes.hostile:closes_socket_device")
    try:
        result = runner.run_case(*_case(hand_mul_float()))
        assert result.verdict is Verdict.CRASH
        assert "closed the connection but kept running" in result.reason, result.reason
        assert 2.0 not in waited, waited  # nobody waited for the living host to exit
        after = runner.run_case(*_case(hand_add_float()))
        assert after.verdict is Verdict.PASSED, after.reason
    finally:
        assert runner.host is not None
        runner.host.stop()


def test_a_crashing_host_still_gets_its_exit_status():
    runner = _runner("tests.fakes.misbehaving:segfault_device")
    runner.rerun_crashes = False
    try:
        result = runner.run_case(*_case(hand_mul_float()))
        assert result.verdict is Verdict.CRASH and "SIGSEGV" in result.reason, result.reason
    finally:
        assert runner.host is not None
        runner.host.stop()


def test_lives_on_tells_a_running_process_from_a_zombie():
    import os
    import subprocess

    from vts.ipc.tree import lives_on

    assert lives_on(os.getpid())
    child = subprocess.Popen(["true"])
    while True:  # a zombie until reaped: wait for it to be one (no timing: the state is read)
        with open(f"/proc/{child.pid}/stat") as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
    assert not lives_on(child.pid)
    child.wait()
    assert not lives_on(child.pid)
