"""``nnvts corpus import aosp``: the import of Android's own tree equals ../shared/corpus case for case.

The V1_0..V1_2 import is done once per module (about a minute on two busy
cores); the shared data is read from ../shared and never copied into the
project.  Skipped where ../shared is absent.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.spec.aosp_helpers import AOSP_NN, CORPUS, SPECS, SYNTHETIC_ADD, SYNTHETIC_IF, make_tree, nnvts
from vts.spec.aosp.compare import differences
from vts.spec.aosp.importer import import_tree
from vts.spec.aosp.index import INDEX_NAME
from vts.spec.loader import load_paths

pytestmark = pytest.mark.skipif(not (AOSP_NN.is_dir() and CORPUS.is_dir()), reason="../shared not present")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("aosp") / "corpus"
    done = nnvts("corpus", "import", "aosp", str(AOSP_NN), "--out", str(out), "-j", "2", "-q")
    assert done.returncode == 0, done.stderr
    assert "505 imported (505 written), 0 unchanged" in done.stdout
    return out


def test_import_equals_the_shared_corpus_case_for_case(imported: Path) -> None:
    found = list(differences(imported, CORPUS))
    assert found == [], "\n".join(found[:20])


def test_case_counts_per_version_folder(imported: Path) -> None:
    counts = {}
    for spec in load_paths([str(imported)]):
        folder = Path(spec.path).parent.name
        counts[folder] = counts.get(folder, 0) + len(spec.models)
    assert counts == {"V1_0": 378, "V1_1": 575, "V1_2": 5187}


def test_variations_and_marks_are_kept(imported: Path) -> None:
    models = {(spec.name, m["name"]): m for spec in load_paths([str(imported / "V1_2")]) for m in spec.models}
    names = {name for _, name in models}
    for part in ("relaxed", "float16", "nchw", "channelQuant8", "all_inputs_as_internal", "all_tensors_as_inputs"):
        assert any(part in name for name in names), part
    assert sum(1 for m in models.values() if m.get("expect_failure")) > 0
    assert models[("random_multinomial", "random_multinomial")]["multinomial_tolerance"] > 0


def test_provenance_names_folder_file_and_licence(imported: Path) -> None:
    with gzip.open(imported / "V1_0" / "add.json.gz", "rt") as f:
        source = json.load(f)["source"]
    assert source["kind"] == "imported"
    assert "nn/runtime/test/specs/V1_0/add.mod.py" in source["detail"]
    assert "Apache License 2.0" in source["detail"]


def test_second_import_rewrites_nothing(imported: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in imported.rglob("*")}
    done = nnvts("corpus", "import", "aosp", str(AOSP_NN), "--out", str(imported), "-q")
    assert done.returncode == 0, done.stderr
    assert "0 imported (0 written), 505 unchanged" in done.stdout
    assert {p: p.stat().st_mtime_ns for p in imported.rglob("*")} == before


def test_changed_spec_reimports_alone(tmp_path: Path) -> None:
    source = AOSP_NN / SPECS / "V1_0"
    nn = make_tree(tmp_path, {"V1_0": {f: (source / f).read_text() for f in ("add.mod.py", "floor.mod.py")}})
    out = tmp_path / "out"
    first = import_tree(nn, out)
    assert first.written == ["V1_0/add.mod.py", "V1_0/floor.mod.py"] and not first.failures
    floor = (out / "V1_0" / "floor.json.gz").stat().st_mtime_ns
    spec = nn / SPECS / "V1_0" / "add.mod.py"
    spec.write_text(spec.read_text().replace("[4.0, 6.0]", "[4.0, 6.5]"))
    second = import_tree(nn, out)
    assert second.imported == second.written == ["V1_0/add.mod.py"] and second.skipped == ["V1_0/floor.mod.py"]
    assert (out / "V1_0" / "floor.json.gz").stat().st_mtime_ns == floor
    (nn / SPECS / "V1_0" / "floor.mod.py").unlink()
    third = import_tree(nn, out)
    assert third.removed == ["V1_0/floor.mod.py"] and not (out / "V1_0" / "floor.json.gz").exists()
    assert json.loads((out / INDEX_NAME).read_text())["specs"].keys() == {"V1_0/add.mod.py"}


def test_a_changed_generator_reimports_every_spec(tmp_path: Path) -> None:
    nn = make_tree(tmp_path, {"V1_0": {"add.mod.py": SYNTHETIC_ADD}})
    out = tmp_path / "out"
    import_tree(nn, out)
    generator = nn / "tools" / "test_generator" / "test_generator.py"
    generator.write_text(generator.read_text() + "\n# a comment\n")
    again = import_tree(nn, out)
    assert again.imported == ["V1_0/add.mod.py"] and again.written == []  # re-run, same spec: not rewritten


def test_a_folder_never_seen_imports_with_no_code_change(tmp_path: Path) -> None:
    """V1_2 copied as V1_9: the same cases (HAL version capped at the newest nnvts knows), and they pass."""
    nn = make_tree(tmp_path, {})
    shutil.copytree(AOSP_NN / SPECS / "V1_2", nn / SPECS / "V1_9")
    out = tmp_path / "out"
    done = nnvts("corpus", "import", "aosp", str(nn), "--out", str(out), "-j", "2", "-q")
    assert done.returncode == 0, done.stderr
    found = [d for d in differences(out / "V1_9", CORPUS / "V1_2") if "hal_version '1.3' != '1.2'" not in d]
    assert found == [], "\n".join(found[:20])
    sample = sorted((out / "V1_9").glob("*.json.gz"))[::12]
    run = nnvts("run", "--driver", "reference", "--in-process", "--family", "generated", "-q",
                *[arg for path in sample for arg in ("--specs", str(path))])
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_tiny_synthetic_spec_in_a_new_folder(tmp_path: Path) -> None:
    nn = make_tree(tmp_path, {"V1_3_cts_only": {"tiny_add.mod.py": SYNTHETIC_ADD}})
    out = tmp_path / "out"
    result = import_tree(nn, out)
    assert not result.failures and result.cases == {"V1_3_cts_only": 2}  # no constant tensor: no all_tensors_as_inputs
    [spec] = load_paths([str(out)])
    assert spec.name == "tiny_add" and spec.hal_version == "1.3"
    assert [m["name"] for m in spec.models] == ["tiny_add", "all_inputs_as_internal"]
    first = spec.models[0]
    assert "hal_version" not in first  # the generator names no version for this folder
    assert first["examples"] == [{"inputs": {"op1": [1.0, 2.0], "op2": [3.0, 4.0]}, "outputs": {"op3": [4.0, 6.0]}}]
    run = nnvts("run", "--driver", "reference", "--in-process", "--family", "generated", "--specs", str(out), "-q")
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_provenance_names_the_git_commit_of_src(tmp_path: Path) -> None:
    import subprocess

    nn = make_tree(tmp_path, {"V1_2": {"tiny_add.mod.py": SYNTHETIC_ADD}})
    git = ["git", "-C", str(nn), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    if shutil.which("git") is None:
        pytest.skip("no git")
    subprocess.run(["git", "init", "-q", str(nn)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], check=True)
    commit = subprocess.run(["git", "-C", str(nn), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    import_tree(nn, tmp_path / "out")
    [spec] = load_paths([str(tmp_path / "out")])
    assert f"nn/runtime/test/specs/V1_2/tiny_add.mod.py at commit {commit}" in spec.document["source"]["detail"]
    assert [m.get("hal_version") for m in spec.models] == ["1.2", "1.2"]
    edited = nn / SPECS / "V1_2" / "tiny_add.mod.py"
    edited.write_text(edited.read_text().replace("[4.0, 6.0]", "[4.0, 6.5]"))
    import_tree(nn, tmp_path / "out")
    [spec] = load_paths([str(tmp_path / "out")])
    assert f"at commit {commit} (with uncommitted changes)," in spec.document["source"]["detail"]


@pytest.mark.parametrize(("folder", "expected"), [("V1_0", "1.0"), ("V1_3", "1.3"), ("V1_3_cts_only", "1.3"),
                                                  ("V1_9", "1.3"), ("V2_0", "1.3"), ("experimental", None),
                                                  ("AIDL_V1", "FL5"), ("AIDL_V2", "FL6"), ("AIDL_V3", "FL7"),
                                                  ("AIDL_V4", "FL8"), ("AIDL_V9", "FL8")])
def test_hal_version_of_a_folder(folder: str, expected: str | None) -> None:
    from vts.spec.aosp.convert import hal_version

    assert hal_version(folder) == expected


@pytest.mark.parametrize(("test_name", "model"), [("add", "add"), ("add_relaxed", "relaxed"),
                                                  ("conv2d_v1_2_nchw_quant8", "nchw_quant8"), ("other", "other")])
def test_model_names_drop_the_spec_name(test_name: str, model: str) -> None:
    from vts.spec.aosp.convert import model_name

    spec = "conv2d_v1_2" if test_name.startswith("conv2d") else "add"
    assert model_name(test_name, spec) == model


def test_control_flow_keeps_its_referenced_subgraphs(tmp_path: Path) -> None:
    nn = make_tree(tmp_path, {"V1_3": {"if_simple.mod.py": SYNTHETIC_IF}})
    out = tmp_path / "out"
    result = import_tree(nn, out)
    assert not result.failures and result.cases == {"V1_3": 8}
    [spec] = load_paths([str(out)])
    assert [m["name"] for m in spec.models] == [
        "true", "true_all_inputs_as_internal", "false", "false_all_inputs_as_internal", "false_relaxed",
        "false_relaxed_all_inputs_as_internal", "false_float16", "false_float16_all_inputs_as_internal"]
    for model in spec.models:
        assert [o["value"] for o in model["main"]["operands"] if o["lifetime"] == "SUBGRAPH"] == [0, 1]
        assert [r["operations"][0]["type"] for r in model["referenced"]] == ["ADD", "SUB"]
    assert spec.models[6]["referenced"][0]["operands"][0]["type"] == "TENSOR_FLOAT16"
    run = nnvts("run", "--driver", "reference", "--in-process", "--family", "generated", "--specs", str(out), "-q")
    assert run.returncode == 0 and "8 passed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


#: PACK of two float32 [2] tensors along axis 1, in Android's DSL (goldens by hand: [[1, 3], [2, 4]]).
SYNTHETIC_PACK = """\
a = Input("a", "TENSOR_FLOAT32", "{2}")
b = Input("b", "TENSOR_FLOAT32", "{2}")
o = Output("out", "TENSOR_FLOAT32", "{2, 2}")
model = Model().Operation("PACK", Int32Scalar("axis", 1), a, b).To(o)
Example({a: [1.0, 2.0], b: [3.0, 4.0], o: [1.0, 3.0, 2.0, 4.0]})
"""


def test_an_aidl_folder_is_a_feature_level_of_a_packages_modules_tree(tmp_path: Path) -> None:
    nn = make_tree(tmp_path, {"AIDL_V2": {"tiny_pack.mod.py": SYNTHETIC_PACK}})
    out = tmp_path / "out"
    result = import_tree(nn, out)
    assert not result.failures and result.cases == {"AIDL_V2": 2}
    [spec] = load_paths([str(out)])
    assert spec.hal_version == "FL6"
    assert "packages/modules/NeuralNetworks/runtime/test/specs/AIDL_V2/tiny_pack.mod.py" in spec.document["source"][
        "detail"]
    run = nnvts("run", "--driver", "reference", "--in-process", "--family", "generated", "--specs", str(out), "-q")
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
