"""Interrupting the harness: reports stay valid, and no driver host outlives the run.

Ctrl-C (SIGINT) ends the run cleanly: every report is written with the
cases that completed and ``interrupted: true``.  SIGKILL leaves no chance to
write anything, so the JSON-lines stream is what survives: every completed
case is a complete line.  Either way the driver host dies with the harness
(it gets SIGKILL through PR_SET_PDEATHSIG, or sees its socket close).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT, hand_mul_float, nnvts_command, nnvts_env, write_spec
from vts.report.stream import read_stream


def _processes_tagged(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if f"NNVTS_TEST_TAG={tag}".encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _wait_for_cases(path, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                if sum('"case"' in line for line in handle) >= count:
                    return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} cases completed within {timeout} s")


def _wait_gone(tag: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [pid for pid in _processes_tagged(tag) if _is_alive(pid)]
        if not alive:
            return []
        time.sleep(0.05)
    return alive


def _is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def _start(tmp_path, factory: str) -> tuple[subprocess.Popen, str, dict]:
    specs = [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float(models=12))]
    tag = uuid.uuid4().hex
    paths = {name: tmp_path / f"r.{name}" for name in ("json", "xml", "jsonl")}
    process = subprocess.Popen(
        nnvts_command("run", "--driver", f"tests.fakes.misbehaving:{factory}", "--family", "generated",
                      "--json", str(paths["json"]), "--junit", str(paths["xml"]), "--jsonl", str(paths["jsonl"]),
                      *specs),
        cwd=ROOT, env=nnvts_env(NNVTS_TEST_TAG=tag), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return process, tag, paths


@pytest.fixture
def slow_run(tmp_path):
    """``nnvts run`` on a slow driver over 13 cases: (process, tag, paths)."""
    started = _start(tmp_path, "slow_device")
    yield started
    if started[0].poll() is None:
        started[0].kill()
        started[0].wait()


def test_sigint_leaves_complete_reports_and_no_host(slow_run):
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        pytest.skip("SIGINT is ignored here (a background job): the run inherits that and must keep it")
    process, tag, paths = slow_run
    _wait_for_cases(paths["jsonl"], 3)
    process.send_signal(signal.SIGINT)
    assert process.wait(30) == 130
    report = json.loads(paths["json"].read_text())
    assert report["interrupted"] is True
    completed = report["summary"]["total"]
    assert 3 <= completed < 13
    assert all(case["verdict"] == "passed" for case in report["cases"])
    assert int(ET.parse(paths["xml"]).getroot().get("tests")) == completed
    _, cases, footer = read_stream(str(paths["jsonl"]))
    assert len(list(cases)) == completed and footer is not None and footer["interrupted"] is True
    assert _wait_gone(tag) == []


def test_sigkill_keeps_every_completed_case_in_the_stream_and_takes_the_host_down(slow_run):
    process, tag, paths = slow_run
    _wait_for_cases(paths["jsonl"], 3)
    assert _processes_tagged(tag), "the driver host should be running"
    process.kill()
    process.wait(10)
    header, cases, footer = read_stream(str(paths["jsonl"]))
    completed = list(cases)
    assert header["driver"]["isolation"] == "process"
    assert len(completed) >= 3 and all(case.verdict.value == "passed" for case in completed)
    assert footer is None  # killed: no summary line, and nothing torn before it
    with open(paths["jsonl"], encoding="utf-8") as handle:
        for line in handle.read().splitlines():
            json.loads(line)
    assert _wait_gone(tag) == []


def test_sigkill_during_a_hung_driver_call_still_takes_the_host_down(tmp_path):
    """The host is stuck in a driver call and reads nothing: only the parent-death signal can end it."""
    process, tag, paths = _start(tmp_path, "hang_device")
    try:
        _wait_for_cases(paths["jsonl"], 1)  # the ADD case; the first MUL case then hangs in the driver
        time.sleep(0.5)
        assert [pid for pid in _processes_tagged(tag) if pid != process.pid]
        process.kill()
        process.wait(10)
        assert _wait_gone(tag, timeout=3.0) == []
    finally:
        if process.poll() is None:
            process.kill()


def test_a_signal_in_the_import_lock_callback_is_recorded_not_raised():
    """Python drops an exception raised in the import system's weakref callback (printing a traceback), so the
    handler records the signal there and the run loops stop on it after the case."""
    import sys

    from vts.run import signals

    namespace: dict = {"sys": sys}
    exec(compile("def cb():\n    return sys._getframe()\n", "<frozen importlib._bootstrap>", "exec"), namespace)
    signals.reset()
    try:
        signals._handler(signal.SIGTERM, namespace["cb"]())
        assert signals.received() == signal.SIGTERM
        signals.reset()
        with pytest.raises(signals.Interrupted):
            signals._handler(signal.SIGTERM, sys._getframe())
    finally:
        signals.reset()
