"""Re-runs and flakes, ``--last-failed``, baselines with ``--fail-on new``, with broken and flaky drivers."""

from __future__ import annotations

import pytest

from tests.scale.conftest import FLAKY, QUANT_BROKEN, SLICE, cases_of, verdicts
from vts.report.baseline import Baseline
from vts.results import CaseResult, Verdict
from vts.run.reruns import Rerunner, combine_attempts


def _result(verdict: Verdict, reason: str = "", duration: float = 1.0) -> CaseResult:
    return CaseResult(name="c", family="generated", verdict=verdict, reason=reason, duration=duration)


def test_pass_after_fail_is_flaky_with_every_attempt_kept():
    combined = combine_attempts([_result(Verdict.FAILED, "bad output"), _result(Verdict.PASSED)])
    assert combined.verdict is Verdict.FLAKY and not combined.verdict.is_failure
    assert "bad output" in combined.reason and combined.duration == 2.0
    assert [a["verdict"] for a in combined.extra["attempts"]] == ["failed", "passed"]


def test_a_failure_every_time_keeps_the_first_failure():
    combined = combine_attempts([_result(Verdict.CRASH, "SIGSEGV"), _result(Verdict.FAILED, "x")])
    assert combined.verdict is Verdict.CRASH and combined.reason == "SIGSEGV"
    assert len(combined.extra["attempts"]) == 2


@pytest.mark.parametrize("verdict", [Verdict.XFAIL, Verdict.XPASS, Verdict.PASSED, Verdict.SKIPPED])
def test_expected_outcomes_are_not_rerun(verdict):
    calls = []

    def run_case(family, case):
        calls.append(case)
        return _result(verdict)

    assert Rerunner(run_case, 3).run_case(None, "case").verdict is verdict  # type: ignore[arg-type]
    assert len(calls) == 1


def test_rerunner_restarts_the_driver_before_each_rerun():
    outcomes = iter([Verdict.FAILED, Verdict.FAILED, Verdict.PASSED])
    restarts = []
    rerunner = Rerunner(lambda family, case: _result(next(outcomes)), 5, restart=lambda: restarts.append(1))
    result = rerunner.run_case(None, "case")  # type: ignore[arg-type]
    assert result.verdict is Verdict.FLAKY and len(restarts) == 2
    assert len(result.extra["attempts"]) == 3


def test_baseline_statuses_cover_every_combination():
    baseline = Baseline({"was_failing": True, "was_passing": False})
    assert baseline.status("was_failing", Verdict.CRASH) == "still-failing"
    assert baseline.status("was_failing", Verdict.PASSED) == "fixed"
    assert baseline.status("was_passing", Verdict.TIMEOUT) == "new-failure"
    assert baseline.status("was_passing", Verdict.XFAIL) == "still-passing"
    assert baseline.status("brand_new", Verdict.FAILED) == "new"
    assert baseline.status("was_passing", Verdict.SKIPPED) == "lost-coverage"
    assert Baseline({"was_skipped": Verdict.SKIPPED}).status("was_skipped", Verdict.SKIPPED) == "still-passing"


def test_passes_turned_skips_are_lost_coverage_and_can_fail_the_run(nnvts, tmp_path):
    """A driver that stops claiming an operation fails nothing, yet proves less: CI can gate on it."""
    spec = ("--specs", "generated_tests/add_binary.json", "--family", "generated")
    old = tmp_path / "old.jsonl"
    assert nnvts("run", "--driver", "reference", *spec, "--jsonl", str(old)).returncode == 0
    quiet = nnvts("run", "--driver", "template", *spec, "--baseline", str(old), "--fail-on", "new",
                  "--jsonl", str(tmp_path / "new.jsonl"))
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    lost = {n for n, c in cases_of(tmp_path / "new.jsonl").items() if c["extra"]["baseline"] == "lost-coverage"}
    assert "add_binary.relu_quant8" in lost and "add_binary.broadcast" not in lost
    assert f"lost coverage ({len(lost)}): passed in the baseline, skipped now" in quiet.stdout
    gated = nnvts("run", "--driver", "template", *spec, "--baseline", str(old), "--fail-on", "new",
                  "--fail-on-lost-coverage")
    assert gated.returncode == 1
    assert nnvts("run", "--driver", "template", *spec, "--fail-on-lost-coverage").returncode == 2


