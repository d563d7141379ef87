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


class BeyondHalRule(ValidationError):
    """A NeuralNetworks.h rule the NN HAL 1.3 driver-mode validator (ValidateHal) does not enforce.

    Example: CONV_2D's input "must be a 4-D tensor", but Android 10/11's
    ``conv_2d::validate`` checks operand types only; the rank is checked when
    the CPU executor prepares the operation.  A model breaking such a rule is
    *valid* for the HAL: a driver must answer the support query with NONE
    (it may mark the operation unsupported) and fail preparation or
    execution cleanly, never refuse the model with INVALID_ARGUMENT.
    ``vts.hal.validation.validate_model(..., hal_rules_only=True)`` skips
    these rules.
    """
