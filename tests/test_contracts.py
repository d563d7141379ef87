"""The contracts of docs/architecture.md that tests/test_layout.py does not cover: private names, package fronts.

The private-names contract is a contract type of our own
(``tools.import_contracts``), so a copy of the tree with planted imports
proves it can fail, and names what broke it, and that a package's own use
of its privates is no alarm.  The fronts (``__all__`` of each package
``__init__``) must name only what resolves, and stay cheap to import.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lint_imports import copy_tree, lint_imports
from tools.private_names import scan

ROOT = Path(__file__).resolve().parents[1]

#: The packages whose ``__init__`` names what they offer to the others.
FRONTS = ["vts.hal", "vts.hal.operations", "vts.model", "vts.model.builtin", "vts.spec", "vts.spec.aosp",
          "vts.report", "vts.cli", "vts.soak", "vts.run", "vts.families", "vts.ipc", "vts.ipc.protocol", "vts.fuzz",
          "vts.families.caching", "vts.families.capabilities_bench", "vts.families.differential",
          "vts.families.memory_domain", "vts.families.validation", "vts.families.fuzz_replay"]


def _plant(root: Path) -> None:
    """A private module and a private name in vts.spec (floor 3), and modules that use them."""
    (root / "vts/spec/_planted_private.py").write_text("HELPER = 1\n")
    (root / "vts/spec/planted.py").write_text("def _helper() -> int:\n    return 1\n\n\n__version__ = '1'\n")
    # vts.run is above vts.spec, so only the privacy of the names can break a contract here.
    (root / "vts/run/planted_user.py").write_text(
        "from vts.spec.planted import _helper, __version__\n\n\n"
        "def later() -> int:\n    import vts.spec._planted_private\n\n"
        "    return vts.spec._planted_private.HELPER + _helper()\n")
    # The owner and its subpackages may use their own privates.
    (root / "vts/spec/planted_own.py").write_text(
        "from vts.spec import _planted_private\nfrom vts.spec.planted import _helper\n")
    (root / "vts/spec/aosp/planted_sub.py").write_text(
        "from .._planted_private import HELPER\nfrom ..planted import _helper\n")


def test_private_imports_across_packages_break_the_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    _plant(root)
    result = lint_imports(root)
    out = " ".join(result.stdout.split())  # rich wraps long lines
    assert result.returncode != 0
    assert "no private module or name is imported from outside the package that owns it BROKEN" in out
    assert "vts.run.planted_user:1 -> vts.spec.planted._helper (a private name of vts.spec)" in out
    assert "vts.run.planted_user:5 -> vts.spec._planted_private (a private module of vts.spec)" in out
    assert "__version__" not in out


def test_a_package_using_its_own_privates_is_no_alarm(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    _plant(root)
    result = lint_imports(root)
    assert "vts.spec.planted_own" not in result.stdout
    assert "vts.spec.aosp.planted_sub" not in result.stdout
    found = {str(item) for item in scan(root) if "planted" in item.importer}
    assert found == {
        "vts.run.planted_user:1 -> vts.spec.planted._helper (a private name of vts.spec)",
        "vts.run.planted_user:5 -> vts.spec._planted_private (a private module of vts.spec)",
    }


def test_a_private_module_is_owned_by_the_package_around_its_innermost_private_part(tmp_path: Path) -> None:
    (tmp_path / "demo/inner/_kit/parts").mkdir(parents=True)
    for package in ("demo", "demo/inner", "demo/inner/_kit", "demo/inner/_kit/parts", "demo/other"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "demo/inner/_kit/parts/tool.py").write_text("def _deep() -> None: ...\n")
    (tmp_path / "demo/inner/user.py").write_text("from demo.inner._kit.parts import tool\n")
    (tmp_path / "demo/inner/_kit/sibling.py").write_text("from demo.inner._kit.parts.tool import _deep\n")
    (tmp_path / "demo/other/user.py").write_text("from demo.inner._kit.parts.tool import _deep\n")
    found = sorted(str(item) for item in scan(tmp_path, ["demo"]))
    assert found == [
        # A private name belongs to the package of its module, narrower than the private module's owner.
        "demo.inner._kit.sibling:1 -> demo.inner._kit.parts.tool._deep (a private name of demo.inner._kit.parts)",
        "demo.other.user:1 -> demo.inner._kit.parts.tool (a private module of demo.inner)",
        "demo.other.user:1 -> demo.inner._kit.parts.tool._deep (a private name of demo.inner._kit.parts)",
    ]


@pytest.mark.parametrize("package", FRONTS)
def test_every_name_a_package_front_offers_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__, f"{package} says what it is for"
    names = module.__all__
    assert len(names) == len(set(names)), f"{package}.__all__ names something twice"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not have: {missing}"
    assert not [name for name in names if name.startswith("_")]


def test_the_faces_package_fronts_stay_cheap() -> None:
    """``nnvts --help`` must stay well under 100 ms: the package inits load nothing heavy at import."""
    code = ("import sys, vts.cli, vts.run, vts.hal, vts.spec, vts.report\n"
            "print(sorted({'numpy', 'click', 'rich'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
