"""``nnvts corpus import aosp`` on bad input: a broken tree is a one-line usage error (exit 2); a
hostile ``.mod.py`` fails alone, named with its reason on one line (exit 1), while the other specs
are imported and neither SRC nor DIR is written by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.aosp_helpers import AOSP_NN, SPECS, SYNTHETIC_ADD, make_tree, nnvts
from vts.spec.loader import load_paths

pytestmark = pytest.mark.skipif(not AOSP_NN.is_dir(), reason="../shared/aosp-nn not present")

#: file -> (spec text, what its one-line reason must say).  Good specs sit between them in sorted order,
#: so a spec after a dead child is run by a fresh one.
HOSTILE = {
    "b_raises.mod.py": ("raise ValueError('no such operand')\n", "raised ValueError: no such operand (line 1)"),
    "d_loops.mod.py": ("while True:\n    pass\n", "time limit"),
    "f_memory.mod.py": ("hoard = []\nwhile True:\n    hoard.append(bytearray(1 << 24))\n", "memory"),
    "h_prints.mod.py": ("import sys\nfor _ in range(64):\n    sys.stdout.write('x' * (1 << 16))\n",
                        "printed more than 1 MiB"),
    "j_writes.mod.py": ("open('{src}/written.txt', 'w').write('x')\n", "writes the file"),
    "l_writes_relative.mod.py": ("open('escape.txt', 'w').write('x')\n", "writes the file 'escape.txt'"),
    "n_removes.mod.py": ("import os\nos.remove('{src}/runtime/test/specs/V1_0/a_good.mod.py')\n",
                         "does what a spec may not (os.remove)"),
    "p_exits.mod.py": ("import os\nos._exit(3)\n", "the interpreter exited with status 3"),
    "r_writes_out.mod.py": ("import os\nos.makedirs('{out}/V1_0/x', exist_ok=True)\n", "os.mkdir"),
    "t_hides_it.mod.py": ("try:\n    open('{out}/planted.json', 'w')\nexcept OSError:\n    pass\n" + SYNTHETIC_ADD,
                          "writes the file"),
    "v_fds.mod.py": ("import os\nos.write(1, b'y' * (2 << 20))\n", "printed more than 1 MiB"),
    "x_pipe.mod.py": ("import json, os, sys\nos.write(json.loads(sys.argv[1])['results_fd'], b'{\"event\": 1}\\n')\n"
                      + SYNTHETIC_ADD, "wrote to the importer's results pipe"),
}


def good(name: str) -> str:
    return SYNTHETIC_ADD.replace('"op1"', f'"{name}"')


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    root = tmp_path_factory.mktemp("hostile")
    out = root / "out"
    nn = root / "nn"
    files = {name: text.replace("{src}", str(nn)).replace("{out}", str(out)) for name, (text, _) in HOSTILE.items()}
    for letter in "acegikmoqsuw":
        files[f"{letter}_good.mod.py"] = good(f"in_{letter}")
    make_tree(root, {"V1_0": files})
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(out), "--timeout", "4", "--memory-limit", "700",
                 "-q", timeout=300)
    return nn, out, done


def test_each_hostile_spec_fails_alone_on_one_line(hostile_run: tuple[Path, Path, object]) -> None:
    _, _out, done = hostile_run
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == len(HOSTILE), lines
    for line, (name, (_, reason)) in zip(lines, sorted(HOSTILE.items()), strict=True):
        assert line.startswith(f"nnvts: V1_0/{name}: "), line
        assert reason in line, (name, line)


def test_the_good_specs_around_them_are_imported(hostile_run: tuple[Path, Path, object]) -> None:
    _, out, done = hostile_run
    names = sorted(spec.name for spec in load_paths([str(out)]))
    assert names == [f"{letter}_good" for letter in "acegikmoqsuw"]
    assert "12 imported (12 written)" in done.stdout and f"{len(HOSTILE)} failed" in done.stdout


def test_nothing_was_written_into_src_or_dir(hostile_run: tuple[Path, Path, object]) -> None:
    nn, out, _ = hostile_run
    assert not (nn / "written.txt").exists() and not (out / "planted.json").exists()
    assert (nn / SPECS / "V1_0" / "a_good.mod.py").exists()
    assert not (out / "V1_0" / "x").exists()
    assert not list(nn.rglob("escape.txt")) and not list(out.rglob("escape.txt"))
    assert sorted(p.name for p in out.rglob(".tmp*")) == []  # no half-written file left behind
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == {".nnvts-import.json"} | {f"V1_0/{letter}_good.json.gz" for letter in "acegikmoqsuw"}


def test_a_failed_spec_is_retried_next_time(hostile_run: tuple[Path, Path, object]) -> None:
    nn, out, _ = hostile_run
    (nn / SPECS / "V1_0" / "b_raises.mod.py").write_text(good("fixed"))
    for name in HOSTILE:
        if name != "b_raises.mod.py":
            (nn / SPECS / "V1_0" / name).unlink()
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(out), "-q")
    assert done.returncode == 0, done.stderr
    assert "1 imported (1 written), 12 unchanged" in done.stdout


def test_a_tampered_index_cannot_make_the_importer_delete_other_files(tmp_path: Path) -> None:
    import json

    from vts.spec.aosp.importer import import_tree
    from vts.spec.aosp.index import INDEX_NAME

    nn = make_tree(tmp_path, {"V1_0": {"add.mod.py": SYNTHETIC_ADD, "other.mod.py": good("x")}})
    out = tmp_path / "out"
    import_tree(nn, out)
    victim = tmp_path / "victim.json.gz"
    victim.write_text("keep me")
    index = json.loads((out / INDEX_NAME).read_text())
    index["specs"]["V1_0/add.mod.py"]["output"] = "../victim.json.gz"
    planted = dict(index["specs"]["V1_0/other.mod.py"], output="V1_0/../../victim.json.gz")
    index["specs"]["V1_0/../../x.mod.py"] = planted
    (out / INDEX_NAME).write_text(json.dumps(index))
    (nn / SPECS / "V1_0" / "add.mod.py").unlink()
    result = import_tree(nn, out)
    assert victim.read_text() == "keep me"
    assert result.removed == [] and result.skipped == ["V1_0/other.mod.py"]


def test_src_without_the_generator_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "nn" / SPECS / "V1_0").mkdir(parents=True)
    (tmp_path / "nn" / SPECS / "V1_0" / "add.mod.py").write_text(SYNTHETIC_ADD)
    done = nnvts("corpus", "import", "aosp", str(tmp_path / "nn"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "test_generator.py" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_folder_of_other_specs_is_never_overwritten(tmp_path: Path) -> None:
    """A DIR with files but no import index (say, a shared corpus) is refused, untouched."""
    nn = make_tree(tmp_path, {"V1_0": {"add.mod.py": SYNTHETIC_ADD}})
    theirs = tmp_path / "theirs" / "V1_0" / "add.json.gz"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(b"not ours")
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(tmp_path / "theirs"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and ".nnvts-import.json" in done.stderr
    assert theirs.read_bytes() == b"not ours"


@pytest.mark.parametrize("layout", ["no_specs_folder", "empty_specs", "missing_src", "unknown_version"])
def test_unknown_layout_is_a_usage_error(tmp_path: Path, layout: str) -> None:
    nn = make_tree(tmp_path, {"V1_0": {"add.mod.py": SYNTHETIC_ADD}})
    extra = []
    if layout == "no_specs_folder":
        for spec in (nn / SPECS / "V1_0").iterdir():
            spec.unlink()
        (nn / SPECS / "V1_0").rmdir()
        (nn / SPECS).rmdir()
    elif layout == "empty_specs":
        (nn / SPECS / "V1_0" / "add.mod.py").unlink()
    elif layout == "missing_src":
        nn = tmp_path / "nowhere"
    else:
        extra = ["--versions", "V1_0,V1_7"]
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(tmp_path / "out"), *extra)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("nnvts: error: "), done.stderr
    assert not (tmp_path / "out").exists()
