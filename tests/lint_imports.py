"""Running ``lint-imports`` over the real tree or a copy with planted imports (the contract tests share it).

A contract that cannot fail proves nothing: each contract's test plants a
violation in a copy of the tree and checks that ``lint-imports`` names it.
The copy holds what the contracts read: the packages, and ``tools`` (the
private-names contract is a contract type of our own).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the tree at ``root`` (the repository root on sys.path, as in CI)."""
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if tool is None:
        pytest.skip("import-linter is not installed (pip install -e .[dev])")
    return subprocess.run([tool, "--config", str(root / "pyproject.toml")], cwd=root, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def copy_tree(destination: Path) -> Path:
    """The packages the contracts read, their contract types and the configuration, copied to ``destination``."""
    for part in ("vts", "nnvts", "tools"):
        shutil.copytree(ROOT / part, destination / part, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o"))
    shutil.copy(ROOT / "pyproject.toml", destination / "pyproject.toml")
    return destination
