"""``nnvts soak`` end to end: the reference passes, each leaky driver is caught by the check meant for it.

Short runs with small memory and descriptor bounds given here (memory
bounds are fine in tests: the leaks are tens of MB against bounds of a
few); latency drift is switched off (``--max-latency-drift 0``) because no
test may depend on timing.  The first-execution check gets a threshold from
the test and a driver that sleeps 2 s on each model's first execution.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from vts.cli.main import main

CASE = "abs_elementwise.float32"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def soak(tmp_path, driver: str, *args: str) -> tuple[int, dict, str]:
    report = tmp_path / "soak.json"
    result = CliRunner().invoke(main, [
        "soak", "--driver", driver, "--specs", os.path.join(ROOT, "generated_tests"), "--max-latency-drift", "0",
        "--json", str(report), *args])
    assert result.exit_code in (0, 1), result.output + repr(result.exception)
    return result.exit_code, json.loads(report.read_text()), result.output


def leak_args(*extra: str) -> tuple[str, ...]:
    return ("-k", CASE, "--iterations", "200", "--max-rss-growth", "8", "--max-fd-growth", "4",
            "--release-models", "16", "--release-slack", "16", *extra)


def test_reference_passes_with_small_bounds(tmp_path):
    code, report, output = soak(tmp_path, "reference", *leak_args())
    assert code == 0, report["failures"]
    assert report["passed"] and report["executions"] == 200 and report["iterations"] == 200
    assert report["rss_mb"]["growth"] < 8 and report["fds"]["growth"] <= 4
    assert report["release"]["models"] == 16 and report["release"]["buffers"] == 16
    assert len(report["samples"]) >= 2 and report["samples"][0]["rss_kb"] > 0
    assert "soak passed" in output


def test_memory_leak_per_execution_is_caught(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:leaks_memory", *leak_args())
    assert code == 1
    assert report["rss_mb"]["growth"] > 8  # 256 KB per execution, 100 executions in the second half
    assert any(f.startswith("memory grows") for f in report["failures"])


def test_descriptor_leak_per_execution_is_caught(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:leaks_fds", *leak_args())
    assert code == 1
    assert report["fds"]["growth"] > 50
    assert any(f.startswith("descriptors grow") for f in report["failures"])


def test_models_kept_after_release_are_caught(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:keeps_released", *leak_args())
    assert code == 1
    assert report["release"]["retained_mb"] > 16  # 16 models x 4 MB ballast never freed
    assert any("still holds" in f for f in report["failures"])


def test_first_execution_stutter_fails_past_the_given_ratio(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:stutters", "-k", "abs_elementwise", "--iterations", "6",
                           "--release-models", "0", "--max-first-execution-ratio", "5")
    assert code == 1
    measured = {f["name"]: f for f in report["first_execution"]}
    assert len(measured) == 3 and all(f["first_ms"] >= 2000 for f in measured.values())
    assert sum("first execution" in f for f in report["failures"]) == 3


def test_first_execution_is_reported_without_failing_when_no_ratio_is_given(tmp_path):
    code, report, output = soak(tmp_path, "reference", "-k", "abs_elementwise", "--iterations", "6",
                                "--release-models", "0")
    assert code == 0, report["failures"]
    assert len(report["first_execution"]) == 3
    assert all(f["ratio"] > 0 and f["steady_executions"] == 5 for f in report["first_execution"])
    assert "first execution: worst" in output and "bound none" in output


def test_results_that_change_after_a_while_fail(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:drifts_after_100", "-k", CASE, "--iterations", "150",
                           "--release-models", "0")
    assert code == 1
    assert report["result_changes"] and "differs from the first" in report["result_changes"][0]["problem"]


def test_a_crash_during_the_soak_fails_it(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:dies_after_50", "-k", CASE, "--iterations", "100",
                           "--release-models", "0")
    assert code == 1
    assert report["lost"] and "lost" in report["failures"][0]


def test_nothing_selected_exits_5(tmp_path):
    result = CliRunner().invoke(main, ["soak", "--specs", os.path.join(ROOT, "generated_tests"), "-k",
                                       "no_such_case_anywhere", "--iterations", "1"])
    assert result.exit_code == 5


@pytest.mark.parametrize("args", [["--driver", "no_such_driver"], ["--family", "no_such_family"]])
def test_usage_errors_exit_2(args):
    result = CliRunner().invoke(main, ["soak", "--iterations", "1", *args])
    assert result.exit_code == 2


def test_a_non_hal_exception_during_the_soak_is_a_verdict(tmp_path):
    code, report, _ = soak(tmp_path, "tests.fakes.leaky:raises_after_50", "-k", CASE, "--iterations", "80",
                           "--release-models", "0")
    assert code == 1
    assert "execution raised" in report["result_changes"][0]["problem"]
    assert report["executions"] == 80


def test_sigterm_ends_the_soak_with_143_and_its_report(tmp_path, monkeypatch):
    # The driver sends the SIGTERM to its parent: only an uncontained host can reach the harness.
    monkeypatch.setenv("NNVTS_NO_NAMESPACES", "1")
    report = tmp_path / "soak.json"
    result = CliRunner().invoke(main, [
        "soak", "--driver", "tests.fakes.leaky:terminates_harness_after_20", "--specs",
        os.path.join(ROOT, "generated_tests"), "-k", CASE, "--iterations", "100000", "--json", str(report)])
    assert result.exit_code == 143, result.output
    data = json.loads(report.read_text())
    assert data["interrupted"] and not data["passed"] and 19 <= data["executions"] < 100000


def test_a_soak_too_short_for_one_iteration_fails_instead_of_judging_warm_up(tmp_path):
    code, report, _ = soak(tmp_path, "reference", "-k", "abs_elementwise", "--duration", "0", "--release-models", "0")
    assert code == 1
    assert report["iterations"] == 0 and report["executions"] == 1
    assert "before its first iteration" in report["failures"][0]
