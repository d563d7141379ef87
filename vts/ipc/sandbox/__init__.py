"""The driver's sandbox: what a driver host may see, reach and hold (docs/sandbox.md).

Every driver host runs in one: bubblewrap where it is installed, else
nnvts's own namespace code, with the same guarantees (``core``); an
unprivileged user in a user namespace of its own, a read-only filesystem
with a private scratch directory (``view``), an allowlisted environment
(``environment``), a seccomp filter (``seccomp``), and task and memory
limits for its whole tree (``limits``).  ``--in-process`` is the opt-out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.ipc.sandbox.core import HostSandbox, SandboxKind, announce, notice, probe
    from vts.ipc.sandbox.environment import DRIVER_ENV, driver_environment
    from vts.ipc.sandbox.view import hide_outputs

_HOMES = {
    "HostSandbox": "vts.ipc.sandbox.core",
    "SandboxKind": "vts.ipc.sandbox.core",
    "announce": "vts.ipc.sandbox.core",
    "notice": "vts.ipc.sandbox.core",
    "probe": "vts.ipc.sandbox.core",
    "DRIVER_ENV": "vts.ipc.sandbox.environment",
    "driver_environment": "vts.ipc.sandbox.environment",
    "hide_outputs": "vts.ipc.sandbox.view",
}

__all__ = [
    "DRIVER_ENV",
    "HostSandbox",
    "SandboxKind",
    "announce",
    "driver_environment",
    "hide_outputs",
    "notice",
    "probe",
]

__getattr__ = lazy_front(__name__, _HOMES)
