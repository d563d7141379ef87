"""Crash loops: a driver build broken everywhere is told so in a few cases, not one restart per case.

The broken driver is ``tests.fakes.crash_storm`` (every execution kills
its process); what is asserted is the number of host starts and of each
verdict, never a time.  A driver that crashes once keeps the per-case
re-run and its ``unreproduced_crash``.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import CollectingSink, hand_add_float
from tests.ipc.conftest import ROOT, hand_mul_float, nnvts_command, nnvts_env, slot_names, write_spec
from tests.scale.test_pytest_plugin import junit_outcomes, pytest_run
from vts.families.base import RunOptions
from vts.families.generated import GeneratedFamily
from vts.ipc.process import HostProcess
from vts.model.casemodel import parse_spec
from vts.results import CaseResult, Verdict
from vts.run.crashloop import CrashLoopGuard, CrashLoopPolicy, install_crash_guard
from vts.run.isolated import IsolatedRunner

STORM = "tests.fakes.crash_storm:exit_every_execution"


@pytest.fixture
def nnvts():
    def run(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(nnvts_command(*args), cwd=ROOT, env=nnvts_env(**env), capture_output=True, text=True,
                              timeout=600)

    return run


def _result(verdict: Verdict) -> CaseResult:
    reason = "driver crashed: killed by SIGSEGV" if verdict is Verdict.CRASH else ""
    return CaseResult("c", "generated", verdict, reason)


def _feed(guard: CrashLoopGuard, verdicts: list[Verdict]) -> None:
    for verdict in verdicts:
        guard.observe(_result(verdict))


def test_consecutive_host_deaths_trip_the_guard_and_a_survivor_resets_the_count():
    guard = CrashLoopGuard(CrashLoopPolicy(max_consecutive=3, max_share=1.0))
    _feed(guard, [Verdict.CRASH, Verdict.TIMEOUT, Verdict.PASSED, Verdict.CRASH, Verdict.UNREPRODUCED_CRASH])
    assert guard.tripped is None
    _feed(guard, [Verdict.CRASH])
    assert guard.tripped is not None and "3 cases in a row" in guard.tripped
    assert guard.outcome().verdict is Verdict.CRASH_LOOP and Verdict.CRASH_LOOP.is_failure


def test_a_large_share_of_deaths_trips_the_guard_only_over_a_full_window():
    guard = CrashLoopGuard(CrashLoopPolicy(max_consecutive=10, max_share=0.5, window=10))
    _feed(guard, [Verdict.CRASH, Verdict.PASSED] * 3)  # 3 of 6: the window is not full yet
    assert guard.tripped is None
    _feed(guard, [Verdict.CRASH, Verdict.PASSED, Verdict.CRASH, Verdict.PASSED])  # 5 of 10: not more than half
    assert guard.tripped is None
    _feed(guard, [Verdict.CRASH])  # the oldest death leaves the window: still 5 of 10
    assert guard.tripped is None
    _feed(guard, [Verdict.CRASH])  # 6 of the last 10
    assert guard.tripped is not None and "6 of the last 10 cases" in guard.tripped


def test_a_flaky_case_whose_first_attempt_crashed_counts_as_a_death():
    guard = CrashLoopGuard(CrashLoopPolicy(max_consecutive=1))
    guard.observe(CaseResult("c", "generated", Verdict.FLAKY, extra={"attempts": [{"verdict": "crash"},
                                                                                   {"verdict": "passed"}]}))
    assert guard.tripped is not None


def test_max_crashes_zero_never_trips():
    runner = type("R", (), {"run_case": None, "_result": None})()
    assert install_crash_guard(runner, CrashLoopPolicy(max_consecutive=0)) is None


def _cases(models: int):
    family = GeneratedFamily()
    for model in parse_spec(hand_mul_float(models)):
        for case in family.model_cases(model, "<inline>"):
            yield family, case


def test_the_runner_stops_restarting_a_driver_in_a_crash_loop():
    host = HostProcess(STORM)
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=20.0), host=host)
    guard = install_crash_guard(runner, CrashLoopPolicy(max_consecutive=3))
    sink = CollectingSink()
    assert runner.run(_cases(8), [sink])
    verdicts = [r.verdict for r in sink.results]
    assert verdicts == [Verdict.CRASH] * 3 + [Verdict.CRASH_LOOP] * 5, [(r.verdict, r.reason) for r in sink.results]
    # Each crash before the loop: its attempt and its re-run alone, each on a host of its own; then the
    # canary once (it crashes too, so the loop is declared); none after.
    assert host.starts == 2 * 3 + 1
    assert "a canary run alone on a fresh host did not pass" in sink.results[3].reason
    assert guard is not None and guard.not_run == 5
    assert all(r.duration == 0.0 and "crash loop" in r.reason for r in sink.results[3:])


def _hand_sub_float(models: int) -> dict:
    """SUB of the MUL spec's inputs, goldens by hand: 1.5 - 2 = -0.5; -2 - 0.5 = -2.5; 0.25 - 4 = -3.75;
    10 - -0.1 = 10.1 (float32)."""
    spec = hand_mul_float(models)
    for model in spec["models"]:
        model["main"]["operations"][0]["type"] = "SUB"
        model["examples"][0]["outputs"]["out"] = [-0.5, -2.5, -3.75, 10.1]
    return {**spec, "name": "hand_sub_float"}


def test_a_driver_crashing_on_one_operation_is_not_a_crash_loop():
    """Issue 43: SUB segfaults, nothing else.  The streak reaches the limit, a canary (a hand-made ADD, as
    nothing passed yet) passes on a fresh host, the run goes on: the third SUB crashes without a re-run
    (its operations crashed before), the ADD after it runs and passes."""
    host = HostProcess("tests.fakes.crash_storm:segfault_on_sub")
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=20.0), host=host)
    guard = install_crash_guard(runner, CrashLoopPolicy(max_consecutive=2))
    family = GeneratedFamily()
    cases = [(family, case) for spec in (_hand_sub_float(3), hand_add_float())
             for model in parse_spec(spec) for case in family.model_cases(model, "<inline>")]
    sink = CollectingSink()
    assert runner.run(iter(cases), [sink])
    verdicts = [r.verdict for r in sink.results]
    assert verdicts == [Verdict.CRASH] * 3 + [Verdict.PASSED], [(r.verdict, r.reason) for r in sink.results]
    assert guard is not None and guard.tripped is None and guard.not_run == 0
    assert "a canary run alone on a fresh host passed" in sink.results[1].details[-1]
    assert "not re-run alone" in sink.results[2].details[-1]
    # Two crashes with their re-runs, the canary's host, the ADD's host (the third SUB ran on the canary's).
    assert host.starts == 2 * 2 + 1 + 1
    host.stop()


def test_the_canary_is_a_case_the_driver_passed_when_there_is_one():
    host = HostProcess("tests.fakes.crash_storm:segfault_on_sub")
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=20.0), host=host)
    install_crash_guard(runner, CrashLoopPolicy(max_consecutive=2))
    family = GeneratedFamily()
    cases = [(family, case) for spec in (hand_add_float(), _hand_sub_float(2))
             for model in parse_spec(spec) for case in family.model_cases(model, "<inline>")]
    sink = CollectingSink()
    assert runner.run(iter(cases), [sink])
    assert [r.verdict for r in sink.results] == [Verdict.PASSED, Verdict.CRASH, Verdict.CRASH]
    assert f"({sink.results[0].name}: passed)" in sink.results[2].details[-1]
    host.stop()


def test_a_passed_validation_case_is_no_canary():
    """A build crashing on every execution passes validation cases (it refuses the invalid models before
    running anything): such a case must not serve as the canary, or it would forgive the storm."""
    from vts.families.validation.family import ValidationFamily

    host = HostProcess(STORM)
    runner = IsolatedRunner(host.start(), RunOptions(case_timeout=20.0), host=host)
    guard = install_crash_guard(runner, CrashLoopPolicy(max_consecutive=2))
    validation = ValidationFamily()
    (model,) = parse_spec(hand_mul_float())
    cases = [(validation, case) for case in list(validation.model_cases(model, "<inline>"))[:3]]
    sink = CollectingSink()
    assert runner.run(iter(cases + list(_cases(4))), [sink])
    verdicts = [r.verdict for r in sink.results]
    assert verdicts == [Verdict.PASSED] * 3 + [Verdict.CRASH] * 2 + [Verdict.CRASH_LOOP] * 2, \
        [(r.name, r.verdict, r.reason) for r in sink.results]
    assert guard is not None and "canary_add_tensor_float32.add: crash" in (guard.tripped or "")
    host.stop()


def _storm_run(nnvts, tmp_path, models: int, *args: str):
    spec = write_spec(tmp_path, hand_mul_float(models))
    result = nnvts("run", "--driver", STORM, "--family", "generated", "--json", str(tmp_path / "r.json"),
                   "--junit", str(tmp_path / "r.xml"), "--jsonl", str(tmp_path / "r.jsonl"), *args, spec)
    return result, json.loads((tmp_path / "r.json").read_text())


def test_a_crash_on_every_execution_ends_in_crash_loop_verdicts_in_every_report(nnvts, tmp_path):
    result, report = _storm_run(nnvts, tmp_path, 7, "--max-crashes", "2", "-q", "-j", "1")  # one guard, one worker
    assert result.returncode == 1, result.stdout + result.stderr
    assert report["summary"]["crash"] == 2 and report["summary"]["crash_loop"] == 5
    assert "5 cases not run: the driver is in a crash loop" in result.stdout
    assert "2 crash, 5 crash_loop" in result.stdout
    assert (tmp_path / "r.xml").read_text().count('type="crash_loop"') == 5
    footer = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[-1])
    assert footer["summary"]["crash_loop"] == 5


def test_each_worker_stops_on_its_own_crash_loop(nnvts, tmp_path):
    models = 12
    result, report = _storm_run(nnvts, tmp_path, models, "--max-crashes", "2", "-j", "2", "--no-pin-cpus",
                                "--job-split", "hash")
    assert result.returncode == 1, result.stdout + result.stderr
    spec = str(tmp_path / f"{hand_mul_float(models)['name']}.json")  # what _storm_run wrote
    per_slot = [len(names) for names in slot_names([spec], ["generated"], 2)]
    assert report["summary"]["crash"] == sum(min(2, n) for n in per_slot)
    assert report["summary"]["crash_loop"] == sum(max(0, n - 2) for n in per_slot)
    assert report["summary"]["total"] == models


def test_a_crash_loop_under_claimed_models_gives_every_case_one_verdict(nnvts, tmp_path):
    """With the default split the workers take models as they come: each stops on its own loop after two
    crashes, and the models it then takes are not run (crash_loop); every case gets one verdict."""
    models = 12
    result, report = _storm_run(nnvts, tmp_path, models, "--max-crashes", "2", "-j", "2", "--no-pin-cpus")
    assert result.returncode == 1, result.stdout + result.stderr
    summary = report["summary"]
    assert summary["crash"] in (2, 3, 4) and summary["crash"] + summary["crash_loop"] == models
    assert summary["total"] == models == len({c["name"] for c in report["cases"]})


def test_the_parent_stops_replacing_in_process_workers_that_keep_dying(nnvts, tmp_path):
    models = 12
    spec = write_spec(tmp_path, hand_mul_float(models))
    result = nnvts("run", "--driver", "tests.fakes.crash_storm:segfault_every_execution", "--family", "generated",
                   "--in-process", "-j", "2", "--job-split", "hash", "--no-pin-cpus", "--max-crashes", "2", "--json",
                   str(tmp_path / "r.json"), spec)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    per_slot = [len(names) for names in slot_names([spec], ["generated"], 2)]
    assert report["summary"]["crash"] == sum(min(2, n) for n in per_slot)
    assert report["summary"]["crash_loop"] == sum(max(0, n - 2) for n in per_slot)


def test_a_single_crash_is_still_re_run_alone_and_the_run_goes_on(nnvts, tmp_path):
    marker = tmp_path / "crashed-once"
    specs = [write_spec(tmp_path, hand_mul_float()), write_spec(tmp_path, hand_add_float())]
    result = nnvts("run", "--driver", "tests.fakes.misbehaving:crash_once_device", "--family", "generated",
                   "--max-crashes", "2", "--json", str(tmp_path / "r.json"), *specs,
                   NNVTS_TEST_CRASH_MARKER=str(marker), NNVTS_SANDBOX="none")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["unreproduced_crash"] == 1 and report["summary"]["passed"] == 1, result.stderr
    assert report["summary"]["crash_loop"] == 0


def test_the_pytest_plugin_shares_the_guard(tmp_path):
    spec = write_spec(tmp_path, hand_mul_float(5))
    result = pytest_run("--nnvts-specs", spec, "--nnvts-driver", STORM, "--nnvts-family", "generated",
                        "--nnvts-max-crashes", "2", "--junitxml", str(tmp_path / "p.xml"))
    assert result.returncode == 1
    verdicts = sorted(o["verdict"] for o in junit_outcomes(tmp_path / "p.xml").values())
    assert verdicts == ["crash"] * 2 + ["crash_loop"] * 3, verdicts
