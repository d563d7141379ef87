"""Drivers that try to leave their sandbox (issue 42; docs/sandbox.md): every probe is refused.

Each probe driver (``tests.fakes.escape``) tries one escape on its MUL case
and fails that case with "escaped: ..." when it works.  Without the
sandbox (``git stash`` the ``vts/ipc/sandbox`` package, or the figures of
bench/README.md "Driver sandbox") every one of them escapes: the stream is
rewritten, the .pth file lands in site-packages, the harness's secret is
read, 600 forks succeed, six children hold twice the memory limit, the full
/tmp costs the run its results.  They run as root (CI is root) and, where
this Python can be reached by another user, once as ``nobody`` too.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.fakes.escape import LIMIT_ENV, OWNED_ENV, PTH_NAME, SECRET_ENV, STREAM_ENV, TARGET_ENV
from tests.fakes.hostile import PORT_ENV
from tests.hostile.conftest import confined_shell, run_harness
from tests.ipc.conftest import ROOT, nnvts_command, nnvts_env
from vts.ipc.sandbox import probe

ADD, MUL = "hand_add_float.add", "hand_mul_float.mul"

pytestmark = pytest.mark.skipif(not probe().sandboxed, reason=f"no sandbox on this machine: {probe().reason}")


@pytest.fixture(autouse=True, params=["bwrap", "nnvts"])
def kind(request, monkeypatch) -> str:
    """Each probe against both sandboxes: bubblewrap, and nnvts's own namespace code (``NNVTS_SANDBOX``)."""
    if request.param == "bwrap" and probe().name != "bwrap":
        pytest.skip(f"no bubblewrap here: {probe().reason}")
    monkeypatch.setenv("NNVTS_SANDBOX", request.param)
    return request.param


def _driver(name: str) -> tuple[str, ...]:
    return ("--driver", f"tests.fakes.escape:{name}", "--family", "generated", "--timeout", "30")


def _contained(run) -> None:
    """Both cases passed: the probe was refused (an escape fails the MUL case with its reason)."""
    assert run.case(ADD)["verdict"] == "passed", run.report["cases"]
    mul = run.case(MUL)
    assert mul["verdict"] == "passed", mul
    assert run.report["driver"]["sandbox"].split()[0] == os.environ["NNVTS_SANDBOX"]


def test_a_driver_cannot_rewrite_its_verdicts(tmp_path, add_mul3, monkeypatch):
    """The driver fails its MUL cases, and rewrites every stream it finds to say "passed": none is reachable."""
    monkeypatch.setenv(STREAM_ENV, str(tmp_path / "r.jsonl"))
    run = run_harness(tmp_path, *_driver("rewriting_device"), "-j", "1", *add_mul3)  # one worker: cases in order
    assert run.returncode == 1, run.stderr[-2000:]
    assert [case["verdict"] for case in run.report["cases"]] == ["passed", "failed", "failed", "failed"]
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [line["case"]["verdict"] for line in lines if "case" in line] == ["passed", "failed", "failed", "failed"]


def test_a_stream_rewritten_under_the_harness_is_a_run_error(tmp_path, add_mul3):
    """In process (no sandbox can help) the driver does rewrite the --jsonl file: exit 2, "results tampered",
    and the JSON report still says what happened (it is rendered from the harness's own record)."""
    jsonl, report = tmp_path / "r.jsonl", tmp_path / "r.json"
    done = subprocess.run(nnvts_command("run", *_driver("rewriting_device"), "--in-process", "-j", "1", "--jsonl",
                                        str(jsonl), "--json", str(report), *add_mul3),
                          cwd=ROOT, env=nnvts_env(**{STREAM_ENV: str(jsonl)}), capture_output=True, text=True,
                          timeout=120)
    assert jsonl.read_text().count('"verdict":"failed"') == 1  # the driver did rewrite the first two
    assert done.returncode == 2, done.stderr[-2000:]
    assert "results tampered" in done.stderr
    assert [case["verdict"] for case in json.loads(report.read_text())["cases"]] == ["passed", *["failed"] * 3]


def test_nothing_the_driver_leaves_runs_later(tmp_path, add_mul):
    """A .pth file in nnvts's site-packages would run in every later Python: the installation is read-only."""
    pth = os.path.join(sysconfig.get_paths()["purelib"], PTH_NAME)
    try:
        _contained(run_harness(tmp_path, *_driver("pth_device"), *add_mul))
        assert not os.path.exists(pth)
    finally:
        if os.path.exists(pth):
            os.unlink(pth)


@pytest.mark.parametrize("where", ["home", "installation"])
def test_the_driver_writes_nothing_outside_its_scratch_directory(tmp_path, add_mul, monkeypatch, where):
    folder = os.path.expanduser("~") if where == "home" else ROOT
    target = os.path.join(folder, f".nnvts-escape-{secrets.token_hex(4)}")
    monkeypatch.setenv(TARGET_ENV, target)
    try:
        _contained(run_harness(tmp_path, *_driver("target_device"), *add_mul))
        assert not os.path.exists(target)
    finally:
        if os.path.exists(target):
            os.unlink(target)


def test_no_harness_secret_reaches_the_driver(tmp_path, add_mul, monkeypatch):
    """Not in its environment, not in any /proc/PID/environ (even after unmounting its /proc, as root tried)."""
    monkeypatch.setenv(SECRET_ENV, secrets.token_hex(8))
    _contained(run_harness(tmp_path, *_driver("secrets_device"), *add_mul))


