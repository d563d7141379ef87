"""``nnvts corpus import aosp`` against a tree written by an attacker: its ``.mod.py`` files try to switch the
importer's audit hook off (through the frames, or gc's list of every object), read a file outside the tree
into the output, create files outside and leave a process running; an earlier import's folder in --out is a
link to somebody else's folder.  Each such spec fails alone, nothing is written or deleted outside, no
process is left."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import confined_shell
from tests.spec.aosp_helpers import AOSP_NN, SPECS, SYNTHETIC_ADD, make_tree, nnvts

pytestmark = pytest.mark.skipif(not AOSP_NN.is_dir(), reason="../shared/aosp-nn not present")

SECRET = "12345.5"  # read into a case's input values by f_reads

#: file -> (spec text, what its one-line reason must say).  {secret}, {outside}, {marker}: filled in below.
ATTACKS = {
    "b_frame.mod.py": ("import sys\nframe = sys._getframe()\nwhile frame is not None:\n"
                       "    for value in [*frame.f_locals.values(), *frame.f_globals.values()]:\n"
                       "        if hasattr(value, 'active'):\n            value.active = False\n"
                       "    frame = frame.f_back\n"
                       "open('{outside}/frame.txt', 'w').close()\n" + SYNTHETIC_ADD, "writes the file"),
    "d_gc.mod.py": ("import gc\nfor o in gc.get_objects():\n    if hasattr(o, 'active'):\n        o.active = False\n"
                    "open('{outside}/gc.txt', 'w').close()\n" + SYNTHETIC_ADD, "gc.get_objects"),
    "f_reads.mod.py": (SYNTHETIC_ADD.replace("[1.0, 2.0]", "[float(open('{secret}').read()), 2.0]"),
                       "reads the file"),
    "h_spawns.mod.py": ("import _posixsubprocess\n" + SYNTHETIC_ADD, "imports _posixsubprocess"),
    "j_forks.mod.py": ("import os\nif os.fork() == 0:\n    import time\n    open('{marker}', 'w').close()\n"
                       "    time.sleep(60)\n" + SYNTHETIC_ADD, "os.fork"),
    "l_lists.mod.py": ("import os\nnames = os.listdir('{outside}')\n" + SYNTHETIC_ADD, "lists the folder"),
    "n_code.mod.py": ("def f():\n    pass\nf.__code__ = (lambda: None).__code__\n" + SYNTHETIC_ADD, "rewrites code"),
}


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("attacked")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    marker = root / "forked.marker"
    files = {name: text.replace("{secret}", str(outside / "secret.txt")).replace("{outside}", str(outside))
             .replace("{marker}", str(marker)) for name, (text, _) in ATTACKS.items()}
    for letter in "aceg":
        files[f"{letter}_good.mod.py"] = SYNTHETIC_ADD.replace('"op1"', f'"in_{letter}"')
    nn = make_tree(root, {"V1_0": files})
    out = root / "out"
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(out), "--timeout", "20", "-q", timeout=300)
    return root, outside, out, marker, done


def test_each_attack_fails_its_spec_alone(attacked):
    _root, _outside, _out, _marker, done = attacked
    assert done.returncode == 1, done.stdout + done.stderr
    failures = [line for line in done.stderr.splitlines() if line.startswith("nnvts: V1_0/")]
    assert len(failures) == len(ATTACKS), done.stderr
    for line, (name, (_, reason)) in zip(failures, sorted(ATTACKS.items()), strict=True):
        assert line.startswith(f"nnvts: V1_0/{name}: ") and reason in line, (name, line)
    assert "4 imported" in done.stdout, done.stdout


def test_nothing_was_written_outside_nor_read_into_the_output(attacked):
    root, outside, out, _marker, _done = attacked
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not list(root.glob("*.txt"))
    for spec in out.rglob("*.json.gz"):
        import gzip

        assert SECRET.encode() not in gzip.decompress(spec.read_bytes())


def test_no_process_is_left_running(attacked):
    _root, _outside, _out, marker, _done = attacked
    time.sleep(0.5)
    assert not marker.exists(), "a process forked by a spec ran"
    leftovers = subprocess.run(["pgrep", "-f", "time.sleep\\(60\\)|forked.marker"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == "", leftovers.stdout


def test_the_first_wall_holds_without_the_hook(tmp_path):
    """The sandbox alone (no audit hook: a program the child started): it runs as an unprivileged user (as
    nobody for a root harness), writes fail inside the import's folder as outside it, a file only root may
    read stays unread, and a process left in the background dies with the child."""
    from vts.ipc.sandbox import probe

    if not probe().sandboxed:
        pytest.skip(f"no sandbox here: {probe().reason}")
    root = tmp_path / "root"
    work = root / "work"
    work.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    marker = tmp_path / "late.txt"
    owned = Path("/var/tmp") / f"nnvts-owned-{os.getpid()}"
    owned.write_text("secret")
    owned.chmod(0o600)
    # The uid, and the user namespace's map: nnvts's own sandbox runs the child as the root of a namespace whose
    # one uid is nobody outside it (bubblewrap runs it as nobody).
    script = (f"echo $(id -u) $(head -n 1 /proc/self/uid_map); "
              f"touch {outside} 2>/dev/null; (sleep 1; touch {marker}) & touch {work}/inside.txt "
              f"2>/dev/null; cat {owned} 2>/dev/null; exit 0")
    try:
        returncode, out = confined_shell(root, script)
    finally:
        owned.unlink()
    assert returncode == 0, out
    uid, inside, outside_uid, count, *rest = out.decode().split()
    assert uid != "0" or os.geteuid() != 0 or (inside, outside_uid, count) == ("0", "65534", "1"), out
    assert rest == [], out  # nothing read
    assert not (work / "inside.txt").exists() and not outside.exists()
    time.sleep(1.5)
    assert not marker.exists(), "a background process outlived the sandbox"


def test_a_link_inside_out_is_refused_before_anything_is_written_or_deleted(tmp_path):
    nn = make_tree(tmp_path, {"V1_0": {"add.mod.py": SYNTHETIC_ADD, "other.mod.py": SYNTHETIC_ADD.replace(
        '"op1"', '"x"')}})
    out = tmp_path / "out"
    first = nnvts("corpus", "import", "aosp", str(nn), "--out", str(out), "-q")
    assert first.returncode == 0, first.stderr
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("add.json.gz", "other.json.gz", "keep.txt"):
        (victim / name).write_text("keep me")
    os.rename(out / "V1_0", tmp_path / "moved")
    os.symlink(victim, out / "V1_0")
    (nn / SPECS / "V1_0" / "other.mod.py").unlink()  # its output would be deleted
    (nn / SPECS / "V1_0" / "add.mod.py").write_text(SYNTHETIC_ADD + "\n# changed\n")  # and this one rewritten
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(out), "-q")
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert "V1_0 is a symbolic link" in line, line
    assert sorted(p.name for p in victim.iterdir()) == ["add.json.gz", "keep.txt", "other.json.gz"]
    assert all(p.read_text() == "keep me" for p in victim.iterdir())


def test_out_given_as_a_link_is_resolved(tmp_path):
    nn = make_tree(tmp_path, {"V1_0": {"add.mod.py": SYNTHETIC_ADD}})
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "out")
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(tmp_path / "out"), "-q")
    assert done.returncode == 0, done.stderr
    assert (real / "V1_0" / "add.json.gz").exists()
