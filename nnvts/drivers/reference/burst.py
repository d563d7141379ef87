"""The reference driver's burst sessions: a per-burst cache of mapped pools, keyed by slot.

Android's sample driver answers ``configureExecutionBurst`` with a server
whose executor keeps the mapped memory of each slot until ``freeMemory``
(ExecutionBurstServer.cpp).  ``ReferenceBurst`` does the same on top of
``vts.hal.interfaces.Burst`` (which enforces the identifier rules): a memory
is checked for mappability once, when its slot is first given, and every
later request naming the slot uses the kept pool.  A pool the device cannot
map is GENERAL_FAILURE, as for a plain execution, and its slot is not kept.
"""

from __future__ import annotations

from nnvts.drivers.reference.memory_domain import DeviceMemory
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.memory import Memory


class ReferenceBurst(Burst):
    def __init__(self, prepared_model: PreparedModel, memory: DeviceMemory) -> None:
        super().__init__(prepared_model)
        self._memory = memory

    def remember(self, slot: int, memory: Memory) -> object:
        self._memory.check_pool(memory, f"burst memory {slot}")
        return memory