def test_the_driver_is_not_the_owner_of_the_root_harness_files(tmp_path, add_mul, monkeypatch):
    """A root harness's driver runs as nobody, even where the harness's Python lives under a folder closed to
    nobody (a pyenv Python under ``/root``: only that Python is shown to it): as root without capabilities
    it was still the owner of every root-owned file, and read them."""
    if os.geteuid() != 0:
        pytest.skip("the harness is not root: its driver runs as its own user")
    folder = Path("/var/tmp") / f"nnvts-owned-{secrets.token_hex(4)}"
    folder.mkdir(mode=0o755)
    owned = folder / "key"
    owned.write_text("secret\n")
    owned.chmod(0o600)
    monkeypatch.setenv(OWNED_ENV, str(owned))
    try:
        _contained(run_harness(tmp_path, *_driver("root_files_device"), *add_mul))
    finally:
        shutil.rmtree(folder)


def test_driver_env_passes_a_variable_on_purpose(tmp_path, add_mul, monkeypatch):
    """``--driver-env NAME`` is the way to give the driver one more variable: the same probe now finds it."""
    monkeypatch.setenv(SECRET_ENV, secrets.token_hex(8))
    run = run_harness(tmp_path, *_driver("secrets_device"), "--driver-env", SECRET_ENV, *add_mul)
    assert "escaped" in run.case(MUL)["reason"], run.case(MUL)


def test_the_driver_cannot_join_the_harness_network_namespace(tmp_path, add_mul, monkeypatch):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        monkeypatch.setenv(PORT_ENV, str(listener.getsockname()[1]))
        _contained(run_harness(tmp_path, *_driver("setns_device"), *add_mul))


@pytest.mark.parametrize("limits", ["cgroup", "rlimit"])
def test_a_fork_bomb_stays_within_the_task_limit(tmp_path, add_mul, monkeypatch, limits):
    """By the tree's cgroup where one can be made, else by RLIMIT_NPROC under the sandbox's user (forced
    here with ``NNVTS_TREE_LIMITS=rlimit``: it binds because that user is not root)."""
    if limits == "rlimit":
        if os.geteuid() == 0 and "uid 0" in probe().describe():
            pytest.skip("the driver runs as root here: RLIMIT_NPROC does not bind it")
        monkeypatch.setenv("NNVTS_TREE_LIMITS", "rlimit")
    run = run_harness(tmp_path, *_driver("forks_device"), *add_mul)
    _contained(run)
    assert ("rlimits" in run.stderr) == (limits == "rlimit" or "rlimits" in probe().describe()), run.stderr[-600:]


def test_six_children_share_one_memory_limit(tmp_path, add_mul, monkeypatch):
    """Six children each holding a third of --memory-limit: the limit is the tree's, so they cannot all hold
    (the kernel ends some; the case then passes or crashes, never escapes)."""
    monkeypatch.setenv(LIMIT_ENV, "512")
    run = run_harness(tmp_path, *_driver("memory_device"), "--memory-limit", "512", *add_mul)
    assert run.case(ADD)["verdict"] == "passed"
    assert "escaped" not in run.case(MUL).get("reason", ""), run.case(MUL)


def test_a_driver_filling_its_temporary_directory_costs_no_result(tmp_path, add_mul, monkeypatch):
    """The harness's own temporary directory is a 32 MiB tmpfs (as in the issue); the driver writes 256 MiB
    into its TMPDIR and leaves the file: every result is reported, and nothing is left in the harness's."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting the harness's small tmpfs needs root")
    small = tmp_path / "small-tmp"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(small)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        monkeypatch.setenv("TMPDIR", str(small))
        run = run_harness(tmp_path, *_driver("fill_tmp_device"), *add_mul)
        _contained(run)
        assert not [name for name in os.listdir(small) if name.startswith("nnvts-escape-fill-")]
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_probes_from_a_harness_that_is_not_root(kind):
    """The same sandbox for a harness run by an unprivileged user (``setpriv`` to nobody): the secret stays out."""
    import tempfile

    from tests.conftest import hand_add_float
    from tests.ipc.conftest import hand_mul_float, write_spec
    from vts.ipc.sandbox.view import MountPlan

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (to become nobody) and setpriv")
    closed = MountPlan.for_host([], os.pathsep.join([ROOT])).closed
    if closed:
        pytest.skip(f"nobody cannot reach this Python ({closed[0]}): a non-root harness cannot even start here")
    work = Path(tempfile.mkdtemp(prefix="nnvts-nobody-", dir="/var/tmp"))
    try:
        specs = [write_spec(work, hand_add_float()), write_spec(work, hand_mul_float())]
        for path in (work, *work.iterdir()):
            shutil.chown(path, 65534, 65534)
        env = nnvts_env(**{SECRET_ENV: "x" * 16, "HOME": str(work)})
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               *nnvts_command("run", *_driver("secrets_device"), "--json", str(work / "r.json"),
                                              *specs)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads((work / "r.json").read_text())["driver"]["sandbox"].split()[0] == kind
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_the_usual_devices_work(tmp_path, monkeypatch, kind):
    """``> /dev/null`` (an open with O_CREAT) works in either sandbox: nnvts's own once made /dev a sticky
    world-writable tmpfs, where the kernel refuses O_CREAT on a device owned by another user (EACCES)."""
    from vts.ipc.sandbox import core

    monkeypatch.setattr(core, "_probed", None)  # found again, under this test's NNVTS_SANDBOX
    assert probe().name == kind
    _, out = confined_shell(tmp_path, "echo x > /dev/null && echo null; head -c 3 /dev/zero | wc -c")
    assert out.decode().split() == ["null", "3"], out
