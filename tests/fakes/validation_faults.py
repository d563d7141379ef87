"""Drivers that die or hang on one model mutation of the validation sweep, and handle every other right.

The mutation is the sweep's ``operand_type_0_to_9999`` (operand 0's type
changed to 9999): the reference answers every other model, valid or not.
Run with the validation family sending model mutations ahead
(``RunOptions.send_ahead``), the fault strikes while the harness is still
judging an earlier case, so these show that the death or hang is charged to
the mutation that caused it and to no neighbour.

Every public name is a factory usable as ``--driver tests.fakes.validation_faults:NAME``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import HalVersion
from vts.hal.interfaces import PreparedModel
from vts.hal.types import Model

#: The operand type of the mutation these drivers cannot take.
FATAL_TYPE = 9999


def _fatal(model: Model) -> bool:
    return any(operand.type == FATAL_TYPE for operand in model.main.operands)


class _OneMutationFault(ReferenceDevice):
    #: HIDL 1.3, in process as across the protocol: every other mutation of the sweep is the driver's to refuse.
    hal_version = HalVersion.V1_3

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault

    def _strike(self, model: Model) -> None:
        if not _fatal(model):
            return
        if self.fault == "exit":
            os._exit(70)  # no answer, no cleanup: the host's socket just closes
        threading.Event().wait()  # a hang the driver never returns from

    def get_supported_operations(self, model: Model) -> list[bool]:
        self._strike(model)
        return super().get_supported_operations(model)

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        self._strike(model)
        return super().prepare_model(model, *args, **kwargs)


def exits_on_one_mutation() -> ReferenceDevice:
    return _OneMutationFault("exit")


def hangs_on_one_mutation() -> ReferenceDevice:
    return _OneMutationFault("hang")
