"""The ``aidl:N`` features of ``OPEN`` (docs/protocol.md §5.3, §5.5): which AIDL interface a driver speaks.

The protocol's calls are HAL 1.3's; an AIDL driver (Android 12+, ``android.hardware.neuralnetworks``
v1 to v4) answers the same calls by other rules (no ``numberOfConsumers``, FL6/FL7 operations, burst
token -1).  Which rules apply is negotiated, never assumed: the harness asks for ``aidl:1`` to
``aidl:4``, a driver grants the one version it speaks (at most one), and the harness judges it by that
version's rules (``HalVersion`` FL5 to FL8).  None granted: HAL 1.3, as every driver of revision 2 and
every revision-3 driver that knows no ``aidl`` feature is judged.  ``aidl:4`` also brings the message
kinds of reusable executions (``REUSABLE_*``, AIDL v4 ``createReusableExecution``).
"""

from __future__ import annotations

from collections.abc import Iterable

from vts.hal.enums import HalVersion
from vts.ipc.errors import ProtocolError

__all__ = [
    "AIDL_FEATURES",
    "AIDL_FEATURE_PREFIX",
    "REUSABLE_EXECUTION_AIDL",
    "aidl_feature",
    "aidl_grant",
    "granted_aidl",
]

#: A feature naming an AIDL interface version: ``aidl:4``.
AIDL_FEATURE_PREFIX = "aidl:"
#: The AIDL versions of the NN HAL (Android 12 to 13; 14 and 15 changed nothing).
_AIDL_VERSIONS = (1, 2, 3, 4)
#: The AIDL version that brought ``createReusableExecution`` (the ``REUSABLE_*`` message kinds).
REUSABLE_EXECUTION_AIDL = 4


def aidl_feature(version: int) -> str:
    """The feature naming AIDL interface ``version``: ``aidl:4``."""
    return f"{AIDL_FEATURE_PREFIX}{version}"


#: What the harness asks for: every AIDL version it can judge.
AIDL_FEATURES: tuple[str, ...] = tuple(aidl_feature(version) for version in _AIDL_VERSIONS)


def _version_of(feature: str) -> int | None:
    number = feature[len(AIDL_FEATURE_PREFIX):] if feature.startswith(AIDL_FEATURE_PREFIX) else ""
    return int(number) if number.isdigit() and len(number) <= 3 else None


def granted_aidl(features: Iterable[str]) -> HalVersion | None:
    """The interface the granted ``features`` name (FL5 for ``aidl:1`` ... FL8 for ``aidl:4``), None for HAL 1.3.

    ``ProtocolError`` when more than one AIDL version is granted (a driver speaks one) or one beyond
    ``aidl:4`` (the harness never asks for it; the caller has refused unasked features already).
    """
    versions = sorted({v for v in (_version_of(f) for f in features) if v is not None})
    if len(versions) > 1:
        named = ", ".join(aidl_feature(v) for v in versions)
        raise ProtocolError(f"OPEN granted {len(versions)} AIDL versions ({named}): a driver speaks one")
    if not versions:
        return None
    if versions[0] not in _AIDL_VERSIONS:
        raise ProtocolError(f"OPEN granted {aidl_feature(versions[0])}: the NN HAL's AIDL versions are 1 to "
                            f"{_AIDL_VERSIONS[-1]}")
    return HalVersion(versions[0] + 14)


def aidl_grant(asked: Iterable[str], speaks: HalVersion) -> str | None:
    """The ``aidl:N`` a driver speaking ``speaks`` grants of the ``asked`` features, or None.

    The version it speaks when asked for; an AIDL interface serves clients of its earlier versions too
    (stable AIDL), so otherwise the highest asked below it.  A HIDL driver grants none.
    """
    if not speaks.is_aidl:
        return None
    own = speaks.feature_level - 4
    offered = [v for v in (_version_of(f) for f in asked) if v is not None and v in _AIDL_VERSIONS and v <= own]
    return aidl_feature(max(offered)) if offered else None
