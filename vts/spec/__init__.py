"""Spec files: loading, JSON Schema validation, semantic checks, variation expansion, generation.

``__all__`` names what the other packages use of it (the AOSP importer of
``aosp`` included).  Each name loads from its module on first use (only
``SpecError`` is imported at once): this package module stays import-light
so ``nnvts --help`` stays fast.  ``schema`` (the compiled JSON Schema) is
reached as ``vts.spec.schema.schema``, the package name being that of the
module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front
from vts.spec.errors import SpecError

if TYPE_CHECKING:
    from vts.spec.aosp.compare import differences
    from vts.spec.aosp.convert import hal_version, model_name
    from vts.spec.aosp.importer import import_tree
    from vts.spec.aosp.index import INDEX_NAME
    from vts.spec.aosp.layout import LayoutError
    from vts.spec.aosp.sandbox import Limits
    from vts.spec.checks import document_problems
    from vts.spec.fastcheck import UnsupportedSchema, compile_schema
    from vts.spec.loader import (
        KeepSpec,
        ModelOutline,
        SpecFile,
        checked_digests,
        is_spec_name,
        iter_spec_paths,
        load_document,
        load_file,
        load_paths,
        trust_checked,
    )
    from vts.spec.source import locate, parse
    from vts.spec.transforms import quantize
    from vts.spec.values import TYPES, check_value, to_array
    from vts.spec.writer import render, write_generated

#: The public names, by the module that defines each.
_HOMES = {
    "vts.spec.aosp.compare": ("differences",),
    "vts.spec.aosp.convert": ("hal_version", "model_name"),
    "vts.spec.aosp.importer": ("import_tree",),
    "vts.spec.aosp.index": ("INDEX_NAME",),
    "vts.spec.aosp.layout": ("LayoutError",),
    "vts.spec.aosp.sandbox": ("Limits",),
    "vts.spec.checks": ("document_problems",),
    "vts.spec.fastcheck": ("UnsupportedSchema", "compile_schema"),
    "vts.spec.loader": (
        "KeepSpec", "ModelOutline", "SpecFile", "checked_digests", "is_spec_name", "iter_spec_paths", "load_document",
        "load_file", "load_paths", "trust_checked",
    ),
    "vts.spec.source": ("locate", "parse"),
    "vts.spec.transforms": ("quantize",),
    "vts.spec.values": ("TYPES", "check_value", "to_array"),
    "vts.spec.writer": ("render", "write_generated"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "INDEX_NAME",
    "TYPES",
    "KeepSpec",
    "LayoutError",
    "Limits",
    "ModelOutline",
    "SpecError",
    "SpecFile",
    "UnsupportedSchema",
    "check_value",
    "checked_digests",
    "compile_schema",
    "differences",
    "document_problems",
    "hal_version",
    "import_tree",
    "is_spec_name",
    "iter_spec_paths",
    "load_document",
    "load_file",
    "load_paths",
    "locate",
    "model_name",
    "parse",
    "quantize",
    "render",
    "to_array",
    "trust_checked",
    "write_generated",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
