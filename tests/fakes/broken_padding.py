"""Reference drivers that break one rule of AIDL's ``DataLocation.padding`` each.

``writes_output_padding`` takes an output's padding as part of the output (DataLocation.aidl forbids it):
every output given with padding is treated as ``length + padding`` bytes long: the driver clears that whole
region, then writes its output there, and only an output larger than ``length + padding`` is too small. So it
writes into every output's padding and, given an output one byte short with the byte moved into the padding,
holds output data there and answers NONE. Requests without padding (HAL 1.3, and every family but
``request_padding``) run exactly as the reference's: only ``request_padding``'s ``padded`` and
``insufficient`` cases can catch it. Validation happens before the widening, so padding past the pool is still
refused.

``ignores_padding`` validates every request as if its padding were 0 (a driver built for HAL 1.3's
DataLocation): padding past the pool or negative is accepted, caught by ``request_padding``'s
``input_past_pool``, ``output_past_pool`` and ``negative_padding`` only.
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


def _unpadded(request: Request) -> Request:
    def strip(arguments: list[RequestArgument]) -> list[RequestArgument]:
        return [RequestArgument(a.has_no_value, DataLocation(a.location.pool_index, a.location.offset,
                                                             a.location.length), list(a.dimensions))
                for a in arguments]

    return Request(strip(request.inputs), strip(request.outputs), request.pools)


class _PaddingIgnored(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-padding-ignored"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        check = prepared.check_request  # type: ignore[attr-defined]

        def check_without_padding(request: Request, *rest: Any) -> None:
            check(_unpadded(request), *rest)

        prepared.check_request = check_without_padding  # type: ignore[attr-defined]
        return prepared


def ignores_padding() -> Device:
    return _PaddingIgnored()
