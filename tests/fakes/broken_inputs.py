"""A reference driver that uses its first input as scratch space: it writes into input memory (AIDL gives it read-only).

``writes_its_input``: after reading its inputs, the driver zeroes the first input's bytes through the pool's
mapping (``Memory.buffer``), as a driver reusing an input buffer for an intermediate would.  Its outputs stay
right, so only a read-only mapping (``read_only_inputs``) or a check of the input bytes can catch it.
"""

from __future__ import annotations

from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.memory import Memory
from vts.hal.types import Model, Request


def _scribble(request: Request) -> None:
    for argument in request.inputs:
        loc = argument.location
        pool = request.pools[loc.pool_index] if 0 <= loc.pool_index < len(request.pools) else None
        if not argument.has_no_value and isinstance(pool, Memory) and loc.length:
            pool.buffer[loc.offset:loc.offset + loc.length] = bytes(loc.length)
            return


class _WritesInput(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-writes-input"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        run = prepared.run  # type: ignore[attr-defined]

        def scribbling_run(request: Request, *rest: Any) -> Any:
            shapes = run(request, *rest)
            _scribble(request)
            return shapes

        prepared.run = scribbling_run  # type: ignore[attr-defined]
        return prepared


def writes_its_input() -> Device:
    return _WritesInput()
