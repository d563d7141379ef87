"""nnvts: a conformance harness for NN HAL accelerator drivers.

``lazy_front`` serves every package front: a package's ``__init__`` names
what it offers in ``__all__`` and where each name lives, and the name is
imported from there on first use, so importing a package stays cheap
(``nnvts --help`` reads the families' catalogue, and must not import numpy).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "lazy_front"]


def lazy_front(package: str, home_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each of its public names loaded from ``home_of[name]``
    when first asked for, then kept in the package's namespace (asked once)."""

    def load(name: str) -> Any:
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return load
