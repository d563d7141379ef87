"""A vendor's first driver with one real bug: the template driver whose CONV_2D ignores dilation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nnvts.drivers.template import ops
from nnvts.drivers.template.device import TemplateDevice
from vts.hal.enums import MeasureTiming, OperationType
from vts.hal.interfaces import PreparedModel
from vts.hal.types import ExecutionResult, Request


def _conv_without_dilation(values: Sequence[object]) -> np.ndarray:
    args = ops.conv_args(values)
    if args.dilation == (1, 1):
        return ops.conv_2d(values)
    scalars = list(values)
    explicit = len(values) in (10, 11, 13) and not isinstance(values[7], bool)
    first = 11 if explicit else 8  # dilation width, height follow the layout flag
    scalars[first], scalars[first + 1] = 1, 1
    return ops.conv_2d(scalars)


class IgnoresDilationDevice(TemplateDevice):
    name = "vendor-ignoresdilation"

    def prepare_checked(self, *args: object, **kwargs: object) -> PreparedModel:  # type: ignore[override]
        prepared = super().prepare_checked(*args, **kwargs)  # type: ignore[arg-type]
        prepared.kernels = {**{k: v.kernel for k, v in ops.OPERATIONS.items()},  # type: ignore[attr-defined]
                            OperationType.CONV_2D: _conv_without_dilation}
        return prepared


def ignores_dilation() -> TemplateDevice:
    """Caught by ``generated`` on conv_2d_hand.dilation_nhwc: the one operation with dilation 2."""
    return IgnoresDilationDevice()


class _ExecuteOnly(PreparedModel):
    """A prepared model implementing only ``execute``: every other path is the interface's default."""

    def __init__(self, inner: PreparedModel) -> None:
        self.inner = inner
        self.model = inner.model  # type: ignore[attr-defined]

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        return self.inner.execute(request, measure, deadline, loop_timeout)


class ExecuteOnlyDevice(TemplateDevice):
    name = "vendor-executeonly"

    def prepare_checked(self, *args: object, **kwargs: object) -> PreparedModel:  # type: ignore[override]
        return _ExecuteOnly(super().prepare_checked(*args, **kwargs))  # type: ignore[arg-type]


def execute_only() -> TemplateDevice:
    """Inherits execute_async, execute_fenced and the burst from vts.hal.interfaces: they must be conformant."""
    return ExecuteOnlyDevice()
