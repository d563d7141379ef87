"""nnvts generate: deterministic, idempotent output; --check reports staleness and writes nothing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spec.helpers import BASE, write
from vts.spec.errors import SpecError
from vts.spec.loader import SpecFile, load_file, load_paths
from vts.spec.writer import render, write_generated

VARIED = BASE + "    variations:\n      - [none, relaxed, float16]\n"


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    write(folder, "add.yaml", VARIED)
    write(folder, "mul.yaml", BASE.replace("name: t\n", "name: mul\n").replace("type: ADD", "type: MUL"))
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_generate_writes_one_canonical_file_per_spec(specs: Path, tmp_path: Path) -> None:
    out = tmp_path / "generated"
    result = write_generated(load_paths([str(specs)]), str(out), check=False)
    assert [os.path.basename(p) for p in result.written] == ["mul.json", "t.json"]
    assert result.applied and not result.removed
    document = json.loads((out / "t.json").read_text())
    assert [m["name"] for m in document["models"]] == ["add", "add_relaxed", "add_float16"]
    text = (out / "t.json").read_text()
    operand = '{"name": "a", "type": "TENSOR_FLOAT32", "dims": [2], "lifetime": "SUBGRAPH_INPUT"}'
    assert f"\n          {operand},\n" in text
    assert text.endswith("}\n")


def test_generate_is_idempotent_and_output_reloads_identically(specs: Path, tmp_path: Path) -> None:
    out = tmp_path / "generated"
    write_generated(load_paths([str(specs)]), str(out), check=False)
    first = snapshot(out)
    again = write_generated(load_paths([str(specs)]), str(out), check=False)
    assert not again.stale and len(again.unchanged) == 2
    assert snapshot(out) == first
    # Generating from the generated files reproduces them byte for byte.
    regenerated = write_generated(load_paths([str(out)]), str(out), check=True)
    assert not regenerated.stale
    for spec in load_paths([str(out)]):
        assert render(spec.document).encode() == first[os.path.basename(spec.path)]


def test_check_reports_stale_files_and_writes_nothing(specs: Path, tmp_path: Path) -> None:
    out = tmp_path / "generated"
    missing = write_generated(load_paths([str(specs)]), str(out), check=True)
    assert len(missing.stale) == 2 and not out.exists() and not missing.applied
    write_generated(load_paths([str(specs)]), str(out), check=False)
    fresh = write_generated(load_paths([str(specs)]), str(out), check=True)
    assert not fresh.stale

    write(specs, "add.yaml", VARIED.replace("[none, relaxed, float16]", "[none, relaxed]"))
    (out / "orphan.json").write_text("{}")
    (out / "README.md").write_text("not ours")
    before = snapshot(out)
    stale = write_generated(load_paths([str(specs)]), str(out), check=True)
    assert [os.path.basename(p) for p in stale.written] == ["t.json"]
    assert [os.path.basename(p) for p in stale.removed] == ["orphan.json"]
    assert snapshot(out) == before
    assert "would write 1, would remove 1" in str(stale)

    applied = write_generated(load_paths([str(specs)]), str(out), check=False)
    assert applied.stale and not (out / "orphan.json").exists() and (out / "README.md").exists()
    assert not write_generated(load_paths([str(specs)]), str(out), check=True).stale


def test_duplicate_spec_names_are_refused(specs: Path, tmp_path: Path) -> None:
    write(specs, "again.yaml", VARIED)
    with pytest.raises(SpecError, match="spec names must be unique"):
        write_generated(load_paths([str(specs)]), str(tmp_path / "out"), check=False)


def test_nothing_is_written_when_a_later_spec_fails(specs: Path, tmp_path: Path) -> None:
    out = tmp_path / "generated"

    def loaded() -> Iterator[SpecFile]:
        yield load_file(str(specs / "add.yaml"))
        raise SpecError("broken.yaml", 1, "", "broken")

    with pytest.raises(SpecError):
        write_generated(loaded(), str(out), check=False)
    assert not out.exists()


def test_render_is_valid_json_for_every_value_form(tmp_path: Path) -> None:
    document = json.loads(json.dumps(load_file(write(tmp_path, "t.yaml", VARIED)).document))
    model = document["models"][0]
    model["examples"][0]["outputs"]["out"] = {"value": [2, 4], "dims": [2]}
    model["referenced"] = [model["main"]]
    model["tolerance"] = {"quant": 2}
    model["examples"].append({"name": "b64", "inputs": {"a": {"b64": "AACAPwAAAEA="}}, "outputs": {}})
    text = render(document)
    assert json.loads(text) == document
    assert '"out": {"dims": [2], "value": [2, 4]}' in text
