"""A driver whose every execution fails with a hostile, 5 MB message (lone surrogate, controls, ``]]>``)."""

from __future__ import annotations

from tests.fakes.broken import FaultyDevice
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError

MESSAGE = "lone \ud800 surrogate, nul \x00, esc \x1b[2J, ]]> " + "z" * (5 << 20)


def create() -> FaultyDevice:
    return FaultyDevice("hostile", execute_error=lambda: DriverError(ErrorStatus.GENERAL_FAILURE, MESSAGE))
