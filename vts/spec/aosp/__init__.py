"""``nnvts corpus import aosp``: Android's NNAPI ``.mod.py`` specs, run through their own generator, as concrete specs.

``layout`` finds the version folders of a frameworks/ml tree, ``index``
remembers what was imported, ``sandbox`` runs the tree's generator in a
bounded child (``child.py``), ``convert`` turns its cases into a spec
document and ``importer`` drives it all; ``compare`` sets an import against
another corpus.  ``__all__`` names what the CLI and the tests use; each
name loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.spec.aosp.compare import differences
    from vts.spec.aosp.convert import hal_version, model_name
    from vts.spec.aosp.importer import import_tree
    from vts.spec.aosp.index import INDEX_NAME
    from vts.spec.aosp.layout import LayoutError
    from vts.spec.aosp.sandbox import Limits

#: The public names, by the module that defines each.
_HOMES = {
    "vts.spec.aosp.compare": ("differences",),
    "vts.spec.aosp.convert": ("hal_version", "model_name"),
    "vts.spec.aosp.importer": ("import_tree",),
    "vts.spec.aosp.index": ("INDEX_NAME",),
    "vts.spec.aosp.layout": ("LayoutError",),
    "vts.spec.aosp.sandbox": ("Limits",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "INDEX_NAME", "LayoutError", "Limits", "differences", "hal_version", "import_tree", "model_name",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
