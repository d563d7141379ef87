"""``nnvts report`` and ``nnvts merge`` given hostile file arguments: an output that is an input, shards of
different runs, and what a merged report says about the run it stands for."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner


def _invoke(*argv: str):
    from vts.cli.main import main

    return CliRunner().invoke(main, list(argv))


def _stream(path: Path, *, names: tuple[str, ...] = ("a.one", "a.two"), version: str = "0.1.0",
            selection: dict | None = None, started: str = "2026-11-24T23:00:00+00:00",
            finished: str = "2026-11-24T23:10:00+00:00", duration: float = 100.0) -> str:
    """A complete results stream of passed cases, written by hand (what a shard job leaves)."""
    header = {"nnvts_results": 1, "driver": {"ref": "acme", "name": "acme-npu", "options": {}},
              "selection": selection if selection is not None else {"specs": ["corpus"], "shard": "1/2"},
              "nnvts_version": version, "started": started, "ci": {"shard_plan": "shard 1/2 by durations"}}
    lines = [header]
    lines += [{"case": {"name": name, "family": "generated", "verdict": "passed", "reason": "", "duration": 0.5}}
              for name in names]
    lines.append({"summary": {"passed": len(names), "total": len(names)}, "interrupted": False,
                  "duration": duration, "finished": finished})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink", "dotted"])
@pytest.mark.parametrize("command", ["report", "merge"])
def test_an_output_naming_an_input_is_refused_before_anything_is_written(tmp_path, command, link):
    source = _stream(tmp_path / "S.jsonl")
    before = Path(source).read_bytes()
    output = {"same": source, "dotted": os.path.join(str(tmp_path), ".", "S.jsonl"),
              "symlink": str(tmp_path / "L"), "hardlink": str(tmp_path / "H")}[link]
    if link == "symlink":
        os.symlink(source, output)
    elif link == "hardlink":
        os.link(source, output)
    for kind in ("--jsonl", "--json", "--html", "--junit"):
        done = _invoke(command, source, kind, output)
        assert done.exit_code == 2, done.output
        [line] = done.stderr.splitlines()
        assert f"is an input of this {command}" in line, line
        assert Path(source).read_bytes() == before


def test_a_merge_output_naming_the_baseline_is_refused(tmp_path):
    shard, baseline = _stream(tmp_path / "S.jsonl"), _stream(tmp_path / "B.jsonl")
    os.symlink(baseline, tmp_path / "L")
    before = Path(baseline).read_bytes()
    done = _invoke("merge", shard, "--no-coverage-check", "--baseline", baseline, "--jsonl", str(tmp_path / "L"))
    assert done.exit_code == 2 and "is an input of this merge" in done.stderr, done.output
    assert Path(baseline).read_bytes() == before


@pytest.mark.parametrize(("field", "second"), [
    ("nnvts version", {"version": "0.2.0"}),
    ("selection", {"selection": {"specs": ["elsewhere"], "shard": "2/2"}}),
    ("selection", {"selection": {"specs": ["corpus"], "keyword": "conv", "shard": "2/2"}}),
])
@pytest.mark.parametrize("override", [(), ("--specs", "corpus")], ids=["recorded", "override"])
def test_shards_of_different_runs_are_refused_naming_the_field_unless_mixed_on_purpose(tmp_path, field, second,
                                                                                         override):
    one = _stream(tmp_path / "one.jsonl", names=("a.one",))
    two = _stream(tmp_path / "two.jsonl", names=("a.two",), **second)
    out = tmp_path / "m.json"
    done = _invoke("merge", one, two, "--no-coverage-check", *override, "--json", str(out))
    assert done.exit_code == 2, done.output
    [line] = done.stderr.splitlines()
    assert field in line and "--allow-mixed" in line, line
    assert not out.exists()
    done = _invoke("merge", one, two, "--no-coverage-check", *override, "--allow-mixed", "--json", str(out))
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert [c["name"] for c in report["cases"]] == ["a.one", "a.two"]
    if field == "nnvts version":
        assert report["nnvts_version"] == ["0.1.0", "0.2.0"]
    elif not override:
        assert len(report["selection"]["mixed"]) == 2


def test_a_merged_report_carries_the_merged_selection_and_the_shards_durations(tmp_path):
    one = _stream(tmp_path / "one.jsonl", names=("a.one",), started="2026-11-24T23:00:00+00:00",
                  finished="2026-11-24T23:20:00+00:00", duration=1200.0)
    two = _stream(tmp_path / "two.jsonl", names=("a.two",), selection={"specs": ["corpus"], "shard": "2/2"},
                  started="2026-11-24T23:05:00+00:00", finished="2026-11-24T23:33:00+00:00", duration=1680.0)
    out = {kind: tmp_path / f"m.{kind}" for kind in ("json", "jsonl")}
    done = _invoke("merge", one, two, "--no-coverage-check", "--json", str(out["json"]), "--jsonl", str(out["jsonl"]))
    assert done.exit_code == 0, done.output
    report = json.loads(out["json"].read_text())
    assert report["selection"] == {"specs": ["corpus"]}  # not the first shard's "shard": "1/2"
    assert "shard_plan" not in report.get("ci", {})
    assert report["duration"] == 2880.0  # the shards' durations summed, not the merge's own
    assert report["durations"]["wall"] == 33 * 60.0  # from the first start to the last end
    assert report["started"] == "2026-11-24T23:00:00+00:00"
    assert report["durations"]["finished"] == "2026-11-24T23:33:00+00:00"
    footer = json.loads(out["jsonl"].read_text().splitlines()[-1])
    assert footer["duration"] == 2880.0
    assert "2880.0 s in all, 1980.0 s from the first start to the last end" in done.stdout
    assert "nnvts: 2 cases in 48m00s" in done.stdout, done.stdout  # the summed duration, not the merge's own


def test_hostile_durations_do_not_break_the_merge(tmp_path):
    one = _stream(tmp_path / "one.jsonl", names=("a.one",), started="not a time", duration=1e300)
    two = _stream(tmp_path / "two.jsonl", names=("a.two",), finished="x" * 100000)
    out = tmp_path / "m.json"
    done = _invoke("merge", one, two, "--no-coverage-check", "--json", str(out))
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert report["duration"] == 100.0 and report["durations"]["wall"] is None
