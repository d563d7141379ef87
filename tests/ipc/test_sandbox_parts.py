"""The sandbox's parts, each alone (vts/ipc/sandbox): the seccomp program, the environment allowlist, the mount
plan, the tree limits.  The whole sandbox against hostile drivers is tests/hostile/test_sandbox.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from vts.ipc.sandbox import environment, limits, reveal, seccomp, view

_TRY_FILTER = r"""
import ctypes, os, sys, threading
from vts.ipc.sandbox.seccomp import filter_program
libc = ctypes.CDLL(None, use_errno=True)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
program = filter_program()
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.byref(Prog(len(program) // 8, program)), 0, 0) == 0
def refused(result):
    return "EPERM" if result == -1 and ctypes.get_errno() == 1 else f"allowed ({result})"
print("unshare", refused(libc.unshare(0x10000000)))
print("mount", refused(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
print("setns", refused(libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0)))
print("ptrace", refused(libc.ptrace(16, os.getppid(), 0, 0)))
x86 = os.uname().machine == "x86_64"
print("keyctl", refused(libc.syscall(250 if x86 else 219, 0, 0, 0, 0)))
print("clone-newuser", refused(libc.syscall(56 if x86 else 220, 0x10000000 | 17, 0, 0, 0, 0)))
worker = threading.Thread(target=lambda: None); worker.start(); worker.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.skipif(not seccomp.supported(), reason="no seccomp table for this architecture")
def test_the_filter_refuses_what_a_driver_never_needs_and_allows_threads_and_fork():
    done = subprocess.run([sys.executable, "-c", _TRY_FILTER], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert done.returncode == 0, done.stderr
    answers = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert answers == {"unshare": "EPERM", "mount": "EPERM", "setns": "EPERM", "ptrace": "EPERM",
                       "keyctl": "EPERM", "clone-newuser": "EPERM", "fork": "7"}


def test_the_program_is_whole_instructions_within_a_jump_s_reach():
    for machine in ("x86_64", "aarch64"):
        program = seccomp.filter_program(machine)
        assert len(program) % 8 == 0 and len(program) // 8 < 255


def test_the_environment_is_an_allowlist():
    harness = {"PATH": "/bin", "CI_JOB_TOKEN": "secret", "AWS_SECRET_ACCESS_KEY": "k", "OPENBLAS_NUM_THREADS": "1",
               "LC_ALL": "C", "NNVTS_XLA_BACKEND": "cpu", "NNVTS_SANDBOX_HIDE": "/r.jsonl", "HOME": "/root",
               "PYTHONPATH": "/x", environment.DRIVER_ENV: "AWS_SECRET_ACCESS_KEY"}
    assert environment.driver_environment(harness, extra=()) == {
        "PATH": "/bin", "OPENBLAS_NUM_THREADS": "1", "LC_ALL": "C", "NNVTS_XLA_BACKEND": "cpu", "PYTHONPATH": "/x"}
    assert environment.driver_environment(harness)["AWS_SECRET_ACCESS_KEY"] == "k"  # --driver-env, on purpose
    assert "CI_JOB_TOKEN" not in environment.driver_environment(harness)


def test_result_files_are_masked_and_a_masked_working_directory_is_left(tmp_path, monkeypatch):
    monkeypatch.delenv(view.HIDE_ENV, raising=False)
    stream, report = tmp_path / "r.jsonl", tmp_path / "r.json"
    view.hide_outputs([str(stream), str(report)], create=[str(stream)])
    assert stream.exists() and not report.exists()
    plan = view.MountPlan.for_host(["/bin/true"], "")
    assert plan.hidden_files == (str(stream.resolve()),)  # the report is masked once it exists
    monkeypatch.chdir(tmp_path)  # under /tmp, which the scratch directory covers
    assert plan.workdir() == view.SCRATCH or not str(tmp_path).startswith("/tmp/")


def test_a_tree_limit_is_a_cgroup_the_host_joins_before_it_runs_anything():
    if limits.cgroup_kind() == "rlimit":
        pytest.skip("no cgroup can be made here (the rlimit fallback applies)")
    tree = limits.TreeLimits(256 << 20, 64)
    assert tree.create()
    made = list(tree.directories)
    try:
        argv = tree.join_argv(["/bin/sh", "-c", "cat /proc/self/cgroup"])
        seen = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
        assert all(os.path.basename(directory) in seen for directory in tree.directories)
        pids = tree.directories[-1]
        with open(os.path.join(pids, "pids.max")) as handle:
            assert handle.read().strip() == "64"
    finally:
        tree.remove()
    assert made and not any(os.path.exists(directory) for directory in made)


def test_paths_closed_to_the_sandbox_user_are_shown_alone_and_read_only(monkeypatch):
    """A root harness's Python under ``/root`` (0700): the prefix stages that Python (and a driver there)
    while they can be reached, covers ``/root``, and moves them back read-only; nothing closed, nothing to
    do; too many, or not root: it cannot."""
    assert reveal.reveal_argv([]) == []
    if shutil.which("unshare") is None or shutil.which("mount") is None or not os.path.isdir("/dev/shm"):
        pytest.skip("no util-linux unshare and mount, or no /dev/shm, here")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(reveal, "closed_ancestor", lambda path: "/root")
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda path: path == "/root/.pyenv/versions/3.11.7" or (
        path != "/root/driver.so" and real_isdir(path)))
    argv = reveal.reveal_argv(["/root/.pyenv/versions/3.11.7", "/root/driver.so"])
    assert argv is not None and argv[:4] == [argv[0], "--mount", "--propagation", "private"]
    script = argv[argv.index("-c") + 1].splitlines()

    def at(ending: str) -> int:
        return next(i for i, line in enumerate(script) if line.endswith(ending))

    covered = at("nnvts-reveal /root")
    assert at("--bind /root/.pyenv/versions/3.11.7 /dev/shm/0") < covered
    assert at("--bind /root/driver.so /dev/shm/1") < covered
    assert covered < at("--move /dev/shm/0 /root/.pyenv/versions/3.11.7") < at(
        "-o remount,bind,ro /root/.pyenv/versions/3.11.7")
    assert covered < at("--move /dev/shm/1 /root/driver.so") < at("-o remount,bind,ro /root/driver.so")
    assert script[-3] == "umount /dev/shm" and script[-2].endswith("-o remount,ro /root")
    assert script[-1] == 'exec "$@"'
    assert reveal.reveal_argv([f"/root/{i}" for i in range(reveal.MAX_PATHS + 1)]) is None
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert reveal.reveal_argv(["/root/x"]) is None
