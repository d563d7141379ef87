"""The rules a family checks that the driver's interface version does not have, each named.

A family judges a driver by the rules of the version it speaks
(``vts.hal.interfaces.spoken_version``): what HIDL 1.3 requires and AIDL
dropped or reversed is skipped for an AIDL driver, with the rule named, never
judged by the wrong contract.  Keys are what a family calls the check (a
validation mutation's kind, a burst mutation's slug).
"""

from __future__ import annotations

from vts.hal.enums import HalVersion
from vts.hal.interfaces import spoken_version

#: Checks of HIDL rules the AIDL interface (feature level 5 and later) does not have: check -> why, citing it.
NOT_IN_AIDL: dict[str, str] = {
    "operand_consumers": "AIDL has no numberOfConsumers (Operand.aidl): a wrong count is no fault",
    "add_operation_output.extension": "an extension operation's signature is its vendor's, and AIDL has no "
                                      "numberOfConsumers (Operand.aidl), the one rule its extra output broke",
    "burst.negative_id": "AIDL bursts take memory identifier token -1 as 'no identity' (IBurst.aidl)",
    "burst.token_pool": "AIDL bursts take driver-managed buffers among their pools (IBurst.aidl)",
    "burst.duplicate_id": "an AIDL token names a memory, and one memory may back two pools (IBurst.aidl)",
    "burst.id_beyond_int32": "AIDL memory identifier tokens are int64 (IBurst.aidl)",
    "burst.unknown_id": "an AIDL burst request carries every pool: there is no held pool to be unknown",
    "burst.freed_id": "an AIDL burst request carries every pool: a released token is given its memory again",
    "burst.given_while_held": "an AIDL burst is given every memory on every execution, held tokens included "
                              "(GeneratedTestHarness.cpp)",
}


def rule_lacking(check: str, device: object) -> str | None:
    """Why ``check`` is not a rule of the version ``device`` speaks (the skip reason), or None when it is."""
    version = spoken_version(device)
    if version >= HalVersion.FL5 and check in NOT_IN_AIDL:
        return f"not a rule of {version.interface}: {NOT_IN_AIDL[check]}"
    return None
