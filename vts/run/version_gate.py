"""A driver is not asked for what its version lacks: a model of feature level 6 is not sent to a HAL 1.3 driver.

VTS runs a test model only on a device of its version or later (the
generated tests of ``AIDL_V2`` exist only in the AIDL VTS).  Here every case
is still named, whatever the driver, so shards and baselines agree across
drivers; a case whose model needs more than the driver speaks ends SKIPPED,
naming both, before the family sends anything.

The driver's version is its ``hal_version`` (``vts.hal.interfaces.spoken_version``);
a driver that does not say is held to HAL 1.3, and so is a driver reached
through the nnvts protocol that grants no ``aidl:N`` feature when it opens
(docs/protocol.md §5.3); one that grants ``aidl:N`` speaks feature level N + 4.
"""

from __future__ import annotations

from vts.families.base import Case
from vts.hal.interfaces import Device, spoken_version


def beyond_driver(case: Case, device: Device) -> str | None:
    """Why ``case`` is not for ``device`` (its model needs a newer version), or None when it is."""
    if case.model is None:
        return None
    needed = case.model.hal_version
    speaks = spoken_version(device)
    if needed <= speaks:
        return None
    return f"the model needs {needed.label}; the driver speaks {speaks.label}"
