"""The one way a driver reports a HAL error status."""

from __future__ import annotations

from collections.abc import Sequence

from vts.hal.enums import ErrorStatus
from vts.hal.types import OutputShape, Timing


class DriverError(Exception):
    """A HAL call that ended with a status other than NONE.

    ``output_shapes`` is only meaningful with OUTPUT_INSUFFICIENT_SIZE (the HAL
    returns one shape per output then, flagging the insufficient ones); for
    every other status the HAL requires it to be empty, and the harness
    checks that.  ``timing`` must stay "not measured" on any error.
    """

    def __init__(
        self,
        status: ErrorStatus | int,
        message: str = "",
        *,
        output_shapes: Sequence[OutputShape] = (),
        timing: Timing | None = None,
    ) -> None:
        self.status = status if type(status) is ErrorStatus else ErrorStatus(status)
        self.message = message
        self.output_shapes = tuple(output_shapes)
        self.timing = timing
        super().__init__(f"{self.status.name}: {message}" if message else self.status.name)
