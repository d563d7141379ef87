"""Reference devices with one deliberate fault of the real execution pattern each.

Each passes every golden case run one request at a time, as drivers like
them do in the field; each is caught by the family its docstring names.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from nnvts.drivers.reference.prepared_model import ReferencePreparedModel
from vts.hal import memory
from vts.hal.checked import DeviceTimer
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, PreparedModel, SyncFence
from vts.hal.memory import Memory
from vts.hal.types import ExecutionResult, Model, OutputShape, Request

#: How long the broken drivers hold their shared state, standing in for device time (DMA, compute).
DEVICE_TIME = 0.002


class _Device(ReferenceDevice):
    prepared_class: type[ReferencePreparedModel] = ReferencePreparedModel

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        reference = super().prepare_model(model, *args, **kwargs)  # every check and refusal of the reference
        assert isinstance(reference, ReferencePreparedModel)
        return self.wrap(reference)

    def wrap(self, reference: ReferencePreparedModel) -> PreparedModel:
        prepared = self.prepared_class(reference.model, reference.priority, self.scheduler, self.memory_budget,
                                       self.memory)
        prepared.device = self  # type: ignore[attr-defined]
        prepared.hal_version = reference.hal_version  # its bursts follow the device's version, as the reference's
        return prepared


# -- (i) one scratch buffer shared by every request ---------------------------------------------


class SharedScratchPreparedModel(ReferencePreparedModel):
    """Computes into one scratch area per prepared model, then copies out after the "device" finishes.

    Correct one request at a time; with two in flight, the later one's
    results overwrite the scratch before the earlier one copies out, so the
    earlier request returns the later one's answer.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._scratch: list[Any] = []

    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> tuple[OutputShape, ...]:
        compiled = self.compiled
        original_run = compiled.run

        def run_into_scratch(inputs: Any, clock: Any, timeout: Any = None) -> Any:
            self._scratch[:] = original_run(inputs, clock, timeout)
            time.sleep(DEVICE_TIME)
            return list(self._scratch)

        # Per call, not per object: the broken part is the shared scratch, not the interpreter.
        local = _CompiledView(compiled, run_into_scratch)
        self.compiled = local  # type: ignore[assignment]
        try:
            return super().run(request, deadline, loop_timeout, timer)
        finally:
            self.compiled = compiled


class _CompiledView:
    """The compiled model with ``run`` replaced (everything else delegated)."""

    def __init__(self, compiled: Any, run: Any) -> None:
        self._compiled = compiled
        self.run = run

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


class SharedScratchDevice(_Device):
    prepared_class = SharedScratchPreparedModel


def shared_scratch() -> ReferenceDevice:
    """Caught by ``concurrency`` (requests with different goldens in flight together)."""
    return SharedScratchDevice("broken-shared-scratch")


# -- (ii) releasing one prepared model reclaims every model's resources -------------------------


class ReclaimablePreparedModel(ReferencePreparedModel):
    reclaimed = False

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        self._check()
        return super().execute(request, measure, deadline, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Any:
        self._check()
        return super().execute_async(request, measure, deadline, loop_timeout)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None], *args: Any) -> Any:
        self._check()
        return super().execute_fenced(request, wait_for, *args)

    def run(self, *args: Any) -> tuple[OutputShape, ...]:
        self._check()
        return super().run(*args)

    def _check(self) -> None:
        if self.reclaimed:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "the model's device memory was reclaimed")


class ReclaimAllDevice(_Device):
    """Frees its whole model arena when any prepared model is released, instead of that model's part."""

    prepared_class = ReclaimablePreparedModel

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._live: weakref.WeakSet[ReclaimablePreparedModel] = weakref.WeakSet()

    def wrap(self, reference: ReferencePreparedModel) -> PreparedModel:
        prepared = super().wrap(reference)
        assert isinstance(prepared, ReclaimablePreparedModel)
        self._live.add(prepared)
        weakref.finalize(prepared, self._reclaim_all)
        return prepared

    def _reclaim_all(self) -> None:
        for model in list(self._live):
            model.reclaimed = True


def reclaim_all() -> ReferenceDevice:
    """Caught by ``concurrency/interleaved`` (m2's executions after m1's release)."""
    return ReclaimAllDevice("broken-reclaim-all")


# -- (iii) burst memory kept by pool position instead of by identifier ---------------------------


class PositionalBurst(Burst):
    """Keeps each request pool by its position in the request and ignores the identifiers."""

    def __init__(self, prepared_model: PreparedModel) -> None:
        super().__init__(prepared_model)
        self._by_position: dict[int, Any] = {}

    def resolve(self, request: Request, memory_ids: Sequence[int]) -> list[object]:
        pools: list[object] = []
        for index, pool in enumerate(request.pools):
            if pool is not None:
                self._by_position[index] = pool
            if index not in self._by_position:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"pool {index} was never given")
            pools.append(self._by_position[index])
        return pools


class PositionalBurstPreparedModel(ReferencePreparedModel):
    def configure_execution_burst(self) -> Burst:
        return PositionalBurst(self)


