"""docs/ci.md's CI examples run as written: valid YAML of the documented shape, every script step under
``bash -eo pipefail`` (the runners' shell), with and without a previous run, and a failing merge still
keeps the run for the next pipeline.

``nnvts``, ``python``/``pip`` and ``git`` are stubs on PATH that log their arguments and create what the
real ones would (report files, the corpus folder), so the shell logic itself is what runs.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"

STUB = r"""#!/bin/bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
out=""
for arg in "$@"; do
    case "$prev" in --out|--jsonl|--json|--junit|--html) mkdir -p "$(dirname "$arg")"; out="$arg";
        if [ "$prev" = "--out" ]; then mkdir -p "$arg"; else echo '{}' > "$arg"; fi ;; esac
    prev="$arg"
done
if [ "$(basename "$0")" = git ] && [ "$1" = clone ]; then mkdir -p "${@: -1}/nn"; fi
if [ "$(basename "$0")" = nnvts ] && [ "$1" = merge ]; then exit "${STUB_MERGE_STATUS:-0}"; fi
exit 0
"""


def _blocks() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    found = {}
    for title in ("GitHub Actions", "GitLab CI"):
        section = text[text.index(f"### {title}"):]
        block = re.search(r"```yaml\n(.*?)```", section, re.S)
        assert block, f"no YAML example under {title}"
        found[title] = yaml.safe_load(block.group(1))
    return found


def _stubs(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("nnvts", "python", "pip", "git"):
        path = bin_dir / name
        path.write_text(STUB)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(tmp_path / "log"), "HOME": str(tmp_path)}


def _run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def _github_steps(job: dict[str, Any], shard: int) -> str:
    steps = [step["run"] for step in job["steps"] if "run" in step]
    return "\n".join(re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", str(shard), s) for s in steps)


def _gitlab_steps(job: dict[str, Any], index: int, total: int) -> str:
    script = "\n".join(job["script"])
    return script.replace("${CI_NODE_INDEX}", str(index)).replace("${CI_NODE_TOTAL}", str(total))


def test_both_examples_have_the_documented_shape() -> None:
    github, gitlab = _blocks()["GitHub Actions"], _blocks()["GitLab CI"]
    jobs = github["jobs"]
    assert set(jobs) == {"plan", "nnvts", "merge"}
    assert jobs["nnvts"]["needs"] == "plan" and set(jobs["merge"]["needs"]) == {"plan", "nnvts"}
    restores = [job for job in jobs.values() for s in job["steps"] if "cache/restore" in s.get("uses", "")]
    assert restores == [jobs["plan"]], "only the plan job restores the durations cache"
    assert gitlab["nnvts"]["needs"] == ["nnvts-plan"] and "cache" not in gitlab["nnvts"]
    for job in (jobs["plan"], jobs["nnvts"], jobs["merge"]):
        assert any("pip install plan/nnvts-*.whl" in s.get("run", "") for s in job["steps"]), \
            "every job installs the wheel the plan job built (no index serves nnvts)"
    assert any("pip wheel --no-deps -w plan" in s.get("run", "") for s in jobs["plan"]["steps"])
    assert any("pip wheel --no-deps -w plan" in line for line in gitlab["nnvts-plan"]["script"])
    assert any("corpus import aosp" in line for line in gitlab["nnvts-plan"]["script"])
    text = DOC.read_text(encoding="utf-8")
    assert "pip install nnvts" not in text, "no index serves nnvts"


@pytest.mark.parametrize("previous_run", [False, True], ids=["first_run", "with_last_run"])
@pytest.mark.parametrize("merge_status", [0, 1], ids=["merge_passes", "merge_fails"])
def test_github_jobs_run_under_pipefail(tmp_path: Path, previous_run: bool, merge_status: int) -> None:
    jobs = _blocks()["GitHub Actions"]["jobs"]
    env = {**_stubs(tmp_path), "STUB_MERGE_STATUS": str(merge_status)}
    work = tmp_path / "work"
    work.mkdir()
    if previous_run:
        (work / "last").mkdir()
        (work / "last" / "durations.json").write_text("{}")
        (work / "last" / "run.jsonl").write_text("{}")
    for script in (_github_steps(jobs["plan"], 0), _github_steps(jobs["nnvts"], 2)):
        result = _run(script, work, env)
        assert result.returncode == 0, result.stderr
    merged = _run(_github_steps(jobs["merge"], 0), work, env)
    assert merged.returncode == merge_status, merged.stderr
    assert (work / "last" / "run.jsonl").exists(), "the merged run is kept for the next pipeline, also when it failed"
    log = (tmp_path / "log").read_text()
    assert "nnvts corpus import aosp frameworks-ml/nn --out corpus" in log
    run_line = next(line for line in log.splitlines() if line.startswith("nnvts run"))
    assert "--shard 2/4" in run_line and ("--durations-from plan/durations.json" in run_line) == previous_run
    assert not (work / "plan" / "run.jsonl").exists(), "the shards get the durations, not the last run's results"
    merge_line = next(line for line in log.splitlines() if line.startswith("nnvts merge"))
    assert ("--baseline baseline/run.jsonl" in merge_line) == previous_run
    assert "nnvts durations shard-2.jsonl --out last/durations.json" in log


@pytest.mark.parametrize("previous_run", [False, True], ids=["first_run", "with_last_run"])
def test_gitlab_jobs_run_under_pipefail(tmp_path: Path, previous_run: bool) -> None:
    config = _blocks()["GitLab CI"]
    env = _stubs(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    if previous_run:
        (work / "last").mkdir()
        (work / "last" / "durations.json").write_text("{}")
        (work / "last" / "run.jsonl").write_text("{}")
    for script in (_gitlab_steps(config["nnvts-plan"], 1, 4), _gitlab_steps(config["nnvts"], 3, 4),
                   _gitlab_steps(config["nnvts-merge"], 1, 4)):
        result = _run(script, work, env)
        assert result.returncode == 0, result.stderr
    log = (tmp_path / "log").read_text()
    run_line = next(line for line in log.splitlines() if line.startswith("nnvts run"))
    assert "--shard 3/4" in run_line and ("--durations-from plan/durations.json" in run_line) == previous_run
    assert not (work / "plan" / "run.jsonl").exists(), "the shards get the durations, not the last run's results"
    merge_line = next(line for line in log.splitlines() if line.startswith("nnvts merge"))
    assert ("--baseline last/run.jsonl" in merge_line) == previous_run
    assert os.path.exists(work / "last" / "run.jsonl") and "--out last/durations.json" in log
