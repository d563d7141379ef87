"""Which imports take a private module or a private name from another package (docs/architecture.md).

A leading underscore says "mine": ``vts.families._kit`` belongs to
``vts.families``, ``_is_spec_name`` in ``vts.spec.loader`` belongs to
``vts.spec``.  The owner of a private module is the package around its
innermost private component; the owner of a private name is the package of
the module that defines it (the module itself when it is a package).  The
owner and everything inside it may use its privates; nothing else may.
Dunder names (``__version__``, ``__main__``) are not private.

One rule, two readers: the ``private_names`` import-linter contract
(``tools.import_contracts``) and ``tools/layout_report.py`` both ask
:func:`private_imports` of each file, so CI and the figures cannot disagree.
Stdlib only, so the figures run on any checkout.  Every import counts: the
ones inside functions and under ``TYPE_CHECKING`` too, as import-linter's
graph counts them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class PrivateImport:
    """One import of something private from outside its owner."""

    importer: str
    line: int
    #: The private module, or ``module.name`` for a private name.
    imported: str
    #: The package the private thing belongs to.
    owner: str
    kind: str  # "module" or "name"

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} -> {self.imported} (a private {self.kind} of {self.owner})"


def is_private(component: str) -> bool:
    return component.startswith("_") and not (component.startswith("__") and component.endswith("__"))


def module_owner(module: str) -> str | None:
    """The package a module is private to (that of its innermost private component), or None if public."""
    parts = module.split(".")
    for index in range(len(parts) - 1, 0, -1):
        if is_private(parts[index]):
            return ".".join(parts[:index])
    return None


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(root: Path, path: Path) -> str:
    """The dotted name of the module at ``path`` (a package by its ``__init__.py``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of the given top-level packages under ``root``, by dotted name."""
    return {module_name(root, path): path for package in packages
            for path in sorted((root / package).rglob("*.py")) if "__pycache__" not in path.parts}


def absolute_import(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in ``importer`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(tree: ast.AST, importer: str, is_package: bool) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name or None) for every name each import statement takes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            module = absolute_import(importer, is_package, node)
            for alias in node.names:
                yield node.lineno, module, alias.name


def private_imports(importer: str, files: Mapping[str, Path]) -> list[PrivateImport]:
    """The imports in one module that reach a private module or name outside its owner.

    ``files`` maps every known module to its file: ``from P import X`` takes
    the submodule ``P.X`` where there is one, else the name X of ``P``.
    """
    path = files[importer]
    roots = {known.split(".")[0] for known in files}
    found: dict[tuple[int, str], PrivateImport] = {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for line, module, name in _imports(tree, importer, path.name == "__init__.py"):
        if module.split(".")[0] not in roots:
            continue
        submodule = f"{module}.{name}" if name else None
        if submodule in files:
            module, name = submodule, None
        owner = module_owner(module)
        if owner is not None and not inside(importer, owner):
            found[line, module] = PrivateImport(importer, line, module, owner, "module")
        if name is not None and name != "*" and is_private(name):
            is_package = module in files and files[module].name == "__init__.py"
            owner = module if is_package else module.rpartition(".")[0]
            if not inside(importer, owner):
                found[line, f"{module}.{name}"] = PrivateImport(importer, line, f"{module}.{name}", owner, "name")
    return sorted(found.values(), key=lambda item: (item.line, item.imported))


def scan(root: Path, packages: Iterable[str] = ("vts", "nnvts")) -> list[PrivateImport]:
    """Every private import across packages in the given top-level packages under ``root``."""
    files = module_files(root, packages)
    return [found for name in files for found in private_imports(name, files)]
