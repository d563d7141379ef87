"""The driver interfaces: ``IDevice``, ``IPreparedModel`` and ``IBuffer`` of NN HAL 1.3.

A driver implements ``Device`` (and returns ``PreparedModel`` and ``Buffer``
objects).  Every method reports failure by raising ``DriverError``; anything
else it raises, returns malformed, or does by crashing or hanging is a
conformance failure of the case that called it.

Where the HAL splits a call into a synchronous "launch" status and an
asynchronous callback, the Python rendering keeps the split only where the
suite tells them apart:

* ``prepare_model`` and ``prepare_model_from_cache`` are synchronous: a raised
  ``DriverError`` stands for both the launch and the callback status.
* ``execute_async`` raising ``DriverError`` is the launch status (the HAL
  requires INVALID_ARGUMENT there for a malformed request); an error that
  surfaces through the returned future is the callback status (a missed
  deadline must arrive that way).

What every driver owes, whatever it supports (the defaults below keep it):

* every HAL 1.3 execution path answers: ``execute_async`` and
  ``execute_fenced`` have conformant defaults built on ``execute``;
* a request naming a driver-buffer token (``MemoryToken``) that the driver
  never allocated is INVALID_ARGUMENT, also for a driver without memory
  domains (there is no such buffer), never GENERAL_FAILURE;
* the optional parts answer "unsupported" the HAL's way: ``allocate``
  GENERAL_FAILURE (memory domains), ``prepare_model_from_cache``
  GENERAL_FAILURE with ``(0, 0)`` cache files (caching), no extensions.

``vts.hal.checked`` is an optional base holding the rest of the preamble
(validation, preference, priority, deadlines, fences, timing).

Deadlines are absolute ``time.monotonic_ns()`` values (the HAL's steady
clock); ``None`` means no deadline.  Durations are nanoseconds.

Bursts (HAL 1.2 ``configureExecutionBurst``): ``PreparedModel.
configure_execution_burst`` returns a ``Burst``, a session that keeps the
memory pools of its requests by identifier (slot) until the client frees
them.  The base ``Burst`` is a complete, correct implementation on top of
``PreparedModel.execute`` (Android's runtime likewise falls back to plain
executions when a driver has no burst of its own), by the rules of the
version the driver speaks: HIDL's slots, or AIDL's memory identifier tokens
(``vts.hal.aidl_burst``); a driver overrides it to keep its mappings across
requests.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

from vts.hal.aidl_burst import TokenTable
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import (
    DeviceStatus,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    MeasureTiming,
    Priority,
)
from vts.hal.errors import DriverError
from vts.hal.memory import Memory
from vts.hal.types import (
    NO_TIMING_INFO,
    BufferDesc,
    BufferRole,
    Capabilities,
    ExecutionResult,
    Extension,
    MemoryToken,
    Model,
    Request,
    RequestPool,
    Timing,
)
from vts.hal.validation import ValidationError, validate_request

#: Burst memory identifiers are the HAL's int32 slots.
MAX_BURST_SLOT = (1 << 31) - 1

CacheFiles = Sequence[int]
"""Cache "handles": one open file descriptor per cache file."""


class SyncFence:
    """A sync fence: signalled once, successfully or in error.

    The HAL's fences are kernel sync files; here an event the harness and an
    in-process driver share.  ``None`` in a ``wait_for`` list stands for the
    HAL's null handle (which a driver must refuse).
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._ok = True

    def signal(self, ok: bool = True) -> None:
        self._ok = ok
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True when signalled without error within ``timeout`` seconds."""
        return self._event.wait(timeout) and self._ok

    @property
    def signalled(self) -> bool:
        return self._event.is_set()

    @classmethod
    def signalled_fence(cls, ok: bool = True) -> SyncFence:
        fence = cls()
        fence.signal(ok)
        return fence


class FencedExecutionCallback(abc.ABC):
    @abc.abstractmethod
    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """(status, timing launched, timing fenced) of a fenced execution."""


class CompletedFencedCallback(FencedExecutionCallback):
    """The callback of a fenced execution that finished before ``execute_fenced`` returned."""

    def __init__(self, launched: Timing, fenced: Timing) -> None:
        self._info = (ErrorStatus.NONE, launched, fenced)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        return self._info


def wait_for_fences(wait_for: Sequence[SyncFence | None], deadline: int | None,
                    timeout_after_fence: int | None) -> tuple[int | None, int]:
    """The HAL's fenced preamble after validation: (deadline, when the fences signalled, perf-counter ns).

    A null fence is INVALID_ARGUMENT; every other one is waited for (a fence
    that signals an error is GENERAL_FAILURE); ``timeout_after_fence`` counts
    from that moment and is folded into the deadline.
    """
    if any(fence is None for fence in wait_for):
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, "null wait fence")
    for fence in wait_for:
        assert fence is not None
        if not fence.wait():
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "a wait fence signalled an error")
    fenced = time.perf_counter_ns()
    if timeout_after_fence is not None:
        limit = time.monotonic_ns() + timeout_after_fence
        deadline = limit if deadline is None else min(deadline, limit)
    return deadline, fenced


def completed_callback(measure: MeasureTiming | int, launched: int, fenced: int) -> CompletedFencedCallback:
    """The callback of a fenced execution that just finished: timing (from ``launched`` and from ``fenced``,
    perf-counter ns) only when measured."""
    if measure != MeasureTiming.YES:
        return CompletedFencedCallback(NO_TIMING_INFO, NO_TIMING_INFO)
    end = time.perf_counter_ns()
    return CompletedFencedCallback(Timing((end - fenced) // 1000, (end - launched) // 1000),
                                   Timing((end - fenced) // 1000, (end - fenced) // 1000))

class Buffer(abc.ABC):
    """A driver-allocated memory-domain buffer (``IBuffer``)."""

    @abc.abstractmethod
    def copy_to(self, destination: Memory) -> None: ...

    @abc.abstractmethod
    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None: ...


class Burst:
    """A burst session on one prepared model (HIDL ``IBurstContext`` with ``IBurstCallback``, AIDL ``IBurst``).

    ``execute(request, memory_ids)`` is one burst execution: ``memory_ids[i]``
    identifies ``request.pools[i]``.  The burst follows the rules of the
    interface its prepared model's driver speaks (``hal_version``: the
    ``hal_version`` argument, else the prepared model's, which
    ``vts.hal.checked.CheckedDevice`` sets to its device's).

    HIDL 1.2/1.3 (the rules below).  A burst request names its pools only by
    identifier (an int32 slot); the first time the server sees a slot it asks
    the client for the memory (``getMemories``) and keeps it until
    ``freeMemory(slot)``.  The Python rendering passes that answer with the
    request: ``request.pools[i]`` is the memory of slot ``memory_ids[i]`` when
    the client gives it, or ``None`` when the client relies on the burst
    holding it already.  The rules every HIDL burst enforces (INVALID_ARGUMENT,
    nothing executed, no output written), after VTS's request and burst
    validation (ValidateRequest.cpp, ValidateBurst.cpp) and the AOSP sample
    driver's burst server (``ExecutionBurstServer.cpp``):

    * one identifier per pool (``len(memory_ids) == len(request.pools)``);
    * identifiers are int32 slots >= 0, each at most once per request;
    * a ``None`` pool whose slot the burst does not hold (never given, or
      freed) is unknown;
    * a memory given for a slot the burst still holds is a conflict (the
      server only asks for slots it does not have);
    * burst requests are HAL 1.0 requests: no driver-buffer tokens.

    ``free_memory`` of a slot the burst does not hold is harmless (the HAL's
    ``freeMemory`` returns nothing; the suite frees unknown and already
    freed slots and requires the service to survive).

    AIDL (feature level 5 and later): every request carries all its pools,
    each with a memory identifier token: -1 for a memory with no identity, a
    token >= 0 that the burst may keep a mapping under until
    ``free_memory`` (``releaseMemoryResource``), the same memory given again
    with a held token being the normal path; -2 and lower, a token count
    other than the pool count, a missing (``None``) pool are INVALID_ARGUMENT,
    and so is ``free_memory`` of -2 or lower; driver-buffer pools are
    allowed.  ``vts.hal.aidl_burst`` states and implements those rules.

    This base class keeps the slots (or tokens) itself and runs each request
    through ``PreparedModel.execute``; it is thread-safe.  Subclasses override
    ``remember`` (to map a memory once, when it is given: never copy its
    contents, which the client may rewrite between executions) or ``execute``.
    """

    def __init__(self, prepared_model: PreparedModel, hal_version: HalVersion | None = None) -> None:
        self.prepared_model = prepared_model
        #: The interface whose burst rules apply (``spoken_version`` of the prepared model unless given).
        self.hal_version = spoken_version(prepared_model) if hal_version is None else hal_version
        self._slots: dict[int, object] = {}
        self._tokens = TokenTable()
        self._lock = threading.Lock()

    @property
    def aidl_rules(self) -> bool:
        """Whether this burst follows AIDL's rules (IBurst.aidl) rather than HIDL's."""
        return self.hal_version.is_aidl

    def remember(self, slot: int, memory: Memory) -> object:
        """What the burst keeps for a newly given memory (the memory itself by default)."""
        return memory

    def resolve(self, request: Request, memory_ids: Sequence[int]) -> list[object]:
        """The kept object of every pool of ``request``, keeping newly given ones; INVALID_ARGUMENT per the rules."""
        if self.aidl_rules:
            with self._lock:
                return self._tokens.resolve(list(request.pools), list(memory_ids), self.remember)
        pools = list(request.pools)
        ids = list(memory_ids)
        if len(ids) != len(pools):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                              f"burst: {len(ids)} memory identifiers for {len(pools)} pools")
        seen: set[int] = set()
        for slot in ids:
            if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot <= MAX_BURST_SLOT:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"burst: memory identifier {slot!r} is not a slot")
            if slot in seen:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"burst: memory identifier {slot} given twice")
            seen.add(slot)
        with self._lock:
            new: dict[int, object] = {}
            resolved: list[object] = []
            for index, (slot, pool) in enumerate(zip(ids, pools, strict=True)):
                if isinstance(pool, MemoryToken):
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"burst: pool {index} is a driver buffer token (burst requests are HAL 1.0)")
                if pool is None:
                    if slot not in self._slots:
                        raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                          f"burst: memory identifier {slot} (pool {index}) is unknown or freed")
                    resolved.append(self._slots[slot])
                    continue
                if slot in self._slots:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"burst: memory identifier {slot} (pool {index}) already holds a memory")
                if not isinstance(pool, Memory):
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"burst: pool {index} is not a memory")
                new[slot] = self.remember(slot, pool)
                resolved.append(new[slot])
            self._slots.update(new)
        return resolved

    def execute(
        self,
        request: Request,
        memory_ids: Sequence[int],
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
    ) -> ExecutionResult:
        """One burst execution: resolve the pools by slot, then execute synchronously."""
        pools: list[RequestPool] = self.resolve(request, memory_ids)  # type: ignore[assignment]
        resolved = Request(request.inputs, request.outputs, pools)
        return self.prepared_model.execute(resolved, measure, deadline, loop_timeout)

    def execute_with_config(self, request: Request, memory_ids: Sequence[int], config: ExecutionConfig,
                            deadline: int | None = None) -> ExecutionResult:
        """AIDL v4 ``IBurst.executeSynchronouslyWithConfig``: ``execute`` with the config's timing and loop timeout;
        the default ignores the execution hints and the extension table (ExecutionConfig.aidl lets it)."""
        return self.execute(request, memory_ids, config.measure, deadline, config.loop_timeout)  # type: ignore[arg-type]

    def free_memory(self, slot: int) -> None:
        """HIDL ``freeMemory``: forget the memory of ``slot`` (no effect for a slot not held).  AIDL
        ``releaseMemoryResource``: the same, and INVALID_ARGUMENT for a token below -1."""
        with self._lock:
            if self.aidl_rules:
                self._tokens.release(slot)
            else:
                self._slots.pop(slot, None)

    def held_slots(self) -> frozenset[int]:
        """The slots (HIDL) or tokens (AIDL) the burst holds."""
        with self._lock:
            return self._tokens.held() if self.aidl_rules else frozenset(self._slots)


class PreparedModel(abc.ABC):
    """A compiled model (``IPreparedModel`` 1.3, or AIDL ``IPreparedModel`` where ``hal_version`` says so)."""

    #: The interface the device that prepared it speaks (``Device.hal_version``): the base ``Burst`` follows that
    #: version's burst rules.  ``vts.hal.checked.CheckedDevice`` sets it on every model it prepares; a driver
    #: preparing models itself sets it (or gives it to ``Burst``).  HAL 1.3 unless set.
    hal_version: HalVersion = HalVersion.V1_3

    @abc.abstractmethod
    def execute(
        self,
        request: Request,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
    ) -> ExecutionResult:
        """``executeSynchronously_1_3``."""

    def execute_async(
        self,
        request: Request,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
    ) -> Future[ExecutionResult]:
        """``execute_1_3``: INVALID_ARGUMENT raised now (the launch status), every other answer in the future.

        The default is conformant for any conformant ``execute``: it runs
        ``execute`` at launch, raises an INVALID_ARGUMENT from it (a
        malformed request must be refused at launch, never in the callback)
        and hands everything else (results, a missed deadline,
        OUTPUT_INSUFFICIENT_SIZE with its shapes) to an already completed
        future.  Drivers with a real queue override it, validating before
        they queue (``vts.hal.checked.CheckedPreparedModel`` does).
        """
        future: Future[ExecutionResult] = Future()
        try:
            future.set_result(self.execute(request, measure, deadline, loop_timeout))
        except DriverError as error:
            if error.status == ErrorStatus.INVALID_ARGUMENT:
                raise
            future.set_exception(error)
        return future

    def execute_fenced(
        self,
        request: Request,
        wait_for: Sequence[SyncFence | None],
        measure: MeasureTiming = MeasureTiming.NO,
        deadline: int | None = None,
        loop_timeout: int | None = None,
        timeout_after_fence: int | None = None,
    ) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """``executeFenced``: every HAL 1.3 driver has it; the default runs ``execute`` after the fences.

        The default is conformant for any conformant ``execute`` on a
        prepared model that sets ``self.model`` (the model it runs): it
        refuses a null wait fence (INVALID_ARGUMENT), and, when ``model`` is
        set, a request that breaks the HAL rules or leaves an output's shape
        unspecified (fenced execution cannot report shapes: INVALID_ARGUMENT);
        it waits for every fence (GENERAL_FAILURE if one signals an error),
        folds ``timeout_after_fence`` into the deadline, executes, and returns
        no fence (the work is done) with a callback reporting NONE and the
        timing when measured.
        """
        launched = time.perf_counter_ns()
        model = getattr(self, "model", None)
        if isinstance(model, Model):
            try:
                validate_request(request, model, allow_unspecified_output=False)
            except ValidationError as error:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None
        deadline, fenced = wait_for_fences(wait_for, deadline, timeout_after_fence)
        self.execute(request, MeasureTiming.NO, deadline, loop_timeout)
        return None, completed_callback(measure, launched, fenced)

    def execute_synchronously_with_config(self, request: Request, config: ExecutionConfig,
                                          deadline: int | None = None) -> ExecutionResult:
        """AIDL v4 ``executeSynchronouslyWithConfig``: ``execute`` with its settings in one parcel, plus hints.

        The default runs ``execute`` with the config's timing and loop timeout and ignores the execution hints
        and the extension table, as a driver that knows none of the hints must (ExecutionConfig.aidl).
        """
        return self.execute(request, config.measure, deadline, config.loop_timeout)  # type: ignore[arg-type]

    def execute_fenced_with_config(
        self,
        request: Request,
        wait_for: Sequence[SyncFence | None],
        config: ExecutionConfig,
        deadline: int | None = None,
        timeout_after_fence: int | None = None,
    ) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """AIDL v4 ``executeFencedWithConfig``: ``execute_fenced`` with the config's settings; hints ignored."""
        return self.execute_fenced(request, wait_for, config.measure, deadline,  # type: ignore[arg-type]
                                   config.loop_timeout, timeout_after_fence)

    def configure_execution_burst(self) -> Burst:
        """``configureExecutionBurst``: a burst session on this model (the base ``Burst`` by default)."""
        return Burst(self)

    def create_reusable_execution(self, request: Request, measure: MeasureTiming | int = MeasureTiming.NO,
                                  loop_timeout: int | None = None) -> Execution:
        """AIDL v4 ``createReusableExecution``: ``request`` and settings fixed, executed again and again.

        INVALID_ARGUMENT here for a request this model refuses (or on every execution: the interface allows
        either).  The base ``Execution`` runs on this model's own executions.
        """
        try:
            validate_request(request, self.model_for_validation(), allow_unspecified_output=True)
        except ValidationError as error:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None
        except NotImplementedError:
            pass  # a driver that keeps no model: each execution validates the request
        return Execution(self, request, measure, loop_timeout)

    def model_for_validation(self) -> Model:
        """The model requests are validated against (``create_reusable_execution``); drivers that keep it say so."""
        model = getattr(self, "model", None)
        if not isinstance(model, Model):
            raise NotImplementedError
        return model


