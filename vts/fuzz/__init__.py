"""``nnvts fuzz``: models and requests that look valid but are not, thrown at a driver.

Hypothesis draws a short list of *edits* (``edits.py``) to apply to a valid
model of the specs and to the requests built from its examples
(``mutators.py``); ``oracle.py`` sends the result to the driver and judges
the answer against ``vts.hal.validation``; ``engine.py`` runs seeded chunks
and counts; a failing input is shrunk by Hypothesis and saved as a concrete
spec plus its edit list (``saved.py``), which the ``fuzz_replay`` family
re-runs by name.  Hypothesis is an optional dependency (the ``fuzz`` extra);
nothing here imports it at module level except the modules that need it.
"""

from __future__ import annotations

from vts import lazy_front

#: Each name other packages use, and its module (loaded on first use: importing the package stays cheap).
_HOMES = {
    "FuzzRequest": "vts.fuzz.run",
    "fuzz_session": "vts.fuzz.run",
}

__all__ = ["FuzzRequest", "fuzz_session"]

__getattr__ = lazy_front(__name__, _HOMES)
