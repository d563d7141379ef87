"""The figures of issue 39 that are not about floors: families, long functions, runners, fronts, citations.

``tools/layout_report.py`` prints them after its floor figures.  Each
function returns the items it counts, so ``--verbose`` can list what a
number is made of.  Stdlib only (``ast`` and ``re``), like the report.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

#: Modules of vts.families that are shared machinery, not a family.
NOT_FAMILIES = frozenset({"_kit", "base", "registry", "catalogue"})

#: A function longer than this is a candidate for splitting (issue 39).
LONG_FUNCTION = 80

#: The classes that run cases; the run plan (docs/architecture.md) wants them built in one place.
RUNNER_CLASSES = frozenset({"Runner", "IsolatedRunner"})

#: Pages cited in the code that are not in the repository (the team's design pages), or a §-reference to one.
#: Built from parts so that this file does not cite them itself.
_CITATION = re.compile("|".join([
    r"(?:test-)?catalogue §",
    "test" + r"-catalogue",
    "hal" + r"-reference",
    "HAL reference" + " §",
    r"shared/" + "design",
    # a bare page name; one in quotes is a path built in code (``root / "docs" / "x.md"``), not a citation
    r"(?<![\w/.\"'-])(?:docs/)?(?:style|architecture|spec-format)\.md",
]))

#: Files the citation count reads.
_TEXT_SUFFIXES = frozenset({".py", ".md", ".toml", ".json", ".c", ".h", ".txt", ".cfg"})


def family_of(module: str) -> str | None:
    """The family a module of vts.families belongs to, or None (the package itself, the kit, base, registry)."""
    parts = module.split(".")
    if parts[:2] != ["vts", "families"] or len(parts) < 3 or parts[2] in NOT_FAMILIES:
        return None
    return parts[2]


def imports_between_families(edges: Mapping[str, Iterable[str]]) -> list[str]:
    """Each import edge (function-level ones included) from one family's module to another family's."""
    found = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            a, b = family_of(source), family_of(target)
            if a and b and a != b:
                found.append(f"{source} -> {target}")
    return found


def _trees(files: Mapping[str, Path]) -> Iterable[tuple[str, ast.Module]]:
    for name, path in sorted(files.items()):
        yield name, ast.parse(path.read_text(encoding="utf-8"))


def long_functions(files: Mapping[str, Path], limit: int = LONG_FUNCTION) -> list[str]:
    """``module.qualname (N lines)`` for every function or method longer than ``limit`` lines."""
    found: list[str] = []

    def visit(node: ast.AST, module: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualname = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > limit:
                        found.append(f"{module}.{qualname} ({length} lines)")
                visit(child, module, qualname + ".")
            else:
                visit(child, module, prefix)

    for module, tree in _trees(files):
        visit(tree, module, "")
    return found


def runner_constructions(files: Mapping[str, Path]) -> list[str]:
    """``module:line Class`` for every call of a runner class."""
    found = []
    for module, tree in _trees(files):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name in RUNNER_CLASSES:
                    found.append(f"{module}:{node.lineno} {name}")
    return found


def _bound_names(statement: ast.stmt) -> Iterable[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield statement.name
    elif isinstance(statement, ast.Assign):
        for target in statement.targets:
            yield from (node.id for node in ast.walk(target) if isinstance(node, ast.Name))
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign) and isinstance(statement.target, ast.Name):
        yield statement.target.id
    elif isinstance(statement, ast.If | ast.Try):
        for block in (statement.body, statement.orelse, getattr(statement, "finalbody", [])):
            for inner in block:
                yield from _bound_names(inner)


def public_top_level_names(files: Mapping[str, Path]) -> list[str]:
    """``module.name`` for every module-level def, class or assignment whose name has no leading underscore."""
    found = set()
    for module, tree in _trees(files):
        for statement in tree.body:
            found.update(f"{module}.{name}" for name in _bound_names(statement) if not name.startswith("_"))
    return sorted(found)


def packages_with_all(files: Mapping[str, Path]) -> tuple[list[str], list[str]]:
    """(packages whose ``__init__`` assigns ``__all__``, those whose does not)."""
    with_all, without = [], []
    for module, path in sorted(files.items()):
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {name for statement in tree.body for name in _bound_names(statement)}
        names |= {statement.target.id for statement in tree.body
                  if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)}
        has_all = "__all__" in names or any(
            isinstance(node, ast.Name) and node.id == "__all__" and isinstance(node.ctx, ast.Store)
            for node in ast.walk(tree))
        (with_all if has_all else without).append(module)
    return with_all, without


def unresolved_citations(root: Path, parts: Iterable[str]) -> list[str]:
    """``path:line: text`` for every line citing a design page that a fresh clone does not have.

    A ``docs/NAME.md`` citation, or a bare ``NAME.md`` in a page of docs/,
    resolves when that page exists; a bare ``NAME.md`` elsewhere, a
    ``§``-reference and the shared design folder never do.
    """
    found = []
    for part in parts:
        top = root / part
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.suffix in _TEXT_SUFFIXES)
        for path in paths:
            if "__pycache__" in path.parts or path.resolve() == Path(__file__).resolve():
                continue
            in_docs = path.parent == root / "docs"
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if any(not _resolves(match.group(0), root, in_docs) for match in _CITATION.finditer(line)):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:140]}")
    return found


def _resolves(citation: str, root: Path, in_docs: bool) -> bool:
    if not citation.endswith(".md"):
        return False
    if citation.startswith("docs/"):
        return (root / citation).is_file()
    return in_docs and (root / "docs" / citation).is_file()