class Execution:
    """AIDL v4 ``IExecution``: one request and its settings, executed again and again, at most one at a time.

    The client writes new inputs into the request's memory between executions: each must read the memory
    as it is at its own start (IExecution.aidl lets a driver cache mappings, never contents).  A second
    execution while one is in flight is refused here (INVALID_ARGUMENT); a driver may serialise it instead.
    The base runs each execution as ``PreparedModel.execute`` / ``execute_fenced`` of the fixed request, the
    in-flight mark held until the fenced execution's fence signals: the next execution finds the fence
    signalled and takes the mark over, so a client that waited for the fence is never refused (a thread
    releasing the mark when the fence signals lost that race to a client woken by the same fence).
    """

    def __init__(self, prepared: PreparedModel, request: Request, measure: MeasureTiming | int = MeasureTiming.NO,
                 loop_timeout: int | None = None) -> None:
        self.prepared = prepared
        self.request = request
        self.measure = MeasureTiming(int(measure))
        self.loop_timeout = loop_timeout
        self._in_flight = threading.Lock()
        #: The fence of the fenced execution holding the mark, until an execution finds it signalled.
        self._pending: SyncFence | None = None
        self._handover = threading.Lock()

    def _begin(self) -> None:
        if self._in_flight.acquire(blocking=False):
            return
        with self._handover:
            pending = self._pending
            if pending is not None and pending.signalled:  # the last fenced execution is over: its mark is ours
                self._pending = None
                return
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, "another execution of this reusable execution is in "
                                                        "flight (IExecution: at most one at a time)")

    def execute(self, deadline: int | None = None) -> ExecutionResult:
        """``executeSynchronously``."""
        self._begin()
        try:
            return self.prepared.execute(self.request, self.measure, deadline, self.loop_timeout)
        finally:
            self._in_flight.release()

    def execute_fenced(self, wait_for: Sequence[SyncFence | None], deadline: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """``executeFenced``: in flight until the returned fence (if any) signals."""
        self._begin()
        try:
            fence, callback = self.prepared.execute_fenced(self.request, wait_for, self.measure, deadline,
                                                           self.loop_timeout, timeout_after_fence)
        except BaseException:
            self._in_flight.release()
            raise
        if fence is None or fence.signalled:
            self._in_flight.release()
        else:
            with self._handover:
                self._pending = fence
        return fence, callback


def spoken_version(device: object) -> HalVersion:
    """The interface version ``device`` speaks (``Device.hal_version``): HAL 1.3 when it does not say, or says
    something that is no version (a driver is untrusted)."""
    value = getattr(device, "hal_version", HalVersion.V1_3)
    if isinstance(value, HalVersion):
        return value
    try:
        return HalVersion(value)
    except (ValueError, TypeError):
        return HalVersion.V1_3


class Device(abc.ABC):
    """An accelerator (``IDevice`` 1.3, or AIDL ``IDevice`` where ``hal_version`` says so)."""

    #: ``{vendor}-{device}``: the HAL service instance name.
    name: str
    #: The interface and version the driver speaks: HIDL 1.0 to 1.3 (``V1_0`` .. ``V1_3``) or AIDL v1 to v4
    #: (feature levels ``FL5`` .. ``FL8``).  The harness asks it nothing newer (a model of feature level 6 is not
    #: sent to a HAL 1.3 driver) and judges it by that version's rules (AIDL: no OEM types, no
    #: numberOfConsumers, 15-bit extension prefixes, burst tokens); a checked device validates models
    #: against it.  HAL 1.3 unless the driver says otherwise.
    hal_version: HalVersion = HalVersion.V1_3

    def get_status(self) -> DeviceStatus:
        return DeviceStatus.AVAILABLE

    @abc.abstractmethod
    def get_type(self) -> DeviceType: ...

    @abc.abstractmethod
    def get_version_string(self) -> str: ...

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities: ...

    def get_supported_extensions(self) -> list[Extension]:
        return []

    @abc.abstractmethod
    def get_supported_operations(self, model: Model) -> list[bool]:
        """One flag per operation of ``model.main``; INVALID_ARGUMENT for a bad model."""

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        """(model cache files, data cache files); (0, 0) means no caching."""
        return (0, 0)

    @abc.abstractmethod
    def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
        priority: Priority | int = Priority.MEDIUM,
        deadline: int | None = None,
        model_cache: CacheFiles = (),
        data_cache: CacheFiles = (),
        token: bytes = bytes(32),
    ) -> PreparedModel: ...

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        """AIDL v4 ``prepareModelWithConfig``: ``prepare_model`` with its arguments in one parcel, plus hints.

        The default runs ``prepare_model`` with the config's preference, priority, deadline, caches and token,
        and ignores the compilation hints and the extension table, as a driver that knows none of the hints
        must (PrepareModelConfig.aidl).
        """
        return self.prepare_model(model, config.preference, config.priority, config.deadline,
                                  config.model_cache, config.data_cache, config.token)

    def prepare_model_from_cache(
        self,
        deadline: int | None,
        model_cache: CacheFiles,
        data_cache: CacheFiles,
        token: bytes,
    ) -> PreparedModel:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "compilation caching not supported")

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[PreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[Buffer, int]:
        """(buffer, token > 0); GENERAL_FAILURE when memory domains are unsupported.

        A driver without memory domains must still refuse requests naming a
        token with INVALID_ARGUMENT (``CheckedPreparedModel`` does).
        """
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "memory domains not supported")

    def close(self) -> None:  # noqa: B027 - optional hook, deliberately a no-op by default
        """Release the driver (end of a run). Optional."""
