"""Reference drivers that misread one parameter of an operation of feature level 6 or 7.

Each compiles the model it is given with one parameter read wrongly, the way
a driver's op table can confuse two look-alike flags, and is otherwise the
reference: only the golden outputs of that operation can catch it (the
``generated`` family).

* ``batch_matmul_adjoints_swapped``: BATCH_MATMUL reads ``adj_x`` as
  ``adj_y`` and the reverse (x^T y comes back as x y^T).
* ``mirror_pad_modes_swapped``: MIRROR_PAD computes REFLECT when asked for
  SYMMETRIC and the reverse.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import OperandLifeTime, OperationType
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import Model

Misreading = Callable[[Model], Model]


class MisreadingDevice(ReferenceDevice):
    """The reference, preparing ``misread(model)`` instead of the model it was given."""

    def __init__(self, name: str, misread: Misreading) -> None:
        super().__init__()
        self.name = name
        self.misread = misread

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        self.check_model(model)
        return super().prepare_model(self.misread(model), *args, **kwargs)


def _swap_adjoints(model: Model) -> Model:
    copy = model.copy()
    for operation in copy.main.operations:
        if operation.type == OperationType.BATCH_MATMUL and len(operation.inputs) == 4:
            operation.inputs[2], operation.inputs[3] = operation.inputs[3], operation.inputs[2]
    return copy


def _swap_mirror_modes(model: Model) -> Model:
    """Flip each constant MIRROR_PAD mode (0 REFLECT <-> 1 SYMMETRIC) in the copied operand values."""
    copy = model.copy()
    values = bytearray(copy.operand_values)
    for operation in copy.main.operations:
        if operation.type != OperationType.MIRROR_PAD or len(operation.inputs) != 3:
            continue
        mode = copy.main.operands[operation.inputs[2]]
        where = mode.location
        if mode.lifetime != OperandLifeTime.CONSTANT_COPY or where.length != 4:
            continue
        (value,) = struct.unpack_from("<i", values, where.offset)
        if value in (0, 1):
            struct.pack_into("<i", values, where.offset, 1 - value)
    copy.operand_values = bytes(values)
    return copy


def batch_matmul_adjoints_swapped() -> Device:
    return MisreadingDevice("broken-batch-matmul-adjoints", _swap_adjoints)


def mirror_pad_modes_swapped() -> Device:
    return MisreadingDevice("broken-mirror-pad-modes", _swap_mirror_modes)
