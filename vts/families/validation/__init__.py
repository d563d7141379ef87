"""The validation family: malformed models and requests must be refused with INVALID_ARGUMENT."""

from __future__ import annotations

from vts import lazy_front

#: Each name other packages use, and its module (loaded on first use: importing the package stays cheap).
_HOMES = {
    "BUILTIN_REGISTRY": "vts.families.validation.family",
    "MUTATORS": "vts.families.validation.mutations",
    "ValidationFamily": "vts.families.validation.family",
    "apply_mutation": "vts.families.validation.mutations",
    "enumerate_mutations": "vts.families.validation.mutations",
}

__all__ = ["BUILTIN_REGISTRY", "MUTATORS", "ValidationFamily", "apply_mutation", "enumerate_mutations"]

__getattr__ = lazy_front(__name__, _HOMES)
