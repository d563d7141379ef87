"""Shared mechanics of the memory-domain device tests (VTS MemoryDomainTestBase and friends).

A ``MemoryContext`` carries one test's device, test operand and executor,
and offers the suite's helpers with its acceptance rules spelled out
(VTS MemoryDomainTests.cpp, its MemoryDomainTestBase fixture):

* ``validate_allocate``: an invalid ``allocate`` must answer
  INVALID_ARGUMENT or GENERAL_FAILURE (a driver without memory domains may
  refuse everything with GENERAL_FAILURE), never a buffer;
* ``allocate_buffer``: a valid ``allocate`` answers a buffer and a positive
  token, or GENERAL_FAILURE (unsupported: the test ends early, reported as
  skipped); INVALID_ARGUMENT for a valid request is a failure;
* ``execute``: one execution on the test's path, timing never reported
  (measure NO), no output shapes with an error.

Like VTS's EXPECT_*, a wrong status is recorded and the test goes on, so
one report lists every broken step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout

from vts.families._kit.burst_path import execute_on_fresh_burst
from vts.families._kit.device_memory_runs import BURST
from vts.families._kit.executions import Executor, create_prepared_model, unsupported_names
from vts.families.base import CaseFailure, RunOptions
from vts.hal import memory as hal_memory
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer, Device, PreparedModel
from vts.hal.memory import Memory
from vts.hal.types import (
    BufferDesc,
    BufferRole,
    DataLocation,
    ExecutionResult,
    MemoryToken,
    Request,
    RequestArgument,
    Timing,
)
from vts.model.builtin.memory_models import OperandSpec, add_model, conv_model
from vts.model.casemodel import CaseModel, ConstantPolicy, close_model, to_hal_model

IA = ErrorStatus.INVALID_ARGUMENT
GF = ErrorStatus.GENERAL_FAILURE
NONE = ErrorStatus.NONE


class Unsupported(Exception):
    """The test cannot go on with this driver (model refused, allocate GENERAL_FAILURE): skipped."""


class HarnessPreparedModel(PreparedModel):
    """An ``IPreparedModel`` implemented by the test process, not created by the driver.

    VTS's InvalidPreparedModel: ``allocate`` must not accept it as a role's
    model (the sample driver casts to its own class and fails).
    """

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        raise DriverError(GF, "a harness object cannot execute")


def role(io_index: int, model_index: int = 0, frequency: float = 1.0) -> BufferRole:
    return BufferRole(model_index, io_index, frequency)


def shared_arg(pool_index: int, length: int, dims: Sequence[int] = ()) -> RequestArgument:
    return RequestArgument(False, DataLocation(pool_index, 0, length), list(dims))


def device_arg(pool_index: int, dims: Sequence[int] = ()) -> RequestArgument:
    """A driver-allocated buffer argument: offset 0 and length 0, as the HAL requires for tokens."""
    return RequestArgument(False, DataLocation(pool_index, 0, 0), list(dims))


def token_pool(token: int) -> MemoryToken:
    return MemoryToken(token)


class MemoryContext:
    """One memory-domain test: device, test operand, executor, and the problems found so far."""

    def __init__(self, device: Device, spec: OperandSpec, executor: Executor | str | None,
                 options: RunOptions) -> None:
        self.device = device
        self.spec = spec
        self.executor = executor
        self.options = options
        self.problems: list[str] = []
        self._pools: list[Memory] = []

    def problem(self, text: str) -> None:
        self.problems.append(text)

    # -- models -------------------------------------------------------------

    def prepare(self, model: CaseModel) -> PreparedModel:
        hal_model = to_hal_model(model, ConstantPolicy(mode="as_written", pool_kind=self.options.pool_kind))
        try:
            preparation = create_prepared_model(self.device, hal_model)
        finally:
            close_model(hal_model)
        if preparation.prepared is None:
            raise Unsupported(f"{model.name} model unsupported: {unsupported_names(hal_model, preparation.supported)}")
        return preparation.prepared

    def conv(self, spec: OperandSpec | None = None, copies: int = 1) -> PreparedModel:
        return self.prepare(conv_model(spec or self.spec, copies))

    def add(self, spec: OperandSpec | None = None) -> PreparedModel:
        return self.prepare(add_model(spec or self.spec))

    # -- allocate -----------------------------------------------------------

    def validate_allocate(self, what: str, prepared_models: Sequence[PreparedModel | None],
                          inputs: Sequence[BufferRole] = (), outputs: Sequence[BufferRole] = (),
                          dims: Sequence[int] = ()) -> None:
        """An invalid allocation: INVALID_ARGUMENT or GENERAL_FAILURE, no buffer, no token."""
        try:
            answer = self.device.allocate(BufferDesc(list(dims)), list(prepared_models), list(inputs), list(outputs))
        except DriverError as error:
            if error.status not in (IA, GF):
                self.problem(f"allocate with {what} returned {error.status.name}, expected INVALID_ARGUMENT or "
                             "GENERAL_FAILURE")
            return
        del answer
        self.problem(f"allocate accepted {what}")

    def allocate_buffer(self, prepared: PreparedModel, inputs: Sequence[int] = (), outputs: Sequence[int] = (),
                        dims: Sequence[int] = ()) -> tuple[Buffer, int]:
        """A valid allocation: (buffer, token > 0), or GENERAL_FAILURE meaning memory domains are unsupported."""
        what = f"input roles {list(inputs)}, output roles {list(outputs)}, dimensions {list(dims)}"
        try:
            answer = self.device.allocate(BufferDesc(list(dims)), [prepared], [role(i) for i in inputs],
                                          [role(i) for i in outputs])
        except DriverError as error:
            if error.status == GF:
                raise Unsupported(f"allocate ({what}) answered GENERAL_FAILURE: unsupported by this driver") from None
            raise CaseFailure(f"allocate ({what}) returned {error.status.name}; a valid allocation must succeed or "
                              "answer GENERAL_FAILURE", (error.message,)) from None
        buffer, token = _buffer_and_token(answer, what)
        return buffer, token

    # -- shared memory and copies ------------------------------------------

    def shared(self, size: int) -> Memory:
        pool = hal_memory.allocate(self.options.pool_kind, size)
        self._pools.append(pool)
        return pool

    def copy_from(self, buffer: Buffer, memory: Memory, dims: Sequence[int], expected: ErrorStatus,
                  what: str) -> None:
        self._expect(expected, _status_of(lambda: buffer.copy_from(memory, list(dims))),
                     f"copy_from {what} (dimensions {list(dims)}, {memory.size} bytes)")

    def copy_to(self, buffer: Buffer, memory: Memory, expected: ErrorStatus, what: str) -> None:
        self._expect(expected, _status_of(lambda: buffer.copy_to(memory)), f"copy_to {what} ({memory.size} bytes)")

    def initialize(self, buffer: Buffer) -> None:
        """Fill the buffer with a full-size copy_from of the test operand's dims (must succeed)."""
        full = tuple(d or 1 for d in self.spec.dims)
        self.copy_from(buffer, self.shared(self.spec.size_of(full)), full, NONE, "to initialise the buffer")

    def _expect(self, expected: ErrorStatus, status: ErrorStatus, what: str) -> None:
        if status != expected:
            self.problem(f"{what} returned {status.name}, expected {expected.name}")

    # -- execution ----------------------------------------------------------

    def execute(self, prepared: PreparedModel, request: Request, expected: ErrorStatus, what: str) -> None:
        assert self.executor is not None
        status = self._run(prepared, request)
        path = self.executor.value if isinstance(self.executor, Executor) else self.executor
        self._expect(expected, status, f"{path} execution with {what}")

    def _run(self, prepared: PreparedModel, request: Request) -> ErrorStatus:
        executor = self.executor
        timeout = self.options.case_timeout
        try:
            if executor == BURST:
                return self._run_burst(prepared, request)
            if executor is Executor.SYNC:
                self._no_timing(prepared.execute(request, MeasureTiming.NO).timing, "sync")
            elif executor is Executor.ASYNC:
                future = prepared.execute_async(request, MeasureTiming.NO)
                try:
                    self._no_timing(future.result(timeout).timing, "async")
                except FutureTimeout:
                    raise CaseFailure(f"asynchronous execution did not finish within {timeout} s") from None
            else:
                return self._run_fenced(prepared, request, timeout)
        except DriverError as error:
            if error.output_shapes:
                self.problem(f"{error.status.name} returned with {len(error.output_shapes)} output shapes")
            if error.timing is not None and error.timing.measured:
                self.problem(f"timing reported with {error.status.name}")
            return error.status
        return NONE

    def _run_burst(self, prepared: PreparedModel, request: Request) -> ErrorStatus:
        """AIDL VTS's BURST executor: a fresh burst, shared pools at tokens 0, 1, ..., driver buffers at -1."""
        answer = execute_on_fresh_burst(prepared, request, MeasureTiming.NO)
        if answer.ok:
            self._no_timing(answer.timing, "burst")
            return NONE
        if answer.output_shapes:
            self.problem(f"{answer.status.name} returned with {len(answer.output_shapes)} output shapes")
        if answer.timing.measured:
            self.problem(f"timing reported with {answer.status.name}")
        return answer.status

    def _run_fenced(self, prepared: PreparedModel, request: Request, timeout: float) -> ErrorStatus:
        fence, callback = prepared.execute_fenced(request, [], MeasureTiming.NO)
        if fence is not None and not fence.wait(timeout):
            self.problem("the sync fence of a fenced execution did not signal success")
        if callback is None:
            self.problem("execute_fenced returned no callback with status NONE")
            return NONE
        status, launched, _fenced = callback.get_execution_info()
        self._no_timing(launched, "fenced")
        return ErrorStatus(status)

    def _no_timing(self, timing: Timing, path: str) -> None:
        if timing.measured:
            self.problem(f"{path} execution reported timing although measure was NO: {timing}")

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
        self._pools.clear()


def _status_of(call: Callable[[], None]) -> ErrorStatus:
    try:
        call()
    except DriverError as error:
        return error.status
    return NONE


def _buffer_and_token(answer: object, what: str) -> tuple[Buffer, int]:
    try:
        buffer, token = answer  # type: ignore[misc]
    except (TypeError, ValueError):
        raise CaseFailure(f"allocate ({what}) returned {answer!r}, not (buffer, token)") from None
    if buffer is None:
        raise CaseFailure(f"allocate ({what}) returned NONE without a buffer")
    if not isinstance(token, int) or isinstance(token, bool) or not 0 < token < 1 << 32:
        raise CaseFailure(f"allocate ({what}) returned token {token!r}; it must be a positive uint32")
    return buffer, token
