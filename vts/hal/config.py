"""AIDL v4's configuration parcels: ``PrepareModelConfig``, ``ExecutionConfig`` and their ``TokenValuePair`` hints.

Android 13 (AIDL v4, feature level 8) added ``IDevice.prepareModelWithConfig`` and
``IPreparedModel.execute{Synchronously,Fenced}WithConfig``: the arguments of the older calls gathered into
one parcel each, plus what the older calls cannot carry, vendor hints (compilation hints when preparing,
execution hints when executing) and the extension name-to-prefix table that names the extension a hint's
token belongs to.  A hint is advice: the driver "must validate the data and ignore invalid hints"
(PrepareModelConfig.aidl, ExecutionConfig.aidl), so no hint, known or not, with a value or without, may
fail a call or change a result.

The Python rendering keeps the older calls' conventions: deadlines absolute ``time.monotonic_ns()`` or
None, a loop timeout in nanoseconds or None for the default (AIDL's -1), timing as ``MeasureTiming``
(AIDL's boolean ``measureTiming``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vts.hal.enums import EXTENSION_TYPE_LOW_BITS_TYPE, ExecutionPreference, MeasureTiming, Priority
from vts.hal.types import ExtensionNameAndPrefix

__all__ = ["ExecutionConfig", "PrepareModelConfig", "TokenValuePair", "hint_token"]


@dataclass(frozen=True, slots=True)
class TokenValuePair:
    """One vendor hint (TokenValuePair.aidl): a 31-bit token, extension prefix above its low bits, and raw bytes."""

    token: int
    value: bytes = b""


def hint_token(prefix: int, hint: int) -> int:
    """The token of hint ``hint`` of the extension given ``prefix`` (``0x7AAA``, ``0xB`` -> ``0x7AAA000B``)."""
    return (prefix << EXTENSION_TYPE_LOW_BITS_TYPE) | hint


@dataclass(frozen=True, slots=True)
class PrepareModelConfig:
    """``prepareModelWithConfig``'s parcel: ``prepare_model``'s arguments, compilation hints, extension table."""

    preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER
    priority: Priority | int = Priority.MEDIUM
    deadline: int | None = None
    model_cache: Sequence[int] = ()
    data_cache: Sequence[int] = ()
    token: bytes = bytes(32)
    compilation_hints: tuple[TokenValuePair, ...] = ()
    extension_name_to_prefix: tuple[ExtensionNameAndPrefix, ...] = ()


@dataclass(frozen=True, slots=True)
class ExecutionConfig:
    """``execute*WithConfig``'s parcel: timing, loop timeout, execution hints, extension table."""

    measure: MeasureTiming | int = MeasureTiming.NO
    loop_timeout: int | None = None
    execution_hints: tuple[TokenValuePair, ...] = ()
    extension_name_to_prefix: tuple[ExtensionNameAndPrefix, ...] = ()
