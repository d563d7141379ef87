"""A driver build broken everywhere: every execution kills the driver process.

The reference driver underneath, so discovery, preparation and validation of
models answer as they should; only the executions die, each in its own way
(``os._exit`` with a status, or a null-pointer read).  Re-running a case
alone on a fresh host dies again, so every executing case is a reproduced
``crash``: what the crash-loop guard of ``nnvts run`` must cut short.

Every public name is a factory usable as ``--driver tests.fakes.crash_storm:NAME``.
"""

from __future__ import annotations

import ctypes
import os

from tests.fakes.misbehaving import MisbehavingDevice
from vts.hal.enums import OperationType
from vts.hal.types import Request


def _exit(request: Request) -> None:
    os._exit(70)  # no cleanup, no answer: the host's socket just closes


def _segfault(request: Request) -> None:
    ctypes.string_at(0)


def exit_every_execution() -> MisbehavingDevice:
    return MisbehavingDevice(_exit, "exit-storm", every_model=True)


def segfault_every_execution() -> MisbehavingDevice:
    return MisbehavingDevice(_segfault, "segfault-storm", every_model=True)


def segfault_on_sub() -> MisbehavingDevice:
    """One crashing operation, not a broken build: every execution of a model holding SUB segfaults, the
    rest is the reference (issue 43).  The guard's canary must tell it from a crash loop: SUB cases crash,
    every other case runs and passes."""
    return MisbehavingDevice(_segfault, "subcrash", operation=OperationType.SUB)
