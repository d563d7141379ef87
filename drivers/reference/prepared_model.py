"""The reference driver's prepared model: request decoding, execution paths, timing.

Behaviour follows Android's sample driver (hal-reference.md §12.4): validate
the request first (INVALID_ARGUMENT), refuse an already-passed deadline
(MISSED_DEADLINE_PERSISTENT), map the pools (shared memory and
driver-allocated buffers named by token: ``drivers.reference.request_pools``),
run, and report output shapes on success and on OUTPUT_INSUFFICIENT_SIZE
only, timing only when measured and successful.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future

from drivers.reference.burst import ReferenceBurst
from drivers.reference.executor import CompiledModel, DeadlineClock
from drivers.reference.memory_domain import DeviceMemory
from drivers.reference.request_pools import RequestBinding
from drivers.reference.scheduler import PriorityScheduler
from vts.hal.enums import (
    LOOP_TIMEOUT_DEFAULT_NS,
    ErrorStatus,
    MeasureTiming,
    Priority,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.types import (
    NO_TIMING_INFO,
    ExecutionResult,
    MemoryToken,
    Model,
    Request,
    Timing,
)
from vts.hal.validation import ValidationError, validate_request


def _deadline_passed(deadline: int | None) -> bool:
    return deadline is not None and time.monotonic_ns() >= deadline


class _FencedCallback(FencedExecutionCallback):
    def __init__(self, status: ErrorStatus, launched: Timing, fenced: Timing) -> None:
        self._info = (status, launched, fenced)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        return self._info


class ReferencePreparedModel(PreparedModel):
    """A prepared model of one reference device.

    ``memory`` is the device's ``DeviceMemory``: the pool kinds it maps
    (a model pool of another kind is refused here, at preparation, with
    GENERAL_FAILURE) and its driver-allocated buffers, which requests name by
    token.  A prepared model registers itself there so ``allocate`` accepts
    it as one of the device's own.
    """

    def __init__(self, model: Model, priority: Priority, scheduler: PriorityScheduler,
                 memory_budget: int | None = None, memory: DeviceMemory | None = None) -> None:
        self.memory = memory if memory is not None else DeviceMemory()
        self.memory.check_model_pools(model)
        self.model = model
        self.priority = Priority(priority)
        self.compiled = CompiledModel(model)
        self.scheduler = scheduler
        self.memory_budget = memory_budget
        self.memory.register(self, model)

    # -- execution paths ----------------------------------------------------

    def _validate(self, request: Request, allow_unspecified_output: bool = True) -> None:
        try:
            validate_request(request, self.model, allow_unspecified_output=allow_unspecified_output)
        except ValidationError as error:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None
        if self.memory_budget is not None:
            pools = sum(p.size for p in request.pools if not isinstance(p, MemoryToken))
            if pools > self.memory_budget:
                raise DriverError(ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
                                  f"request pools of {pools} bytes exceed the memory budget of {self.memory_budget}")

    def _run(self, request: Request, measure: MeasureTiming, deadline: int | None,
             loop_timeout: int | None) -> ExecutionResult:
        start = time.perf_counter_ns()
        binding = RequestBinding(request, self.memory, self)
        try:
            inputs = binding.read_inputs(self.model.main, self.compiled.dtype_of)
            device_start = time.perf_counter_ns()
            timeout = LOOP_TIMEOUT_DEFAULT_NS if loop_timeout is None else loop_timeout
            results = self.compiled.run(inputs, DeadlineClock(deadline), timeout)
            device_end = time.perf_counter_ns()
            shapes = binding.write_outputs(results)
        except BaseException:
            binding.discard_outputs()
            raise
        if measure != MeasureTiming.YES:
            return ExecutionResult(shapes, NO_TIMING_INFO)
        end = time.perf_counter_ns()
        return ExecutionResult(shapes, Timing((device_end - device_start) // 1000, (end - start) // 1000))

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout: int | None = None) -> ExecutionResult:
        self._validate(request)
        if _deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        return self._run(request, measure, deadline, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        """Validate now (INVALID_ARGUMENT is the launch status), then queue by priority.

        A deadline that has already passed is reported through the future
        (the callback), as the HAL suite requires, never at launch.
        """
        self._validate(request)
        if _deadline_passed(deadline):
            future: Future[ExecutionResult] = Future()
            future.set_exception(DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT,
                                             "deadline passed before execution"))
            return future

        def job() -> ExecutionResult:
            try:
                return self._run(request, measure, deadline, loop_timeout)
            except DriverError:
                raise
            except Exception as error:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"internal error: {error!r}") from error

        return self.scheduler.submit(int(self.priority), job)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        launched = time.perf_counter_ns()
        self._validate(request, allow_unspecified_output=False)
        if _deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        for fence in wait_for:
            if fence is None:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, "null wait fence")
        for fence in wait_for:
            assert fence is not None
            if not fence.wait():
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "a wait fence signalled an error")
        fenced = time.perf_counter_ns()
        if timeout_after_fence is not None:
            limit = time.monotonic_ns() + timeout_after_fence
            deadline = limit if deadline is None else min(deadline, limit)
        result = self._run(request, MeasureTiming.NO, deadline, loop_timeout)
        del result
        if measure == MeasureTiming.YES:
            end = time.perf_counter_ns()
            timing_launched = Timing((end - fenced) // 1000, (end - launched) // 1000)
            timing_fenced = Timing((end - fenced) // 1000, (end - fenced) // 1000)
        else:
            timing_launched = timing_fenced = NO_TIMING_INFO
        return None, _FencedCallback(ErrorStatus.NONE, timing_launched, timing_fenced)

    def configure_execution_burst(self) -> Burst:
        """A burst that keeps each slot's pool, checked once (drivers/reference/burst.py)."""
        return ReferenceBurst(self, self.memory)
