"""The one error of an engine driver's configuration (its driver options): refused before anything runs.

A factory raises ``EngineConfigError`` for a provider, delegate or option
the engine does not have, naming what it does have.  It is an
``ImportError`` because that is how a driver factory tells nnvts "this
driver cannot be loaded as asked" (``vts.ipc.drivers.load_device`` turns it
into a usage error, exit status 2, in process and in a driver host alike),
and drivers see only the HAL of ``vts``.
"""

from __future__ import annotations


class EngineConfigError(ImportError):
    """An engine driver option that names something unavailable or malformed (exit status 2)."""
