"""Running ``nnvts`` in a child process and measuring its peak memory, for the hostile-input tests.

The child's peak resident set comes from ``getrusage(RUSAGE_CHILDREN)``, read
by a small wrapper process that runs nothing but that one child, so the
figure is not the maximum over every child the test session ever started.
The subprocess timeout is a hang guard only, never a timing threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Generous bound on the memory a hostile input may cost (the brief's "under 1 GB").
MEMORY_BOUND = 1 << 30

#: Hang guard: a child still running after this long has hung.
HANG_GUARD = 120

_WRAPPER = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[3:], capture_output=True, text=True, errors="replace", timeout=float(sys.argv[2]))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
with open(sys.argv[1], "w") as out:
    json.dump({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "peak": peak}, out)
"""


@dataclass(frozen=True)
class ChildRun:
    returncode: int
    stdout: str
    stderr: str
    peak_rss: int  # bytes


def run_nnvts(*args: str, cwd: str = ROOT, timeout: float = HANG_GUARD) -> ChildRun:
    """``nnvts ARGS`` in a child process; its exit status, output and peak RSS."""
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200")
    with tempfile.TemporaryDirectory(prefix="nnvts-child-") as scratch:
        report = os.path.join(scratch, "child.json")
        subprocess.run([sys.executable, "-c", _WRAPPER, report, str(timeout), sys.executable, "-m", "cli", *args],
                       cwd=cwd, env=env, timeout=timeout + 30, check=True)
        with open(report) as f:
            data = json.load(f)
    return ChildRun(data["code"], data["stdout"], data["stderr"], data["peak"])


def assert_clean_usage_error(result: ChildRun, *words: str) -> None:
    """Exit 2, no traceback, the message holds ``words``, memory under the bound."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.startswith("nnvts: error: "), result.stderr[-2000:]
    for word in words:
        assert word in result.stderr, (word, result.stderr[-2000:])
    assert result.peak_rss < MEMORY_BOUND, f"peak RSS {result.peak_rss >> 20} MiB"
