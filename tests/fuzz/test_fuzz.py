"""``nnvts fuzz`` end to end: the reference survives, each fragile driver is found, saved and replayed.

The fragile drivers (``tests/fakes/fragile.py``) misbehave only on a model
with an operand lifetime no HAL enum defines; the fuzzer must reach it
within a modest budget, shrink it to that one edit, save it as a spec that
``nnvts run -k NAME`` replays (failing again on the fragile driver, passing
on the reference).  In-process runs pass ``--memory-limit 0`` so the test
process itself is not limited.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

from vts.cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECS = os.path.join(ROOT, "generated_tests")
BASE = ("--specs", SPECS, "-k", "abs_elementwise or add", "--seed", "3")


def fuzz(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["fuzz", *BASE, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def run_saved(save_dir, name: str, driver: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["run", "--driver", driver, "--specs", str(save_dir), "-k", name, *args])
    return result.exit_code, result.output


def saved_names(save_dir) -> list[str]:
    return sorted(p[: -len(".json")] for p in os.listdir(save_dir) if p.endswith(".json"))


def test_reference_survives_and_every_kind_of_input_is_sent(tmp_path):
    report = tmp_path / "fuzz.json"
    code, output = fuzz("--driver", "reference", "--in-process", "--memory-limit", "0", "--examples", "300",
                        "--chunk", "150", "--save-dir", str(tmp_path / "saved"), "--json", str(report),
                        "--progress", str(tmp_path / "progress.jsonl"))
    assert code == 0, output
    data = json.loads(report.read_text())
    assert data["examples"] == 300 and data["failures"] == []
    assert 0 < data["invalid_models"] < data["models"] and data["prepared"] > 0
    assert 0 < data["invalid_requests"] < data["requests"]
    assert data["models_and_requests"] == data["models"] + data["requests"]
    chunks = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert [c["seed"] for c in chunks] == [3, 4] and sum(c["examples"] for c in chunks) == 300
    assert not (tmp_path / "saved").exists()
    assert "resume with --seed 5" in output


def test_non_hal_exception_is_found_shrunk_saved_and_replayed(tmp_path):
    saved = tmp_path / "saved"
    code, output = fuzz("--driver", "tests.fakes.fragile:raising", "--in-process", "--memory-limit", "0",
                        "--examples", "2000", "--save-dir", str(saved))
    assert code == 1, output
    assert "exception: get_supported_operations raised IndexError" in output
    [name] = saved_names(saved)
    assert name.startswith("fuzz_exception_")
    sidecar = json.loads((saved / f"{name}.fuzz").read_text())
    assert len(sidecar["model_edits"]) == 1 and sidecar["model_edits"][0][1][-1] == "lifetime"  # shrunk
    # The same seed finds the same input, under the same stable name.
    again = tmp_path / "again"
    fuzz("--driver", "tests.fakes.fragile:raising", "--in-process", "--memory-limit", "0", "--examples", "2000",
         "--save-dir", str(again))
    assert saved_names(again) == [name]
    code, output = run_saved(saved, name, "tests.fakes.fragile:raising", "--in-process")
    assert code == 1 and "fuzz_replay" in output and "IndexError" in output
    code, output = run_saved(saved, name, "reference", "--family", "fuzz_replay")
    assert code == 0, output


def test_wrong_answer_is_found(tmp_path):
    code, output = fuzz("--driver", "tests.fakes.fragile:wrong_type", "--in-process", "--memory-limit", "0",
                        "--examples", "2000", "--save-dir", str(tmp_path))
    assert code == 1 and "accepted_invalid" in output


def test_crash_is_found_out_of_process_and_replays_as_a_crash(tmp_path):
    code, output = fuzz("--driver", "tests.fakes.fragile:crashing", "--examples", "2000", "--save-dir", str(tmp_path))
    assert code == 1, output
    assert "crash: get_supported_operations: driver crashed: killed by SIGABRT" in output
    [name] = saved_names(tmp_path)
    code, output = run_saved(tmp_path, name, "tests.fakes.fragile:crashing", "--family", "fuzz_replay")
    assert code == 1 and "crash" in output


def test_hang_is_found_out_of_process_and_replays_as_a_timeout(tmp_path):
    code, output = fuzz("--driver", "tests.fakes.fragile:hanging", "--examples", "2000", "--timeout", "0.5",
                        "--shrink-budget", "5", "--save-dir", str(tmp_path))
    assert code == 1, output
    assert "hang: get_supported_operations did not return within 0.5 s" in output
    [name] = saved_names(tmp_path)
    code, output = run_saved(tmp_path, name, "tests.fakes.fragile:hanging", "--family", "fuzz_replay", "--timeout", "1")
    assert code == 1 and "timeout" in output


def test_hang_in_process_is_found(tmp_path):
    code, output = fuzz("--driver", "tests.fakes.fragile:hanging", "--in-process", "--memory-limit", "0",
                        "--examples", "2000", "--timeout", "0.5", "--shrink-budget", "3", "--save-dir", str(tmp_path))
    assert code == 1 and "hang:" in output


def test_no_base_model_exits_5():
    result = CliRunner().invoke(main, ["fuzz", "--specs", SPECS, "-k", "no_such_model_anywhere", "--in-process"])
    assert result.exit_code == 5


def test_unknown_driver_is_a_usage_error():
    result = CliRunner().invoke(main, ["fuzz", *BASE, "--driver", "no_such_driver", "--examples", "1"])
    assert result.exit_code == 2


def test_missing_hypothesis_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    result = CliRunner().invoke(main, ["fuzz", "--examples", "1"])
    assert result.exit_code == 2
    assert "pip install 'nnvts[fuzz]'" in result.output


@pytest.mark.parametrize("text,seconds", [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1.5h", 5400.0)])
def test_durations(text, seconds):
    from vts.cli.duration import parse_duration

    assert parse_duration(text) == seconds


def test_sigterm_ends_the_run_with_143_and_its_report(tmp_path, monkeypatch):
    # The driver sends the SIGTERM to its parent: only an uncontained host can reach the harness.
    monkeypatch.setenv("NNVTS_NO_NAMESPACES", "1")
    report = tmp_path / "fuzz.json"
    code, output = fuzz("--driver", "tests.fakes.fragile:terminates_harness", "--examples", "100000",
                        "--chunk", "20", "--save-dir", str(tmp_path), "--json", str(report))
    assert code == 143, output
    data = json.loads(report.read_text())
    assert data["interrupted"] and data["failures"] == [] and data["examples"] >= 20
    assert "interrupted" in output


def test_time_budget_ends_the_run_cleanly(tmp_path):
    report = tmp_path / "fuzz.json"
    code, output = fuzz("--driver", "reference", "--in-process", "--memory-limit", "0", "--examples", "1000000",
                        "--chunk", "1000000", "--time-budget", "2s", "--save-dir", str(tmp_path), "--json", str(report))
    assert code == 0, output
    data = json.loads(report.read_text())
    assert data["out_of_time"] and data["failures"] == [] and 0 < data["examples"] < 1000000
    assert "stopped: time budget reached" in output
