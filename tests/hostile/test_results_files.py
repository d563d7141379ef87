"""Results files read back are untrusted: every reader exits 2 naming the file, the line and the reason.

Each hostile file goes to every command that reads results back (``report``, ``merge``, ``expectations
update``, and ``run --baseline / --last-failed / --durations-from``): a line nesting 100 000 arrays, bytes
that are not UTF-8, a line far longer than any case record (written sparse: a hole reads as NUL bytes).
"""

from __future__ import annotations

import json

import pytest

from vts.bounds import MAX_RESULTS_LINE

HEADER = json.dumps({"nnvts_results": 1, "driver": {"name": "x"}}) + "\n"


def _deep(path) -> str:
    path.write_text(HEADER + "[" * 100_000 + "]" * 100_000 + "\n" + json.dumps({"summary": {}}) + "\n")
    return "2: JSON nested more than 64 levels deep"


def _not_utf8(path) -> str:
    path.write_bytes(HEADER.encode() + b'{"case": "\xff\xfe"}\n')
    return "2: not UTF-8 text (byte 10 of the line: b'\\xff')"


def _long_line(path) -> str:
    with open(path, "wb") as handle:
        handle.write(HEADER.encode())
        handle.truncate(len(HEADER) + (1 << 40))  # a 1 TiB line that takes no disk
    return "2: line longer than 4 MiB"


def _deep_report(path) -> str:
    path.write_text('{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return "JSON nested more than 64 levels deep"


FILES = {"deep": _deep, "not_utf8": _not_utf8, "long_line": _long_line, "deep_report": _deep_report}


def _commands(results: str, tmp_path, spec: str) -> dict[str, tuple[str, ...]]:
    run = ("run", "--driver", "reference", "--family", "generated", spec)
    return {
        "report": ("report", results, "--json", str(tmp_path / "o.json")),
        "merge": ("merge", results, "--json", str(tmp_path / "o.json")),
        "expectations": ("expectations", "update", "--from", results, "--out", str(tmp_path / "x.txt")),
        "baseline": (*run, "--baseline", results),
        "last_failed": (*run, "--last-failed", results),
        "durations_from": (*run, "--shard", "1/2", "--durations-from", results),
    }


@pytest.mark.parametrize("command", ["report", "merge", "expectations", "baseline", "last_failed", "durations_from"])
@pytest.mark.parametrize("kind", sorted(FILES))
def test_a_hostile_results_file_is_a_usage_error(tmp_path, add_mul, nnvts, kind, command):
    results = tmp_path / ("r.json" if kind == "deep_report" else "r.jsonl")
    reason = FILES[kind](results)
    argv = _commands(str(results), tmp_path, add_mul[0])[command]
    done = nnvts(*argv, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr[-2000:]
    assert f"{results}:{reason}" in done.stderr or (f"{results}" in done.stderr and reason in done.stderr), (
        done.stderr[-2000:])


def test_the_line_bound_leaves_room_for_real_records():
    assert MAX_RESULTS_LINE >= 1 << 20


def test_absurd_durations_in_a_results_file_still_give_every_report(tmp_path, nnvts):
    """1e303 s is finite, but not in microseconds: the JUnit report's time once raised OverflowError."""
    results = tmp_path / "r.jsonl"
    cases = [{"name": f"c{n}", "family": "generated", "verdict": "passed", "duration": duration}
             for n, duration in enumerate([1e303, 1.5, float("nan"), -4.0])]
    results.write_text("\n".join(json.dumps(record) for record in
                                 [{"nnvts_results": 1}, *({"case": case} for case in cases), {"summary": {}}]) + "\n")
    paths = {kind: str(tmp_path / f"o.{kind}") for kind in ("json", "junit", "html")}
    done = nnvts("report", str(results), *(f"--{kind}={path}" for kind, path in paths.items()), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert [case["duration"] for case in json.loads((tmp_path / "o.json").read_text())["cases"]] == [1e9, 1.5, 0.0, 0.0]
    assert 'time="1000000001.500"' in (tmp_path / "o.junit").read_text()
