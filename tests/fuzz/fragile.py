"""Reference drivers that break on one kind of malformed model: the fuzzer must find them.

The trigger is an operand whose lifetime no HAL enum defines (an edit the
fuzzer makes often); a correct driver answers INVALID_ARGUMENT there.  Each
factory is a ``module:attr`` for ``nnvts fuzz --driver`` and ``nnvts run``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from drivers.reference.device import ReferenceDevice
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
