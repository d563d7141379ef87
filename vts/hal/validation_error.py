"""The exception every HAL validation rule raises.

It lives in its own module so that the per-operation validators
(``vts.hal.operations``) and the model/request validators
(``vts.hal.validation``) can share it without importing each other.
A driver maps it to ``ErrorStatus.INVALID_ARGUMENT``, exactly as Android's
sample driver maps a failed ``validateModel``/``validateRequest``.
"""

from __future__ import annotations


class ValidationError(Exception):
    """A model, operation or request breaks a NN HAL validation rule.

    ``message`` always names what was being validated (the operation, the
    operand index, the request argument) and what is wrong with it, so a
    driver can pass it on verbatim in its ``DriverError``.
    """

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)
