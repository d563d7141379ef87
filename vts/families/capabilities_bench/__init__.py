"""The capabilities_bench family (opt-in): declared execTime must be near the measured speed."""

from __future__ import annotations

from vts import lazy_front

#: Each name other packages use, and its module (loaded on first use: importing the package stays cheap).
_HOMES = {
    "CapabilitiesBenchFamily": "vts.families.capabilities_bench.family",
    "print_report": "vts.families.capabilities_bench.measure",
    "run_bench": "vts.families.capabilities_bench.measure",
}

__all__ = ["CapabilitiesBenchFamily", "print_report", "run_bench"]

__getattr__ = lazy_front(__name__, _HOMES)
