"""The reference driver, recording the CPUs its host process may run on.

Each host writes ``$NNVTS_AFFINITY_DIR/<pid>-<random>`` with its CPU list when
it creates the device, so a test can check how ``-j N`` placed the driver
hosts of its workers (each host has a PID namespace of its own, so PIDs alone
may repeat).
"""

from __future__ import annotations

import os

from nnvts.drivers.reference.device import create_device as create_reference
from vts.hal.interfaces import Device

AFFINITY_DIR_ENV = "NNVTS_AFFINITY_DIR"


def create_device() -> Device:
    directory = os.environ.get(AFFINITY_DIR_ENV)
    if directory:
        name = f"{os.getpid()}-{os.urandom(8).hex()}"
        with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
            handle.write(" ".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0))))
    return create_reference()
