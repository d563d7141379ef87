"""Reports under a full disk: every report that can be written is, each that cannot is named, exit status 2."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.ipc.conftest import ROOT, hand_mul_float, nnvts_command, nnvts_env, write_spec
from vts.report import stream as stream_module
from vts.report.files import FileReports
from vts.results import CaseResult, Verdict


class _FillsUp:
    """A text file that takes ``room`` flushes, then fails as a full disk does."""

    def __init__(self, real, room: int) -> None:
        self.real, self.room = real, room

    def write(self, text: str) -> int:
        return self.real.write(text)

    def flush(self) -> None:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= 1
        self.real.flush()

    def close(self) -> None:
        self.real.close()
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")


def _stream_written_through(monkeypatch, path: str, wrap) -> None:
    """The results stream at ``path``, opened for writing, is written through ``wrap(handle)``."""
    real_open = open

    def fake_open(name, *args, **kwargs):
        handle = real_open(name, *args, **kwargs)
        writing = "w" in (args[0] if args else kwargs.get("mode", "r"))
        return wrap(handle) if name == path and writing else handle

    monkeypatch.setattr(stream_module, "open", fake_open, raising=False)


@pytest.mark.hostile
def test_a_full_stream_leaves_the_json_report_written_and_named(tmp_path, monkeypatch):
    jsonl, json_path = str(tmp_path / "full" / "r.jsonl"), str(tmp_path / "r.json")
    _stream_written_through(monkeypatch, jsonl, lambda handle: _FillsUp(handle, 3))
    files = FileReports({"driver": {"name": "x"}}, jsonl, json_path)
    for i in range(10):
        files.add(CaseResult(name=f"case{i}", family="f", verdict=Verdict.PASSED))
    files.finish(interrupted=False)

    assert [path for path, _ in files.failures] == [jsonl]
    assert files.written == [("json", json_path)]
    report = json.loads(Path(json_path).read_text())
    assert len(report["cases"]) == 10 and report["summary"]["total"] == 10
    assert report["incomplete"] == [jsonl]


class _TearsBatch:
    """A text file whose disk fills up in the middle of a write of several lines: part of it lands."""

    def __init__(self, real, lines_before: int) -> None:
        self.real, self.lines_before, self.full = real, lines_before, False

    def write(self, text: str) -> int:
        if self.full or text.count("\n") <= 1:
            return self.real.write(text)
        self.full = True
        cut = len("".join(text.splitlines(keepends=True)[:self.lines_before])) + 7  # whole lines, then a torn one
        self.real.write(text[:cut])
        self.real.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        self.real.flush()

    def close(self) -> None:
        self.real.close()


@pytest.mark.hostile
def test_a_batch_torn_by_a_full_disk_is_in_the_json_report_once(tmp_path, monkeypatch):
    """A ``-j`` worker's batch is one write of many lines: what of it landed before the disk filled up must
    not be kept beside the whole batch written again."""
    from vts.report.batch import PlainTally, ResultBatch
    from vts.report.stream import case_line

    jsonl, json_path = str(tmp_path / "r.jsonl"), str(tmp_path / "r.json")
    _stream_written_through(monkeypatch, jsonl, lambda handle: _TearsBatch(handle, 2))
    files = FileReports({"driver": {"name": "x"}}, jsonl, json_path)
    files.add(CaseResult(name="first", family="f", verdict=Verdict.PASSED))
    results = [CaseResult(name=f"case{i}", family="f", verdict=Verdict.PASSED) for i in range(5)]
    tally = PlainTally()
    for result in results:
        tally.add(result)
    files.add_batch(ResultBatch.of([(case_line(r).encode(), True) for r in results], tally))
    files.add(CaseResult(name="last", family="f", verdict=Verdict.PASSED))
    files.finish(interrupted=False)

    assert [path for path, _ in files.failures] == [jsonl]
    report = json.loads(Path(json_path).read_text())
    assert [c["name"] for c in report["cases"]] == ["first", *(r.name for r in results), "last"]
    assert report["summary"]["total"] == 7


@pytest.fixture
def full_dir(tmp_path):
    """A 64 KiB tmpfs filled to the last byte (skipped where mounting is not permitted)."""
    where = tmp_path / "full"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with contextlib.suppress(OSError), open(where / "filler", "wb") as filler:
            for _ in range(1024):
                filler.write(b"x" * 4096)
                filler.flush()
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    spec = write_spec(tmp_path, hand_mul_float())
    return subprocess.run(nnvts_command("run", "--driver", "reference", "--in-process", spec, *args), cwd=ROOT,
                          env=nnvts_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.hostile
@pytest.mark.parametrize("full", ["jsonl", "json"])
def test_a_full_disk_fails_one_report_not_the_others(tmp_path, full_dir, full):
    paths = {kind: str((full_dir if kind == full else tmp_path) / f"r-{uuid.uuid4().hex[:6]}.{kind}")
             for kind in ("jsonl", "json", "xml")}
    done = _run(tmp_path, "--jsonl", paths["jsonl"], "--json", paths["json"], "--junit", paths["xml"])
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if "cannot write" in line]
    assert len(lines) == 1 and paths[full] in lines[0] and "No space left" in lines[0], done.stderr
    assert os.path.getsize(paths["xml"]) > 0
    if full == "jsonl":
        report = json.loads(Path(paths["json"]).read_text())
        assert report["incomplete"] == [paths["jsonl"]] and report["summary"]["total"] >= 1
    else:
        assert not os.path.exists(paths["json"])
        assert [json.loads(line) for line in Path(paths["jsonl"]).read_text().splitlines()][-1]["summary"]["total"] >= 1
