"""The families' catalogue (what ``--help`` lists without importing them) is the registry's."""

from __future__ import annotations

import subprocess
import sys

from vts.families.catalogue import FAMILIES
from vts.families.registry import families


def test_the_catalogue_names_every_registered_family_with_its_default() -> None:
    assert {name: getattr(family, "default", True) for name, family in families().items()} == FAMILIES


def test_run_help_lists_the_families_without_importing_them() -> None:
    code = ("import sys; from vts.cli.main import main\n"
            "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('vts.families.') and m != 'vts.families.catalogue'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    listed = out[: out.rindex("[")]
    assert "validation" in listed and "capabilities_bench" in listed
    assert out[out.rindex("["):].strip() == "[]"


def test_the_kit_names_the_families_package_offers_load_on_first_use() -> None:
    import vts.families as package

    for name in package.__all__:
        assert getattr(package, name).__name__ == name
