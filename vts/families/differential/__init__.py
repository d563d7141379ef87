"""The differential family: answers that must depend on the input values."""

from __future__ import annotations

from vts import lazy_front

#: Each name other packages use, and its module (loaded on first use: importing the package stays cheap).
_HOMES = {
    "DifferentialFamily": "vts.families.differential.family",
}

__all__ = ["DifferentialFamily"]

__getattr__ = lazy_front(__name__, _HOMES)
