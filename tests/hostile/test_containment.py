"""Drivers that turn on the harness itself: signals, escapes, the network (docs/protocol.md §1, "Containment").

Each driver host runs in PID, mount and network namespaces of its own
(``vts.ipc.contain``).  These drivers misbehave on their MUL case the way
the issue lists them: stop or kill their parent, hunt the harness in
/proc, escape by double fork + setsid + re-exec, reach a loopback port.
Without the namespaces the harness freezes, dies, or leaves processes
behind, and these tests fail.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time

import pytest

from tests.fakes.hostile import ORPHAN_MARK, PORT_ENV, TAG_ENV, VICTIM_ENV
from tests.hostile.conftest import run_harness, survivors
from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env
from vts.ipc import contain

ADD, MUL = "hand_add_float.add", "hand_mul_float.mul"

pytestmark = pytest.mark.skipif(not contain.probe().available,
                                reason=f"this system refuses namespaces: {contain.probe().reason}")


def _passed(run) -> None:
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.case(ADD)["verdict"] == run.case(MUL)["verdict"] == "passed", run.report["cases"]


@pytest.mark.parametrize("driver", ["stop_parent_device", "kill_parent_device", "proc_scan_device"])
def test_a_driver_cannot_signal_the_harness(tmp_path, add_mul, monkeypatch, driver):
    """SIGSTOP / SIGKILL to os.getppid(), or to every process of the harness found in /proc: nothing lands."""
    monkeypatch.setenv(VICTIM_ENV, secrets.token_hex(8))
    run = run_harness(tmp_path, "--driver", f"tests.fakes.hostile:{driver}", "--family", "generated",
                      "--timeout", "20", *add_mul)
    _passed(run)


def test_the_network_is_off_unless_allowed(tmp_path, add_mul, monkeypatch):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        monkeypatch.setenv(PORT_ENV, str(listener.getsockname()[1]))
        args = ("--driver", "tests.fakes.hostile:network_device", "--family", "generated", "--timeout", "20")
        _passed(run_harness(tmp_path, *args, *add_mul))
        allowed = run_harness(tmp_path, *args, "--allow-network", *add_mul)
    mul = allowed.case(MUL)
    assert mul["verdict"] == "failed" and "reached the network" in mul["reason"], mul


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _tagged(tag: str) -> list[int]:
    """Live processes whose environment carries ``TAG_ENV=tag``: the harness and its driver hosts."""
    entry = f"{TAG_ENV}={tag}\0".encode()
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if entry in handle.read() + b"\0":
                    with open(f"/proc/{name}/stat", "rb") as stat:
                        if stat.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                            found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_killed_harness_leaves_no_driver_process(tmp_path, add_mul):
    """The driver double-forks, setsid()s and re-execs an escapee with an empty environment, then hangs;
    the harness is SIGKILLed: the driver, its escapee and everything else of its namespace end with it."""
    tag = secrets.token_hex(6)
    mark = ORPHAN_MARK + tag
    command = nnvts_command("run", "--driver", "tests.fakes.hostile:escape_and_hang_device", "--family",
                            "generated", "--timeout", "300", *add_mul)
    harness = subprocess.Popen(command, cwd=ROOT, env=nnvts_env(**{TAG_ENV: tag}), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(lambda: survivors(mark), 120), "the driver never started its escapee"
        assert [pid for pid in _tagged(tag) if pid != harness.pid], "no driver host found"
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    assert _wait_for(lambda: not survivors(mark) and not _tagged(tag), 20), (
        f"left running: {survivors(mark) + _tagged(tag)}")


def test_contained_hosts_report_their_driver_own_exit(tmp_path, add_mul):
    """The host's init passes the driver's own death on: SIGSEGV, not the init's exit status."""
    run = run_harness(tmp_path, "--driver", "tests.fakes.misbehaving:segfault_device", "--family", "generated",
                      *add_mul)
    assert run.case(MUL)["verdict"] == "crash" and "killed by SIGSEGV" in run.case(MUL)["reason"]
    assert os.environ.get("NNVTS_NO_NAMESPACES", "") in ("", "0")
