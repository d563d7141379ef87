"""Import-linter contract types of our own, registered in pyproject.toml (``contract_types``).

Import-linter's built-in contracts see modules, not the names an import
takes, so "no private names across packages" (docs/architecture.md) needs a
contract that reads the import statements themselves.  The rule lives in
``tools.private_names``; this module only adapts it to import-linter.

It lives under ``tools/`` (a package, so ``tools.import_contracts`` imports
with the repository root on ``sys.path``: ``lint-imports`` puts its working
directory there, and the editable install puts the root there) and not in
``vts``: it is a check on the code, not part of the harness, and ``vts`` must
not depend on import-linter.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain.contract import Contract, ContractCheck

from tools.private_names import PrivateImport, module_files, private_imports


def _package_root(package: str) -> Path:
    """The directory that holds a root package, found as Python would import it (without importing it)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"root package {package!r} is not an importable package")
    return Path(next(iter(spec.submodule_search_locations))).parent


class PrivateNamesContract(Contract):
    """No module imports a private module or a private name from outside the package that owns it.

    A private module (``vts.families._kit``) is owned by the package around
    it; a private name (``_is_spec_name`` of ``vts.spec.loader``) by the
    package of the module that defines it.  The owner and its subpackages may
    use them.  Imports inside functions and under ``TYPE_CHECKING`` count.

    The files of every root package are read (namespace directories without
    an ``__init__.py`` included, which import-linter's graph leaves out).
    """

    type_name = "private_names"

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        found: list[PrivateImport] = []
        for package in sorted(self.session_options["root_packages"]):
            files = module_files(_package_root(package), [package])
            for module in sorted(files):
                found += private_imports(module, files)
        output.verbose_print(verbose, f"Private imports across packages: {len(found)}")
        return ContractCheck(kept=not found, metadata={"private_imports": [str(item) for item in found]})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("Private modules and names may only be imported from within the package that owns them:",
                           bold=False)
        output.new_line()
        for line in check.metadata["private_imports"]:
            output.print_error(f"- {line}", bold=False)
            output.new_line()
        output.print("Where another package needs it, make it public (docs/architecture.md).")

