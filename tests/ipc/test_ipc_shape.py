"""vts/ipc keeps to its seams: small modules, short functions, no module reaching into another's privates."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

from tests.ipc.conftest import ROOT

IPC = Path(ROOT) / "vts" / "ipc"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(IPC.rglob("*.py"))}


def _private_owners(modules: dict[Path, ast.Module]) -> dict[str, set[Path]]:
    """Private attribute name -> the modules whose classes define it (a method, or ``self._x``)."""
    owners: dict[str, set[Path]] = collections.defaultdict(set)
    for path, tree in modules.items():
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    owners[node.name].add(path)
                elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                      and node.value.id == "self"):
                    owners[node.attr].add(path)
    return owners


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_modules_and_functions_are_small():
    problems = []
    for path, tree in _modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines >= MAX_MODULE_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    assert not problems


def test_no_module_reaches_into_another_modules_privates():
    modules = _modules()
    owners = _private_owners(modules)
    problems = []
    for path, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                where = owners.get(node.attr, set())
                if where and path not in where:  # a class of another module owns it (one of its own may share it)
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vts."):
                problems += [f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{alias.name}"
                             for alias in node.names if _private(alias.name)]
    assert not problems


def test_the_package_fronts_name_public_names_only():
    import vts.ipc
    import vts.ipc.protocol

    for package in (vts.ipc, vts.ipc.protocol):
        assert package.__all__ and not [name for name in package.__all__ if name.startswith("_")]
        assert all(hasattr(package, name) for name in package.__all__)
    assert not [name for name in vars(vts.ipc.protocol) if _private(name) and not name.startswith("__")]
