"""Family registry: ``@register_family`` on a class; modules discovered in sorted order.

A family is a module of ``vts.families`` or, when it needs several modules, a
sub-package whose ``family`` module registers it; ``_``-prefixed names (the
private kit) and the two modules below are not families.
"""

from __future__ import annotations

import importlib
import pkgutil

from vts.families.base import Family

_FAMILIES: dict[str, type[Family]] = {}
_SKIP_MODULES = {"base", "registry"}


def register_family(cls: type[Family]) -> type[Family]:
    if cls.name in _FAMILIES:
        raise ValueError(f"family {cls.name!r} registered twice")
    _FAMILIES[cls.name] = cls
    return cls


_loaded = False


def families() -> dict[str, type[Family]]:
    """Every family, sorted by name (registration order never matters)."""
    global _loaded
    if not _loaded:
        package = importlib.import_module("vts.families")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if info.name not in _SKIP_MODULES and not info.name.startswith("_"):
                suffix = ".family" if info.ispkg else ""
                importlib.import_module(f"vts.families.{info.name}{suffix}")
        _loaded = True
    return dict(sorted(_FAMILIES.items()))
