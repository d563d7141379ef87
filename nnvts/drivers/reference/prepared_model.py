"""The reference driver's prepared model: request decoding, execution paths, timing.

Behaviour follows Android's sample driver (SampleDriver.cpp): validate
the request first (INVALID_ARGUMENT), refuse an already-passed deadline
(MISSED_DEADLINE_PERSISTENT), map the pools (shared memory and
driver-allocated buffers named by token: ``nnvts.drivers.reference.request_pools``),
run, and report output shapes on success and on OUTPUT_INSUFFICIENT_SIZE
only, timing only when measured and successful.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from nnvts.drivers.reference.burst import ReferenceBurst
from nnvts.drivers.reference.executor import CompiledModel, DeadlineClock
from nnvts.drivers.reference.memory_domain import DeviceMemory
from nnvts.drivers.reference.request_pools import RequestBinding
from nnvts.drivers.reference.scheduler import PriorityScheduler
from vts.hal.checked import CheckedPreparedModel, DeviceTimer
from vts.hal.enums import LOOP_TIMEOUT_DEFAULT_NS, ErrorStatus, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst
from vts.hal.types import ExecutionResult, MemoryToken, Model, OutputShape, Request


class ReferencePreparedModel(CheckedPreparedModel):
    """A prepared model of one reference device.

    ``memory`` is the device's ``DeviceMemory``: the pool kinds it maps
    (a model pool of another kind is refused here, at preparation, with
    GENERAL_FAILURE) and its driver-allocated buffers, which requests name by
    token.  A prepared model registers itself there so ``allocate`` accepts
    it as one of the device's own.  The HAL preamble of the three execution
    paths (validation, deadlines, fences, timing) is ``vts.hal.checked``'s.
    """

    #: Requests may name the device's driver-allocated buffers (``request_pools`` resolves them).
    accepts_tokens = True

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

    def check_request(self, request: Request, allow_unspecified_output: bool = True) -> None:
        """The HAL rules, then the memory budget (RESOURCE_EXHAUSTED_TRANSIENT)."""
        super().check_request(request, allow_unspecified_output)
        if self.memory_budget is not None:
            pools = sum(p.size for p in request.pools if not isinstance(p, MemoryToken))
            if pools > self.memory_budget:
                raise DriverError(ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
                                  f"request pools of {pools} bytes exceed the memory budget of {self.memory_budget}")

    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> tuple[OutputShape, ...]:
        binding = RequestBinding(request, self.memory, self)
        try:
            inputs = binding.read_inputs(self.model.main, self.compiled.dtype_of)
            timeout = LOOP_TIMEOUT_DEFAULT_NS if loop_timeout is None else loop_timeout
            with timer:
                results = self.compiled.run(inputs, DeadlineClock(deadline), timeout)
            return binding.write_outputs(results)
        except BaseException:
            binding.discard_outputs()
            raise

    def submit(self, job: Callable[[], ExecutionResult]) -> Future[ExecutionResult]:
        """Asynchronous executions are queued by priority (the priority family measures it)."""
        return self.scheduler.submit(int(self.priority), job)

    def configure_execution_burst(self) -> Burst:
        """A burst that keeps each slot's pool, checked once (nnvts/drivers/reference/burst.py)."""
        return ReferenceBurst(self, self.memory)
