"""Reaching a driver: driver lookup and options, host processes, the protocol (docs/protocol.md), both its ends.

What other packages use is named here and loaded on first use: importing
``vts.ipc`` loads nothing (``nnvts --help`` must stay fast, and the runner
needs ``errors`` without the protocol machinery).  Submodules are imported
where used as before: ``drivers``/``driver_options`` (finding a driver, its
options), ``process`` (host processes), ``client`` (the harness's end),
``host`` (the driver host), ``protocol`` (framing and codec).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.ipc.client import ProxyDevice, connect
    from vts.ipc.driver_options import (
        DriverOption,
        DriverOptionError,
        accepted_options,
        check_options,
        parse_driver_option,
    )
    from vts.ipc.drivers import DriverNotFound, DriverRef, DriverUnavailable, available_drivers
    from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout, ProtocolViolation
    from vts.ipc.process import HostProcess, HostStartError

#: Each public name and the module that defines it.
_HOMES = {
    "ProxyDevice": "vts.ipc.client",
    "connect": "vts.ipc.client",
    "DriverOption": "vts.ipc.driver_options",
    "DriverOptionError": "vts.ipc.driver_options",
    "accepted_options": "vts.ipc.driver_options",
    "check_options": "vts.ipc.driver_options",
    "parse_driver_option": "vts.ipc.driver_options",
    "DriverNotFound": "vts.ipc.drivers",
    "DriverRef": "vts.ipc.drivers",
    "DriverUnavailable": "vts.ipc.drivers",
    "available_drivers": "vts.ipc.drivers",
    "DriverCrashed": "vts.ipc.errors",
    "DriverLost": "vts.ipc.errors",
    "DriverTimeout": "vts.ipc.errors",
    "ProtocolViolation": "vts.ipc.errors",
    "HostProcess": "vts.ipc.process",
    "HostStartError": "vts.ipc.process",
}

__all__ = [
    "DriverCrashed",
    "DriverLost",
    "DriverNotFound",
    "DriverOption",
    "DriverOptionError",
    "DriverRef",
    "DriverTimeout",
    "DriverUnavailable",
    "HostProcess",
    "HostStartError",
    "ProtocolViolation",
    "ProxyDevice",
    "accepted_options",
    "available_drivers",
    "check_options",
    "connect",
    "parse_driver_option",
]


__getattr__ = lazy_front(__name__, _HOMES)
