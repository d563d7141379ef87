"""Why a driver reference cannot be used: the usage errors of driver lookup (exit status 2).

In a module of their own so that both the lookup (``vts.ipc.drivers``) and
the driver options (``vts.ipc.driver_options``) raise them without importing
each other.
"""

from __future__ import annotations

__all__ = ["DriverNotFound", "DriverSyntaxError", "DriverUnavailable"]


class DriverNotFound(LookupError):
    """The driver name resolves to nothing loadable (a usage error: exit status 2)."""


class DriverUnavailable(DriverNotFound):
    """An installed driver whose optional dependencies (a package extra) are not installed."""


class DriverSyntaxError(DriverNotFound):
    """A driver reference that is not well formed (bad quoting, an empty command, a bad dotted name)."""
