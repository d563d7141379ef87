"""The caching family: compilation caches restore correct models or fail cleanly (VTS CompilationCachingTests.cpp)."""

from __future__ import annotations

from vts import lazy_front

#: Each name other packages use, and its module (loaded on first use: importing the package stays cheap).
_HOMES = {"CachingFamily": "vts.families.caching.family"}

__all__ = ["CachingFamily"]

__getattr__ = lazy_front(__name__, _HOMES)
