"""Which interface a Python driver served over the protocol speaks: HAL 1.3, or the AIDL version granted.

The protocol's calls are HAL 1.3's.  A driver reached through it is judged by HAL 1.3's rules unless the
opening exchange granted an ``aidl:N`` feature (docs/protocol.md §5.3), and then by that AIDL version's.
A Python driver must validate by the same rules it is judged by: an AIDL driver that went on refusing by
AIDL's rules (no ``numberOfConsumers``) would be failed as a 1.3 driver for following its own contract,
and a 1.3 one would refuse what AIDL allows.  So a host process holds its driver to HAL 1.3 from the start
(``hold_to_protocol``: HELLO alone, a revision-2 harness and a harness that asks for no ``aidl`` feature
get that), and ``OPEN`` lets it speak the version granted (``open_interface``).

The driver is one object for all of a host's connections: under ``nnvts serve`` the last ``OPEN`` sets
what it speaks.  One harness opens every connection with the same features, so its clients agree.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable

from vts.hal.enums import HalVersion
from vts.hal.interfaces import spoken_version
from vts.ipc import protocol as p

__all__ = ["PROTOCOL_INTERFACE", "hold_to_protocol", "native_version", "open_interface"]

#: The interface the protocol's calls carry when no ``aidl:N`` feature is granted (docs/protocol.md §5.3).
PROTOCOL_INTERFACE = HalVersion.V1_3

#: id(device) -> (device, the version it spoke before it was held): the devices a host process holds.
_held: dict[int, tuple[object, HalVersion]] = {}
_lock = threading.Lock()


def _set_version(device: object, version: HalVersion) -> None:
    with contextlib.suppress(AttributeError, TypeError):
        device.hal_version = version  # type: ignore[attr-defined]


def native_version(device: object) -> HalVersion:
    """The version ``device`` speaks of itself (before any hold).  A driver is untrusted: ``spoken_version``."""
    with _lock:
        held = _held.get(id(device))
    return held[1] if held is not None and held[0] is device else spoken_version(device)


def hold_to_protocol(device: object) -> None:
    """Have a Python driver served over the protocol speak HAL 1.3 until an ``OPEN`` grants it an AIDL version.

    Its own version is remembered (``native_version``), so ``open_interface`` can give it back.
    """
    native = native_version(device)
    if native > PROTOCOL_INTERFACE:
        with _lock:
            _held[id(device)] = (device, native)
        _set_version(device, PROTOCOL_INTERFACE)


def open_interface(device: object, asked: Iterable[str]) -> str | None:
    """At ``OPEN``: the ``aidl:N`` feature ``device`` grants of those ``asked`` (None: HAL 1.3).

    A held device speaks the granted version from now on, or HAL 1.3 when none is granted.  A device
    the host does not hold (served from a thread of the harness, which sees its version itself) is left
    as it is.
    """
    native = native_version(device)
    grant = p.aidl_grant(asked, native)
    with _lock:
        held = _held.get(id(device))
    if held is not None and held[0] is device:
        _set_version(device, (p.granted_aidl((grant,)) if grant else None) or PROTOCOL_INTERFACE)
    return grant
