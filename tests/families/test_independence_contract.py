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

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = "the families are independent of each other"


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the tree at ``root`` (the repository root on sys.path, as in CI)."""
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if tool is None:
        pytest.skip("import-linter is not installed (pip install -e .[dev])")
    return subprocess.run([tool, "--config", str(root / "pyproject.toml")], cwd=root, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def _copy_tree(destination: Path) -> None:
    """The packages the contracts read, and the contract types of our own (``tools``), copied."""
    for part in ("vts", "drivers", "tools"):
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, destination / part,
                            ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o"))
    shutil.copy(ROOT / "pyproject.toml", destination / "pyproject.toml")


def test_the_real_tree_keeps_the_families_independent() -> None:
    result = _lint_imports(ROOT)
    assert f"{CONTRACT} KEPT" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


def test_an_import_of_another_family_breaks_the_contract(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    burst = tmp_path / "vts" / "families" / "burst.py"
    burst.write_text(burst.read_text() + "\nfrom vts.families.fenced import OwnFenceChecks  # noqa: E402,F401\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert f"{CONTRACT} BROKEN" in result.stdout
    assert "vts.families.burst -> vts.families.fenced" in result.stdout
