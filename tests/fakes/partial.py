"""Correct drivers that support only part of the HAL (issue 43).

The HAL lets a driver support any subset of operations: an NPU with integer
kernels only reports every float operation unsupported and refuses to
prepare a model holding one; a float-only DSP does the same for quantized
operations.  Both are conformant, so a run over every default family must
give them nothing but ``passed`` or ``skipped``.

An operation is "float" when a tensor it reads or writes is TENSOR_FLOAT32
or TENSOR_FLOAT16, "quantized" when one is of a quantized tensor type.  An
IF or WHILE is supported only when its subgraphs' operations are (the
reference's own rule, applied to the narrowed support).

Every public name is a factory usable as ``--driver tests.fakes.partial:NAME``.
"""

from __future__ import annotations

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import OperandLifeTime, OperandType
from vts.hal.interfaces import Device
from vts.hal.types import Model, Operation, Subgraph

_FLOAT = frozenset({int(OperandType.TENSOR_FLOAT32), int(OperandType.TENSOR_FLOAT16)})
_QUANT = frozenset({int(OperandType.TENSOR_QUANT8_ASYMM), int(OperandType.TENSOR_QUANT8_ASYMM_SIGNED),
                    int(OperandType.TENSOR_QUANT8_SYMM), int(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL),
                    int(OperandType.TENSOR_QUANT16_ASYMM), int(OperandType.TENSOR_QUANT16_SYMM)})


class PartialDevice(ReferenceDevice):
    """The reference device, with every operation touching one of ``refused`` operand types unsupported."""

    def __init__(self, name: str, refused: frozenset[int]) -> None:
        super().__init__()
        self.name = name
        self.refused = refused

    def _touches(self, model: Model, graph: Subgraph, op: Operation, seen: frozenset[int] = frozenset()) -> bool:
        operands = [graph.operands[i] for i in (*op.inputs, *op.outputs) if 0 <= i < len(graph.operands)]
        if any(int(o.type) in self.refused for o in operands):
            return True
        for o in operands:  # IF/WHILE: refused when any operation of a subgraph they name is
            if o.lifetime == OperandLifeTime.SUBGRAPH and o.location.offset not in seen:
                inner = model.referenced[o.location.offset]
                if any(self._touches(model, inner, nested, seen | {o.location.offset}) for nested in inner.operations):
                    return True
        return False

    def _supported(self, model: Model) -> list[bool]:
        return [ok and not self._touches(model, model.main, op)
                for ok, op in zip(super()._supported(model), model.main.operations, strict=True)]


def quantized_only() -> Device:
    """An integer NPU: every operation touching a float tensor unsupported."""
    return PartialDevice("partial-quantonly", _FLOAT)


def float_only() -> Device:
    """A float DSP: every operation touching a quantized tensor unsupported."""
    return PartialDevice("partial-floatonly", _QUANT)
