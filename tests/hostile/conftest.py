"""Running the harness against a hostile driver and checking it survived: verdicts, reports, time, memory."""

from __future__ import annotations

import json
import os
import subprocess
import time
import xml.dom.minidom
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT, hand_mul_float, nnvts, nnvts_command, nnvts_env, write_spec  # noqa: F401 - nnvts: a fixture

#: What a hostile run may cost the harness process (peak resident set) and take.
MAX_HARNESS_RSS = 1 << 30
MAX_SECONDS = 60.0


@dataclass
class HostileRun:
    returncode: int
    seconds: float
    peak_rss: int  # bytes, the harness process alone (VmHWM)
    report: dict[str, Any]
    stderr: str

    def case(self, name: str) -> dict[str, Any]:
        (found,) = [c for c in self.report["cases"] if c["name"] == name]
        return found


def _peak_rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def run_harness(tmp_path, *args: str, timeout: float = MAX_SECONDS) -> HostileRun:
    """``nnvts run ARGS`` with all four reports; asserts the harness ended by itself, within time and memory,
    with every report valid (JSON parses, JUnit parses with a strict XML parser, HTML written)."""
    paths = {kind: tmp_path / f"r.{kind}" for kind in ("json", "xml", "html", "jsonl")}
    for path in paths.values():
        if path.exists():
            path.unlink()
    command = nnvts_command("run", *args, "--json", str(paths["json"]), "--junit", str(paths["xml"]),
                            "--html", str(paths["html"]), "--jsonl", str(paths["jsonl"]))
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=nnvts_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    peak = 0
    try:
        while process.poll() is None:
            peak = max(peak, _peak_rss(process.pid) or 0)
            if time.monotonic() - start > timeout:
                process.kill()
                pytest.fail(f"the harness did not end within {timeout} s")
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            process.kill()
        stderr = process.stderr.read() if process.stderr else ""
        if process.stderr:
            process.stderr.close()
    seconds = time.monotonic() - start
    returncode = process.wait()
    assert returncode >= 0, f"the harness died of signal {-returncode}: {stderr[-2000:]}"
    assert returncode in (0, 1), f"exit status {returncode}: {stderr[-2000:]}"
    assert peak < MAX_HARNESS_RSS, f"the harness grew to {peak >> 20} MiB"
    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    dom = xml.dom.minidom.parse(str(paths["xml"]))
    assert int(dom.documentElement.getAttribute("tests")) == report["summary"]["total"]
    assert paths["html"].stat().st_size > 0
    for path in paths.values():
        assert path.stat().st_size < 8 << 20, f"{path.name} is {path.stat().st_size} bytes"
    return HostileRun(returncode, seconds, peak, report, stderr)


@pytest.fixture
def add_mul(tmp_path) -> list[str]:
    """An ADD spec (the hostile drivers behave) and a MUL spec (they do not)."""
    return [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float())]


@pytest.fixture
def add_mul3(tmp_path) -> list[str]:
    return [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float(models=3))]


def survivors(mark: str) -> list[int]:
    """Processes whose command line carries ``mark``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if mark.encode() in handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def confined_shell(root, script: str) -> tuple[int, bytes]:
    """``/bin/sh -c script`` run as the corpus import runs a generator (the drivers' sandbox, seeing ``root``):
    its exit status and its output (stdout and stderr together)."""
    from vts.spec.aosp.sandbox import _release, start_confined

    read, write = os.pipe()
    try:
        proc, launch = start_confined(root, lambda fd: ["/bin/sh", "-c", script], write, {"PATH": "/usr/bin:/bin"},
                                      1 << 30)
        os.close(write)
        out, _ = proc.communicate(timeout=30)
        _release(launch)
    finally:
        os.close(read)
    return proc.returncode, out