def test_flaky_driver_with_reruns(nnvts, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    without = nnvts("run", "--driver", FLAKY, *SLICE, "--jsonl", str(tmp_path / "plain.jsonl"),
                    NNVTS_FLAKY_DIR=str(markers), NNVTS_SANDBOX="none")
    assert without.returncode == 1  # no re-runs: the first attempts fail
    assert "failed" in verdicts(tmp_path / "plain.jsonl").values()

    markers2 = tmp_path / "markers2"
    markers2.mkdir()
    flaky = nnvts("run", "--driver", FLAKY, *SLICE, "--reruns", "2", "--jsonl", str(tmp_path / "r.jsonl"),
                  "--json", str(tmp_path / "r.json"), NNVTS_FLAKY_DIR=str(markers2), NNVTS_SANDBOX="none")
    assert flaky.returncode == 0, flaky.stdout + flaky.stderr  # flaky does not fail the run by default
    cases = cases_of(tmp_path / "r.jsonl")
    flaky_cases = [c for c in cases.values() if c["verdict"] == "flaky"]
    assert flaky_cases and all(c["verdict"] in ("passed", "flaky") for c in cases.values())
    for case in flaky_cases:
        attempts = case["extra"]["attempts"]
        assert [a["verdict"] for a in attempts] == ["failed", "passed"]
        assert "flaky: first attempt" in attempts[0]["reason"]
    assert verdicts(tmp_path / "r.json") == verdicts(tmp_path / "r.jsonl")

    markers3 = tmp_path / "markers3"
    markers3.mkdir()
    strict = nnvts("run", "--driver", FLAKY, *SLICE, "--reruns", "1", "--fail-on-flaky",
                   NNVTS_FLAKY_DIR=str(markers3), NNVTS_SANDBOX="none")
    assert strict.returncode == 1


def test_a_deterministic_failure_fails_every_rerun(nnvts, tmp_path):
    result = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "-k", "add_binary and quant8", "--reruns", "2",
                   "--jsonl", str(tmp_path / "r.jsonl"), "-j", "2")
    assert result.returncode == 1
    cases = cases_of(tmp_path / "r.jsonl")
    assert cases and all(c["verdict"] == "failed" for c in cases.values())
    assert all(len(c["extra"]["attempts"]) == 3 for c in cases.values())


def test_last_failed_reruns_only_the_failures(nnvts, tmp_path):
    first = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--jsonl", str(tmp_path / "first.jsonl"))
    assert first.returncode == 1
    failed = {n for n, v in verdicts(tmp_path / "first.jsonl").items() if v == "failed"}
    again = nnvts("run", "--driver", "reference", *SLICE, "--last-failed", str(tmp_path / "first.jsonl"),
                  "--jsonl", str(tmp_path / "again.jsonl"))
    assert again.returncode == 0, again.stderr
    assert verdicts(tmp_path / "again.jsonl") == dict.fromkeys(failed, "passed")


def test_baseline_marks_cases_and_fail_on_new_gates_on_regressions_only(nnvts, tmp_path):
    old = tmp_path / "old.jsonl"
    nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--jsonl", str(old))
    same = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--baseline", str(old), "--fail-on", "new",
                 "--jsonl", str(tmp_path / "same.jsonl"))
    assert same.returncode == 0, same.stdout + same.stderr  # only still-failing cases
    statuses = {c["extra"]["baseline"] for c in cases_of(tmp_path / "same.jsonl").values()}
    assert statuses == {"still-failing", "still-passing"}
    assert "still-failing" in same.stdout  # the closing summary counts the baseline statuses
    assert nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--baseline", str(old)).returncode == 1  # --fail-on any

    worse = nnvts("run", "--driver", "tests.fakes.broken:wrong_status", *SLICE, "--baseline", str(old),
                  "--fail-on", "new", "--jsonl", str(tmp_path / "worse.jsonl"), "--json", str(tmp_path / "w.json"))
    assert worse.returncode == 1
    cases = cases_of(tmp_path / "worse.jsonl")
    old_verdicts = verdicts(old)
    for name, case in cases.items():
        expected = "still-failing" if old_verdicts[name] == "failed" else "new-failure"
        assert case["extra"]["baseline"] == expected, name
    first_new = next(n for n, c in cases.items() if c["extra"]["baseline"] == "new-failure")
    # New failures lead the closing summary: named before the terminal's results table.
    assert "new failures" in worse.stdout
    assert first_new in worse.stdout[:worse.stdout.index("support by operation")]

    better = nnvts("run", "--driver", "reference", *SLICE, "--baseline", str(old), "--jsonl",
                   str(tmp_path / "better.jsonl"))
    assert better.returncode == 0
    fixed = {n for n, c in cases_of(tmp_path / "better.jsonl").items() if c["extra"]["baseline"] == "fixed"}
    assert fixed == {n for n, v in old_verdicts.items() if v == "failed"}


def test_fail_on_new_needs_a_baseline_and_a_bad_baseline_is_an_input_error(nnvts, tmp_path):
    assert nnvts("run", *SLICE, "--fail-on", "new").returncode == 2
    bad = tmp_path / "old.json"
    bad.write_text('{"cases": [{"name": "x"}]}')
    result = nnvts("run", *SLICE, "--baseline", str(bad))
    assert result.returncode == 2 and "old.json: case 0: malformed case record" in result.stderr
