"""A spec's tolerance becomes typed criteria when the spec is loaded: a bad key is a load error."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import vts.cli.main as cli
from tests.spec.helpers import BASE, base_document, write
from vts.model.casemodel import parse_spec
from vts.model.compare import Tolerance
from vts.spec.checks import document_problems
from vts.spec.errors import SpecError
from vts.spec.loader import load_file

#: BASE with a tolerance on line 7, right after the model's name.
WITH_TOLERANCE = BASE.replace("  - name: add\n", "  - name: add\n    tolerance: {TOLERANCE}\n", 1)


def _spec(tmp_path: Path, tolerance: str) -> str:
    return write(tmp_path, "tol.yaml", WITH_TOLERANCE.replace("{TOLERANCE}", tolerance))


def test_a_spec_tolerance_is_typed_when_loaded(tmp_path: Path) -> None:
    (model,) = parse_spec(load_file(_spec(tmp_path, "{quant: 3}")).document)
    assert model.tolerance == Tolerance(quant=3)


@pytest.mark.parametrize(("tolerance", "pointer", "words"), [
    ("{qaunt: 3}", "/models/0/tolerance/qaunt", "unknown key 'qaunt'"),
    ("{quant: three}", "/models/0/tolerance/quant", "expected"),
    ("{quant: -1}", "/models/0/tolerance/quant", "expected"),
])
def test_a_bad_tolerance_is_a_load_error_naming_file_line_and_pointer(
        tmp_path: Path, tolerance: str, pointer: str, words: str) -> None:
    path = _spec(tmp_path, tolerance)
    with pytest.raises(SpecError) as info:
        load_file(path)
    error = info.value
    assert (error.path, error.line, error.pointer) == (path, 7, pointer)
    assert words in error.message


def test_a_misspelt_tolerance_key_exits_2_naming_file_line_and_pointer(tmp_path: Path) -> None:
    path = _spec(tmp_path, "{qaunt: 3}")
    result = CliRunner().invoke(cli.main, ["list", "--specs", path, "--count"])
    assert result.exit_code == 2
    assert f"{path}:7: /models/0/tolerance/qaunt: unknown key 'qaunt'" in result.stderr


def test_the_typed_criteria_check_what_the_schema_may_let_through() -> None:
    # The loader's semantic checks build the typed value too: keys the criteria do not know are problems there.
    document = base_document()
    document["models"][0]["tolerance"] = {"quant": 2, "atoll": 1e-3}
    problems = document_problems(document)
    assert [(p.pointer, p.message) for p in problems] == [
        ("/models/0/tolerance/atoll", "unknown tolerance key 'atoll' (expected one of: atol, quant, rtol)")]
