"""The families are independent of each other: an import-linter contract keeps them so.

A helper two families need lives in the private kit (``vts/families/_kit``);
a family reaching into another family's module couples their changes and
their import cost.  The contract ("the families are independent of each
other", pyproject.toml) makes such an import fail the build.  These tests
check that the real tree keeps it and that a planted import breaks it,
naming the import; the contract's name only is asserted, never the count of
contracts, which other contracts change.
"""

from __future__ import annotations

from pathlib import Path

from tests.lint_imports import ROOT, copy_tree, lint_imports

CONTRACT = "the families are independent of each other"


def test_the_real_tree_keeps_the_families_independent() -> None:
    result = lint_imports(ROOT)
    assert f"{CONTRACT} KEPT" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


def test_an_import_of_another_family_breaks_the_contract(tmp_path: Path) -> None:
    copy_tree(tmp_path)
    burst = tmp_path / "vts" / "families" / "burst.py"
    burst.write_text(burst.read_text() + "\nfrom vts.families.fenced import OwnFenceChecks  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert f"{CONTRACT} BROKEN" in result.stdout
    assert "vts.families.burst -> vts.families.fenced" in result.stdout
