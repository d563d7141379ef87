"""``nnvts durations``: the compact per-case seconds of results files, for --durations-from in CI."""

from __future__ import annotations

import json
import subprocess

from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env
from vts.run.durations import load_durations


def _report(path, cases: dict[str, float]) -> str:
    path.write_text(json.dumps({"cases": [{"name": n, "family": "generated", "verdict": "passed", "duration": s,
                                           "details": ["x" * 200]} for n, s in cases.items()]}))
    return str(path)


def test_durations_of_several_results_files_in_one_small_file(tmp_path):
    first = _report(tmp_path / "shard-1.json", {"add.a": 0.5, "mul.b": 1.25})
    second = _report(tmp_path / "shard-2.json", {"conv.c": 2.0})
    out = tmp_path / "durations.json"
    result = subprocess.run(nnvts_command("durations", first, second, "--out", str(out)), cwd=ROOT,
                            env=nnvts_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert load_durations(str(out)) == {"add.a": 0.5, "mul.b": 1.25, "conv.c": 2.0}
    assert out.stat().st_size < (tmp_path / "shard-1.json").stat().st_size  # names and seconds only


def test_a_malformed_results_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cases": [{"name": 1}]}')
    result = subprocess.run(nnvts_command("durations", str(bad), "--out", str(tmp_path / "d.json")), cwd=ROOT,
                            env=nnvts_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "bad.json" in result.stderr
    assert not (tmp_path / "d.json").exists()
