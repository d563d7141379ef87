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

from drivers.reference.device import ReferenceDevice
from tests.fakes.misbehaving import Fault, FaultyPrepared
from vts.hal.enums import ExecutionPreference, Priority
from vts.hal.interfaces import CacheFiles, PreparedModel
from vts.hal.types import Model, Request


def _exit(request: Request) -> None:
    os._exit(70)  # no cleanup, no answer: the host's socket just closes


def _segfault(request: Request) -> None:
    ctypes.string_at(0)


class StormDevice(ReferenceDevice):
    """The reference device whose every prepared model dies on every execution path."""

    def __init__(self, fault: Fault, name: str) -> None:
        super().__init__()
        self.fault = fault
        self.name = f"nnvts-{name}"

    def prepare_model(self, model: Model,
                      preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority | int = Priority.MEDIUM, deadline: int | None = None,
                      model_cache: CacheFiles = (), data_cache: CacheFiles = (),
                      token: bytes = bytes(32)) -> PreparedModel:
        prepared = super().prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
        return FaultyPrepared(prepared, self.fault)

    def prepare_model_from_cache(self, deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                                 token: bytes) -> PreparedModel:
        return FaultyPrepared(super().prepare_model_from_cache(deadline, model_cache, data_cache, token), self.fault)


def exit_every_execution() -> StormDevice:
    return StormDevice(_exit, "exit-storm")


def segfault_every_execution() -> StormDevice:
    return StormDevice(_segfault, "segfault-storm")
