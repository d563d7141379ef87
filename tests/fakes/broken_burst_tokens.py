"""AIDL v4 reference drivers whose burst (``IBurst``) breaks one of AIDL's token rules each (IBurst.aidl).

Each is the reference speaking AIDL v4, every call but the burst's its own:

* ``hidl_rules``: the burst keeps HIDL 1.3's slot rules (the base ``Burst`` told it speaks 1.3): it refuses
  memory identifier token -1 and driver-buffer pools, which AIDL allows, and ignores
  ``releaseMemoryResource(-2)``.  Caught by ``burst`` (golden: every token -1; validation: the release) and by
  ``memory_domain`` (the burst path gives driver buffers token -1).
* ``accepts_token_minus_2``: every negative token is taken as "no identity", -2 included, and
  ``releaseMemoryResource`` of one is ignored: caught by ``burst`` validation (VTS's ``validateBurst``).
* ``caches_contents_by_token``: the first time a token names an input memory the burst copies the memory's
  bytes and answers from the copy for as long as the token is held, though the client gives the memory again
  on every execution, rewritten (IBurst.aidl lets a driver keep a mapping, not the contents): caught by
  ``burst`` golden (streaming through a held token).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnvts.drivers.reference.burst import ReferenceBurst
from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal import memory
from vts.hal.enums import HalVersion
from vts.hal.interfaces import Burst, PreparedModel
from vts.hal.memory import Memory
from vts.hal.types import Model, Request


class _HidlRules(ReferenceBurst):
    def __init__(self, prepared_model: Any, device_memory: Any) -> None:
        super().__init__(prepared_model, device_memory)
        self.hal_version = HalVersion.V1_3


class _MinusTwoAccepted(ReferenceBurst):
    def resolve(self, request: Request, memory_ids: Sequence[int]) -> list[object]:
        return super().resolve(request, [-1 if isinstance(t, int) and t < -1 else t for t in memory_ids])

    def free_memory(self, slot: int) -> None:
        if isinstance(slot, int) and slot >= -1:
            super().free_memory(slot)


class _ContentsCached(ReferenceBurst):
    """Answers from a copy of each input memory's bytes, taken when its token first named it."""

    def __init__(self, prepared_model: Any, device_memory: Any) -> None:
        super().__init__(prepared_model, device_memory)
        self._copies: dict[int, Memory] = {}

    def execute(self, request: Request, memory_ids: Sequence[int], *args: Any, **kwargs: Any) -> Any:
        pools = self.resolve(request, memory_ids)
        outputs = {argument.location.pool_index for argument in request.outputs}
        for index, token in enumerate(memory_ids):
            kept = pools[index]
            if index in outputs or token < 0 or not isinstance(kept, Memory):
                continue
            if token not in self._copies:
                copy = memory.allocate(memory.ASHMEM, kept.size)
                copy.write(0, kept.read(0, kept.size))
                self._copies[token] = copy
            pools[index] = self._copies[token]
        resolved = Request(request.inputs, request.outputs, pools)  # type: ignore[arg-type]
        return self.prepared_model.execute(resolved, *args, **kwargs)

    def free_memory(self, slot: int) -> None:
        super().free_memory(slot)
        self._copies.pop(slot, None)


class _BurstFault(ReferenceDevice):
    """The reference (AIDL v4), its prepared models configuring ``burst`` bursts."""

    def __init__(self, name: str, burst: type[ReferenceBurst]) -> None:
        super().__init__()
        self.name = name
        self.burst = burst

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        kind = self.burst

        def configure() -> Burst:
            return kind(prepared, prepared.memory)  # type: ignore[attr-defined]

        prepared.configure_execution_burst = configure  # type: ignore[method-assign]
        return prepared


def hidl_rules() -> ReferenceDevice:
    """Caught by ``burst`` and ``memory_domain``: an AIDL burst refusing token -1 and driver buffers."""
    return _BurstFault("broken-burst-hidl-rules", _HidlRules)


def accepts_token_minus_2() -> ReferenceDevice:
    """Caught by ``burst`` validation: token -2 taken as no identity, ``releaseMemoryResource(-2)`` ignored."""
    return _BurstFault("broken-burst-token-minus-2", _MinusTwoAccepted)


def caches_contents_by_token() -> ReferenceDevice:
    """Caught by ``burst`` golden: answers from the bytes a held token's memory had when first given."""
    return _BurstFault("broken-burst-contents-by-token", _ContentsCached)
