"""A driver whose float outputs are wrong and whose 5 ms deadlines are met or missed as the test says.

What a partial driver on a loaded machine does: a model that takes about
5 ms meets a 5 ms deadline one run and misses it the next.  The outputs are
wrong either way (``broken.float_off_by_1e_4``'s fault); only the generated
family, and the deadline cases whose deadline timing cannot decide, may say
so.  ``meets_short_deadlines`` stands for the machine's load.
"""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.broken import FaultyDevice, FaultyPreparedModel, float_off_by_1e_4
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import PreparedModel
from vts.hal.types import ExecutionResult, Model, Request

#: A deadline at most this far ahead is "short": met or missed by timing (an unlimited one is far beyond).
SHORT_S = 1.0


def _short(deadline: int | None) -> bool:
    return deadline is not None and 0 < deadline - time.monotonic_ns() <= SHORT_S * 1e9


class _TimedPreparedModel(FaultyPreparedModel):
    device: TimedDevice

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        if deadline is not None and deadline <= time.monotonic_ns():
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the deadline had passed")
        if _short(deadline) and not self.device.meets_short_deadlines:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the machine was busy")
        return super().execute(request, measure, None, loop_timeout)


class TimedDevice(FaultyDevice):
    def __init__(self) -> None:
        super().__init__("broken-float-timed", fault=float_off_by_1e_4().fault)
        self.meets_short_deadlines = True

    def prepare_model(self, model: Model, preference: Any = 1, priority: Any = 1, deadline: Any = None,
                      *args: Any, **kwargs: Any) -> PreparedModel:
        if deadline is not None and deadline <= time.monotonic_ns():
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the deadline had passed")
        if _short(deadline) and not self.meets_short_deadlines:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the machine was busy")
        prepared = _TimedPreparedModel(self.inner.prepare_model(model, preference, priority, None, *args, **kwargs),
                                       model, self.fault, None)
        prepared.device = self
        return prepared


def wrong_outputs_timed() -> TimedDevice:
    return TimedDevice()
