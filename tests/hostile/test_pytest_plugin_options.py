"""The pytest plugin refuses what ``nnvts run`` refuses, in the same words, and never waits on a FIFO."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT, nnvts_env, write_spec

#: A usage error comes at once; a plugin that waits on a FIFO would wait forever.
QUICK = 60


def _pytest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                          cwd=ROOT, env=nnvts_env(), capture_output=True, text=True, timeout=QUICK)


def _nnvts_run(*args: str):
    from vts.cli.main import main

    return CliRunner().invoke(main, ["run", "--in-process", *args])


@pytest.mark.parametrize(("option", "value"), [
    ("timeout", "nan"), ("timeout", "0"), ("timeout", "-1"), ("timeout", "inf"),
    ("memory-limit", "-1"), ("reruns", "101"), ("max-crashes", "-1"),
])
def test_numbers_are_refused_as_nnvts_run_refuses_them(tmp_path, option, value):
    spec = write_spec(tmp_path, hand_add_float())
    run = _nnvts_run(spec, f"--{option}", value)
    assert run.exit_code == 2, run.output
    plugin = _pytest("--nnvts-specs", spec, "--nnvts-family", "generated", f"--nnvts-{option}", value,
                     "--collect-only")
    assert plugin.returncode == pytest.ExitCode.USAGE_ERROR, plugin.stdout + plugin.stderr
    # The reason nnvts run gives (after click's "Invalid value for '--timeout': "), word for word.
    reason = run.stderr.strip().rsplit(": ", 1)[-1]
    assert f"--nnvts-{option}: " in plugin.stderr and reason in plugin.stderr, (run.stderr, plugin.stderr)


def test_a_fifo_given_as_a_list_is_refused_without_blocking(tmp_path):
    spec = write_spec(tmp_path, hand_add_float())
    fifo = tmp_path / "xfail.fifo"
    os.mkfifo(fifo)
    plugin = _pytest("--nnvts-specs", spec, "--nnvts-family", "generated", "--nnvts-expected-failures", str(fifo),
                     "--collect-only")  # subprocess.run's timeout fails the test if it waits on the FIFO
    assert plugin.returncode == pytest.ExitCode.USAGE_ERROR, plugin.stdout + plugin.stderr
    assert "--nnvts-expected-failures" in plugin.stderr and "is not a regular file" in plugin.stderr
    run = _nnvts_run(spec, "--expected-failures", str(fifo))
    assert run.exit_code == 2 and "is not a regular file" in run.stderr


def test_a_fifo_given_as_a_report_is_refused_without_blocking(tmp_path):
    spec = write_spec(tmp_path, hand_add_float())
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    plugin = _pytest("--nnvts-specs", spec, "--nnvts-family", "generated", "--nnvts-jsonl", str(fifo),
                     "--collect-only")
    assert plugin.returncode == pytest.ExitCode.USAGE_ERROR, plugin.stdout + plugin.stderr
    assert "--nnvts-jsonl" in plugin.stderr and "not a regular file" in plugin.stderr


def test_a_report_naming_the_expectations_list_is_refused(tmp_path):
    spec = write_spec(tmp_path, hand_add_float())
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("# nothing expected\n")
    os.symlink(xfail, tmp_path / "link.json")
    plugin = _pytest("--nnvts-specs", spec, "--nnvts-family", "generated", "--nnvts-expected-failures", str(xfail),
                     "--nnvts-json", str(tmp_path / "link.json"), "--collect-only")
    assert plugin.returncode == pytest.ExitCode.USAGE_ERROR, plugin.stdout + plugin.stderr
    assert "is an input of this session" in plugin.stderr
    assert xfail.read_text() == "# nothing expected\n"