class PositionalBurstDevice(_Device):
    prepared_class = PositionalBurstPreparedModel
    hal_version = HalVersion.V1_3  # a HIDL burst fault (held slots): AIDL requests carry every pool


def burst_positions() -> ReferenceDevice:
    """Caught by ``burst`` (held slots combined across requests, freed and unknown identifiers)."""
    return PositionalBurstDevice("broken-burst-positions")


class UnfreeingBurst(Burst):
    """Never forgets a slot: ``free_memory`` is accepted and ignored."""

    def free_memory(self, slot: int) -> None:
        return None


class UnfreeingBurstPreparedModel(ReferencePreparedModel):
    def configure_execution_burst(self) -> Burst:
        return UnfreeingBurst(self)


class UnfreeingBurstDevice(_Device):
    prepared_class = UnfreeingBurstPreparedModel
    hal_version = HalVersion.V1_3  # a HIDL burst fault (held slots): AIDL requests carry every pool


def burst_ignores_free() -> ReferenceDevice:
    """Caught by ``burst`` (a freed identifier used again; a freed slot given a new memory)."""
    return UnfreeingBurstDevice("broken-burst-ignores-free")


# -- (iv) one prepared model shared by every client that compiles the same model -----------------


class SharedCompilationDevice(_Device):
    """Deduplicates compilations by model content, across clients: a client receives another's prepared model.

    Saves compile time; but a buffer allocated by client A names that shared
    prepared model in its roles, so client B's request naming A's token (or
    a guess of it) passes every check and reads A's data.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._compiled: dict[bytes, PreparedModel] = {}
        self._lock = threading.Lock()

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        key = hashlib.sha256(repr((model.main, model.referenced, model.operand_values)).encode()).digest()
        with self._lock:
            if key not in self._compiled:
                self._compiled[key] = super().prepare_model(model, *args, **kwargs)
            return self._compiled[key]


def shared_compilations() -> ReferenceDevice:
    """Caught by ``multi_client`` (a token of client A used in client B's request must be refused)."""
    return SharedCompilationDevice("broken-shared-compilations")


# -- (v) one device-wide lock held across a fence wait ---------------------------------------------


class SerializedPreparedModel(ReferencePreparedModel):
    """Runs every execution under one device-wide lock, including the wait for its fences."""

    def execute(self, request: Request, *args: Any, **kwargs: Any) -> ExecutionResult:
        with self.device.lock:  # type: ignore[attr-defined]
            return super().execute(request, *args, **kwargs)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None], *args: Any) -> Any:
        with self.device.lock:  # type: ignore[attr-defined]
            return super().execute_fenced(request, wait_for, *args)


class SerializedDevice(_Device):
    prepared_class = SerializedPreparedModel

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.lock = threading.Lock()


def serialized() -> ReferenceDevice:
    """Caught by ``multi_client`` (client A's fenced execution waits forever; client B must not wait with it)."""
    return SerializedDevice("broken-serialized")


# -- (vi) burst slots that cache contents, not memory ----------------------------------------------


class SnapshotBurst(Burst):
    """Keeps a copy of each input-only slot's bytes taken when the slot is first given.

    Saves re-reading (or re-uploading) inputs the driver believes unchanged;
    but a held slot is the client's memory, and a client streaming through
    the burst rewrites it between executions: this burst answers the old
    inputs.
    """

    def __init__(self, prepared_model: PreparedModel) -> None:
        super().__init__(prepared_model)
        self._copies: dict[int, Memory] = {}

    def execute(self, request: Request, memory_ids: Sequence[int], *args: Any, **kwargs: Any) -> ExecutionResult:
        pools = self.resolve(request, memory_ids)
        outputs = {argument.location.pool_index for argument in request.outputs}
        for index, (slot, given) in enumerate(zip(memory_ids, request.pools, strict=True)):
            if index in outputs or not isinstance(pools[index], Memory):
                continue
            if given is not None or slot not in self._copies:
                kept = pools[index]
                assert isinstance(kept, Memory)
                copy = memory.allocate(memory.ASHMEM, kept.size)
                copy.write(0, kept.read(0, kept.size))
                self._copies[slot] = copy
            pools[index] = self._copies[slot]
        resolved = Request(request.inputs, request.outputs, pools)  # type: ignore[arg-type]
        return self.prepared_model.execute(resolved, *args, **kwargs)

    def free_memory(self, slot: int) -> None:
        super().free_memory(slot)
        self._copies.pop(slot, None)


class SnapshotBurstPreparedModel(ReferencePreparedModel):
    def configure_execution_burst(self) -> Burst:
        return SnapshotBurst(self)


class SnapshotBurstDevice(_Device):
    prepared_class = SnapshotBurstPreparedModel
    hal_version = HalVersion.V1_3  # a HIDL burst fault (held slots): AIDL requests carry every pool


def burst_snapshots() -> ReferenceDevice:
    """Caught by ``burst`` (the client rewrites a held input slot's memory between executions)."""
    return SnapshotBurstDevice("broken-burst-snapshots")
