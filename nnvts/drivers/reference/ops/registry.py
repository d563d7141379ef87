"""The reference driver's operation registry.

Each operation module registers its implementations with ``@register_op``,
declaring next to the code which operand types it computes (keyed by one
input, usually the first, as the HAL's performance lookup is).  Whether a
model is *valid* is decided by the HAL signature table in ``vts.hal``; this
registry only answers whether the reference driver *implements* it, and the
two together give ``get_supported_operations``.

Modules are discovered with ``pkgutil`` in sorted order, so adding an
operation family is adding a module, and registration order never changes
behaviour.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nnvts.drivers.reference.tensor import OpContext
from vts.hal.enums import OperationType, enum_name
from vts.hal.types import Operand

OpFunction = Callable[[OpContext], Sequence[np.ndarray]]
SupportPredicate = Callable[[Sequence[Operand], Sequence[Operand]], bool]


@dataclass(frozen=True, slots=True)
class OpDef:
    type: OperationType
    run: OpFunction
    types: frozenset[int]
    key_input: int = 0
    predicate: SupportPredicate | None = None

    def supports(self, inputs: Sequence[Operand], outputs: Sequence[Operand]) -> bool:
        if self.types and (self.key_input >= len(inputs) or inputs[self.key_input].type not in self.types):
            return False
        return self.predicate is None or self.predicate(inputs, outputs)


_OPS: dict[int, OpDef] = {}


def register_op(
    op_type: OperationType,
    *,
    types: Collection[int] = (),
    key_input: int = 0,
    supports: SupportPredicate | None = None,
) -> Callable[[OpFunction], OpFunction]:
    """Register ``fn`` as the implementation of ``op_type``.

    ``types``: operand types of input ``key_input`` the implementation
    computes (empty: any).  ``supports``: an extra predicate over the
    operation's input and output operands.
    """

    def decorate(fn: OpFunction) -> OpFunction:
        if op_type in _OPS:
            raise ValueError(f"operation {enum_name(OperationType, op_type)} registered twice")
        _OPS[int(op_type)] = OpDef(OperationType(op_type), fn, frozenset(int(t) for t in types), key_input,
                                   supports)
        return fn

    return decorate


_loaded = False


def operations() -> Mapping[int, OpDef]:
    """Every registered operation (imports the op modules once)."""
    global _loaded
    if not _loaded:
        package = importlib.import_module("nnvts.drivers.reference.ops")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if info.name not in ("registry",) and not info.name.startswith("_"):
                importlib.import_module(f"nnvts.drivers.reference.ops.{info.name}")
        _loaded = True
    return _OPS
