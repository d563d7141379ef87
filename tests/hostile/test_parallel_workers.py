"""``-j N`` workers that die: no case lost, the death recorded as ``error`` (docs/protocol.md §8.1), and
``-k`` terms matched in the workers not reported as matching nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env, slot_names


def _workers(parent: int) -> list[int]:
    """The -j workers of ``parent``: its children started by multiprocessing's spawn."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                if int(stat.read().rsplit(b")", 1)[1].split()[1]) != parent:
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if b"spawn_main" in handle.read():
                    found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _lines(path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    return [json.loads(line) for line in text.splitlines()[:-1] if line.strip()]


def test_a_killed_worker_is_an_error_and_loses_no_case(tmp_path, add_mul3, nnvts):
    args = ("--driver", "tests.fakes.hostile:slow_device", "--family", "generated", "-k", "add or mul")
    listed = nnvts("list", *args[2:], *add_mul3).stdout.split()
    jsonl, report = tmp_path / "r.jsonl", tmp_path / "r.json"
    harness = subprocess.Popen(nnvts_command("run", *args, "-j", "2", "--job-split", "hash", "--jsonl", str(jsonl),
                                             "--json", str(report), *add_mul3),
                               cwd=ROOT, env=nnvts_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # The worker with the most cases (several slow MULs) is killed once the first result is in: it still has
    # work then, whatever the machine's load (the other slot may hold a single case, already done).  The hash
    # split makes that worker known beforehand; a replacement under the claim split is in test_ledger.py.
    per_slot = [len(names) for names in slot_names(add_mul3, ["generated"], 2)]
    assert sum(per_slot) == len(listed)
    busiest = per_slot.index(max(per_slot))
    try:
        deadline = time.monotonic() + 120
        # Found while both run: by the first result the idle slot's worker may be done and gone already.
        workers = sorted(_workers(harness.pid))  # spawned in slot order
        while len(workers) < 2 and harness.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
            workers = sorted(_workers(harness.pid))
        assert len(workers) == 2, "the -j workers were not found"
        while not [r for r in _lines(jsonl) if "case" in r] and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(workers[busiest], signal.SIGKILL)
        _, stderr = harness.communicate(timeout=180)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    cases = json.loads(report.read_text(encoding="utf-8"))["cases"]
    names = [c["name"] for c in cases if not c["name"].startswith("harness/")]
    assert sorted(names) == sorted(listed)
    deaths = [c for c in cases if c["verdict"] == "error" and "worker" in c["reason"]]
    assert len(deaths) == 1, cases
    assert harness.returncode == 1, stderr
    assert "matched no case" not in stderr, stderr


def test_keyword_terms_matched_by_workers_are_not_reported_unmatched(add_mul, nnvts):
    run = nnvts("run", "--driver", "reference", "--family", "generated", "-j", "2", "-k", "add or mul or nothing_x",
                *add_mul)
    assert run.returncode == 0, run.stderr
    assert "-k term 'nothing_x' matched no case" in run.stderr
    assert "'add' matched no case" not in run.stderr and "'mul' matched no case" not in run.stderr
