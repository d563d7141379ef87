"""Reference drivers that break on one kind of malformed model: the fuzzer must find them.

The trigger is an operand whose lifetime no HAL enum defines (an edit the
fuzzer makes often); a correct driver answers INVALID_ARGUMENT there.  Each
factory is a ``module:attr`` for ``nnvts fuzz --driver`` and ``nnvts run``.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import OperandLifeTime
from vts.hal.types import Model

_LIFETIMES = frozenset(int(v) for v in OperandLifeTime)


def _malformed(model: Model) -> bool:
    try:
        return any(o.lifetime not in _LIFETIMES for o in model.main.operands)
    except Exception:
        return False


class FragileDevice(ReferenceDevice):
    """The reference device, except ``misbehave()`` runs on a model with an undefined lifetime."""

    def misbehave(self) -> Any:
        raise NotImplementedError

    def get_supported_operations(self, model: Model) -> list[bool]:
        if _malformed(model):
            return self.misbehave()
        return super().get_supported_operations(model)


class CrashingDevice(FragileDevice):
    def misbehave(self) -> Any:
        os.abort()


class RaisingDevice(FragileDevice):
    def misbehave(self) -> Any:
        raise IndexError("lifetime table index out of range")


class HangingDevice(FragileDevice):
    def misbehave(self) -> Any:
        time.sleep(3600)


class WrongTypeDevice(FragileDevice):
    def misbehave(self) -> Any:
        return None


def crashing() -> CrashingDevice:
    return CrashingDevice()


def raising() -> RaisingDevice:
    return RaisingDevice()


def hanging() -> HangingDevice:
    return HangingDevice()


def wrong_type() -> WrongTypeDevice:
    return WrongTypeDevice()


class ParentTerminatingDevice(ReferenceDevice):
    """A correct device that sends SIGTERM to the harness on its 50th support query (a CI cancel, on cue)."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    def get_supported_operations(self, model: Model) -> list[bool]:
        self.queries += 1
        if self.queries == 50:
            os.kill(os.getppid(), signal.SIGTERM)  # reaches the harness only uncontained (NNVTS_NO_NAMESPACES)
        return super().get_supported_operations(model)


def terminates_harness() -> ParentTerminatingDevice:
    return ParentTerminatingDevice()
