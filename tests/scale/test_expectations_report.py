"""Strict expected-failure lists, ``nnvts expectations update``, and ``nnvts report`` of a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env
from tests.scale.conftest import QUANT_BROKEN, SLICE, verdicts
from vts.run.expectations import parse_file


def test_an_entry_that_matches_no_selected_case_is_an_error(nnvts, tmp_path):
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("add_binary.relu_quant8\n# typo below\nadd_binary.relu_qaunt8\nno_such_op.*\n")
    result = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--expected-failures", str(xfail),
                   "--json", str(tmp_path / "r.json"))
    assert result.returncode == 2
    assert "'add_binary.relu_qaunt8' (line 3)" in result.stderr and "'no_such_op.*' (line 4)" in result.stderr
    assert "add_binary.relu_quant8'" not in result.stderr.replace("relu_quant8_", "")
    assert not (tmp_path / "r.json").exists()  # nothing ran, nothing written
    lenient = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--expected-failures", str(xfail),
                    "--allow-unmatched-expectations", "--jsonl", str(tmp_path / "r.jsonl"))
    assert "warning" in lenient.stderr and "add_binary.relu_qaunt8" in lenient.stderr
    assert verdicts(tmp_path / "r.jsonl")["add_binary.relu_quant8"] == "xfail"


def test_entries_are_whole_names_not_substrings(nnvts, tmp_path):
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("add_binary.relu_quant8\n")
    nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--expected-failures", str(xfail), "--jsonl",
          str(tmp_path / "r.jsonl"))
    got = verdicts(tmp_path / "r.jsonl")
    assert got["add_binary.relu_quant8"] == "xfail"
    assert got["add_binary.relu_quant8_signed"] == "failed"


def test_with_a_shard_entries_are_checked_against_the_whole_selection(nnvts, tmp_path):
    names = nnvts("list", *SLICE, "--shard", "2/3").stdout.split()
    other = sorted(set(nnvts("list", *SLICE).stdout.split()) - set(names))[0]
    xfail = tmp_path / "xfail.txt"
    xfail.write_text(f"{other}\n")  # a case of another shard: fine
    result = nnvts("run", *SLICE, "--shard", "2/3", "--expected-failures", str(xfail))
    assert result.returncode == 0, result.stderr
    xfail.write_text(f"{other}\nnot_a_case_anywhere\n")
    result = nnvts("run", *SLICE, "--shard", "2/3", "--expected-failures", str(xfail))
    assert result.returncode == 2 and "not_a_case_anywhere" in result.stderr and other not in result.stderr


def test_expectations_update_writes_the_failures_and_keeps_comments(nnvts, tmp_path):
    results = tmp_path / "r.jsonl"
    nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--jsonl", str(results))
    failing = sorted(n for n, v in verdicts(results).items() if v == "failed")
    out = tmp_path / "xfail.txt"
    out.write_text("# vendor X known failures\n\n# bug 12: quantized ReLU\nrelu_clamp.quant8*  # all of them\n"
                   "# fixed long ago\nadd_binary.relu\nnot_run_here.case\n")
    update = nnvts("expectations", "update", "--from", str(results), "--out", str(out))
    assert update.returncode == 0, update.stderr
    assert "dropped add_binary.relu" in update.stderr
    text = out.read_text()
    header, entries, _ = parse_file(text)
    assert header == ["# vendor X known failures"]
    patterns = [e.pattern for e in entries]
    assert patterns == sorted(patterns)
    assert "relu_clamp.quant8*" in patterns and "not_run_here.case" in patterns and "add_binary.relu" not in patterns
    assert "# bug 12: quantized ReLU\nrelu_clamp.quant8*  # all of them\n" in text
    assert not [e for e in entries if e.pattern.startswith("relu_clamp.quant8") and e.pattern != "relu_clamp.quant8*"]
    # Every failing case is now expected: the run passes with xfail only (the not_run_here entry is
    # lenient-checked since this selection cannot match it).
    again = nnvts("run", "--driver", QUANT_BROKEN, *SLICE, "--expected-failures", str(out),
                  "--allow-unmatched-expectations", "--jsonl", str(tmp_path / "again.jsonl"))
    assert again.returncode == 0, again.stdout + again.stderr
    got = verdicts(tmp_path / "again.jsonl")
    assert sorted(n for n, v in got.items() if v == "xfail") == failing


def test_report_renders_a_stream_cut_short_by_sigkill(nnvts, tmp_path):
    stream = tmp_path / "killed.jsonl"
    process = subprocess.Popen(nnvts_command("run", "--driver", "reference", "--family", "generated", "--jsonl",
                                             str(stream)), cwd=ROOT, env=nnvts_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if stream.exists() and stream.read_text().count('{"case"') >= 5:
                break
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(30)
    recorded = verdicts(stream)
    total = int(nnvts("list", "--family", "generated", "--count").stdout)
    assert 5 <= len(recorded) < total
    result = nnvts("report", str(stream), "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
                   "--html", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stderr
    assert "incomplete" in result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert "killed" in report["incomplete"] and report["interrupted"] is True
    assert {c["name"]: c["verdict"] for c in report["cases"]} == recorded
    assert int(ET.parse(tmp_path / "r.xml").getroot().get("tests")) == len(recorded)
    assert "incomplete" in (tmp_path / "r.html").read_text() or "interrupted" in (tmp_path / "r.html").read_text()


def test_report_of_a_torn_line_in_the_middle_is_an_input_error(nnvts, tmp_path):
    stream = tmp_path / "bad.jsonl"
    stream.write_text('{"nnvts_results": 1}\n{"case": {"name": "a", "fam\n'
                      '{"case": {"name": "b", "family": "f", "verdict": "passed"}}\n')
    result = nnvts("report", str(stream), "--json", str(tmp_path / "r.json"))
    assert result.returncode == 2 and "bad.jsonl:2" in result.stderr
    assert not (tmp_path / "r.json").exists()
