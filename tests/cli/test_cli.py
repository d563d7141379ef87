"""The command line: exit codes, selection, reports, and clear errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from tests.conftest import hand_add_float, hand_add_quant8

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def nnvts(*args: str, cwd: str = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def write_specs(directory) -> str:
    for document in (hand_add_float(), hand_add_quant8()):
        (directory / f"{document['name']}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return str(directory)


def test_help_lists_the_commands():
    result = nnvts("--help")
    assert result.returncode == 0
    for command in ("run", "list", "generate", "drivers"):
        assert command in result.stdout


def test_run_passes_reference_and_writes_reports(tmp_path):
    specs = write_specs(tmp_path)
    report = tmp_path / "out" / "r.json"
    result = nnvts("run", "--driver", "reference", "--specs", specs, "--family", "generated", "--json", str(report),
                   "--junit", str(tmp_path / "r.xml"))
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["passed"] == 2 and data["summary"]["total"] == 2
    assert sorted(c["name"] for c in data["cases"]) == ["hand_add_float.add", "hand_add_quant8.add"]
    assert (tmp_path / "r.xml").read_text().startswith("<?xml")


def test_failing_driver_exits_1(tmp_path):
    specs = write_specs(tmp_path)
    result = nnvts("run", "--driver", "tests.fakes.broken:quant_off_by_2", "--specs", specs,
                   "--family", "generated", "--json", str(tmp_path / "r.json"))
    assert result.returncode == 1
    cases = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert cases["hand_add_quant8.add"]["verdict"] == "failed"
    assert cases["hand_add_float.add"]["verdict"] == "passed"
    assert "elements out of tolerance" in result.stdout


def test_malformed_spec_names_file_and_line_exits_2_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    document = yaml.safe_dump(hand_add_float(), sort_keys=False).replace("lifetime: SUBGRAPH_OUTPUT",
                                                                          "lifetime: SOMETIMES")
    bad.write_text(document)
    report = tmp_path / "r.json"
    result = nnvts("run", "--specs", str(bad), "--json", str(report))
    assert result.returncode == 2
    line = 1 + document.splitlines().index(next(ln for ln in document.splitlines() if "SOMETIMES" in ln))
    assert f"bad.yaml:{line}" in result.stderr, result.stderr
    assert "lifetime" in result.stderr
    assert not report.exists()


def test_unknown_driver_and_family_are_usage_errors(tmp_path):
    specs = write_specs(tmp_path)
    assert nnvts("run", "--driver", "no_such_driver", "--specs", specs).returncode == 2
    result = nnvts("run", "--specs", specs, "--family", "nonsense")
    assert result.returncode == 2 and "unknown family" in result.stderr


def test_list_selects_by_expression_and_warns_on_unmatched_terms(tmp_path):
    specs = write_specs(tmp_path)
    result = nnvts("list", "--specs", specs, "--family", "generated", "-k", "quant8 or lstm")
    assert result.returncode == 0
    assert result.stdout.split() == ["hand_add_quant8.add"]
    assert "'lstm' matched no case" in result.stderr
    count = nnvts("list", "--specs", specs, "--family", "validation", "--count")
    assert int(count.stdout) > 250


def test_drivers_lists_the_reference_driver():
    result = nnvts("drivers")
    assert result.returncode == 0
    assert "nnvts-reference" in result.stdout and "CPU" in result.stdout


def test_parallel_workers_give_the_same_results(tmp_path):
    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    reports = {}
    for jobs in ("1", "2"):
        path = tmp_path / f"r{jobs}.json"
        result = nnvts("run", "--specs", specs, "--in-process", "-j", jobs, "--family", "validation",
                       "--family", "generated", "--json", str(path))
        assert result.returncode == 0, result.stdout + result.stderr
        reports[jobs] = {c["name"]: c["verdict"] for c in json.loads(path.read_text())["cases"]}
    assert reports["1"] == reports["2"] and len(reports["1"]) > 250
