"""The memory_domain family: driver-allocated buffers and non-default shared memory (HAL 1.3)."""

from __future__ import annotations

from vts import lazy_front

#: Each name other packages use, and its module (loaded on first use: importing the package stays cheap).
_HOMES = {
    "MemoryDomainFamily": "vts.families.memory_domain.family",
}

__all__ = ["MemoryDomainFamily"]

__getattr__ = lazy_front(__name__, _HOMES)
