"""A reference driver that takes an AIDL output's padding as part of the output (DataLocation.aidl forbids it).

``writes_output_padding``: every output given with padding is treated as ``length + padding`` bytes long:
the driver clears that whole region, then writes its output there, and only an output larger than
``length + padding`` is too small.  So it writes into every output's padding and, given an output one
byte short with the byte moved into the padding, holds output data there and answers NONE.  Requests
without padding (HAL 1.3, and every family but ``request_padding``) run exactly as the reference's: only
``request_padding``'s ``padded`` and ``insufficient`` cases can catch it.  Validation happens before the
widening, so padding past the pool is still refused.
"""

from __future__ import annotations

from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.memory import Memory
from vts.hal.types import DataLocation, Model, Request, RequestArgument


def _widened(request: Request) -> Request:
    """``request`` with each padded output's padding cleared in memory and folded into its length."""
    outputs = []
    for argument in request.outputs:
        loc = argument.location
        pool = request.pools[loc.pool_index] if 0 <= loc.pool_index < len(request.pools) else None
        if argument.has_no_value or not loc.padding or not isinstance(pool, Memory):
            outputs.append(argument)
            continue
        pool.write(loc.offset + loc.length, bytes(loc.padding))
        outputs.append(RequestArgument(False, DataLocation(loc.pool_index, loc.offset, loc.length + loc.padding),
                                       list(argument.dimensions)))
    return Request(request.inputs, outputs, request.pools)


class _PaddingAsOutput(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-output-padding"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        run = prepared.run  # type: ignore[attr-defined]

        def widened_run(request: Request, *rest: Any) -> Any:
            return run(_widened(request), *rest)

        prepared.run = widened_run  # type: ignore[attr-defined]
        return prepared


def writes_output_padding() -> Device:
    return _PaddingAsOutput()
