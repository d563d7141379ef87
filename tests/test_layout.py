"""The floors of docs/architecture.md hold: the import contract, no cycles, no loose modules.

``lint-imports`` (import-linter) checks the floors and "drivers see only the
HAL"; a second run over a copy with one upward import proves the contract
can fail.  ``tools/layout_report.py`` counts what import-linter does not see:
module cycles (function-level imports included) and loose modules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import layout_report  # noqa: E402

from tests.lint_imports import copy_tree, lint_imports  # noqa: E402


def test_import_contracts_are_kept() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    # The floors, drivers-see-only-the-HAL, harness-never-imports-a-driver, private names, independent families.
    assert "5 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    copy_tree(tmp_path)
    errors = tmp_path / "vts" / "hal" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom vts.run import runner  # noqa: E402,F401\n")
    engine = tmp_path / "nnvts" / "drivers" / "engine" / "nnapi.py"
    engine.write_text(engine.read_text() + "\nfrom vts.model import casemodel  # noqa: E402,F401\n")
    session = tmp_path / "vts" / "run" / "session.py"
    session.write_text(session.read_text() + "\nfrom nnvts.drivers.reference import device  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "vts.hal.errors -> vts.run.runner" in result.stdout
    assert "nnvts.drivers.engine.nnapi -> vts.model.casemodel" in result.stdout
    assert "vts.run.session -> nnvts.drivers.reference.device" in result.stdout  # the harness never imports a driver


def test_no_import_cycles_and_no_loose_modules(capsys: pytest.CaptureFixture[str]) -> None:
    layout_report.main([str(ROOT)])
    report = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines() if ": " in line)
    assert report["module import cycles (strongly connected groups)"] == "0"
    assert report["package-level cycles"] == "0"
    assert report["upward imports"] == "0"
    assert report["imports between packages of one floor"] == "0"
    assert report["loose modules at vts/ top level"].startswith("0")
