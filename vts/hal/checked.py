"""The optional checked base: the HAL preamble every driver owes, written once.

A driver may implement ``Device`` and ``PreparedModel`` from scratch; most
want the same preamble around their own compute, and getting it wrong fails
hundreds of cases that say nothing about the compute.  ``CheckedDevice``
and ``CheckedPreparedModel`` hold it:

* preparation: the model against ValidateHal's driver-mode rules
  (INVALID_ARGUMENT; the NeuralNetworks.h rules ValidateHal leaves to the
  executor, such as a rank-3 CONV_2D input, make an operation unsupported,
  never the model invalid), the execution preference and priority
  (INVALID_ARGUMENT outside the HAL's values), support (a model with an
  unsupported operation is refused with INVALID_ARGUMENT, naming it), a
  deadline already passed (MISSED_DEADLINE_PERSISTENT);
* execution, on every path: the request against the model
  (INVALID_ARGUMENT, at launch for ``execute_async``; fenced execution also
  refuses outputs of unspecified shape), driver-buffer tokens refused when
  the driver has no memory domains (INVALID_ARGUMENT: no such buffer), a
  deadline already passed (MISSED_DEADLINE_PERSISTENT, through the future
  for ``execute_async``), null wait fences (INVALID_ARGUMENT), fences waited
  on, ``timeout_after_fence`` folded into the deadline, and timing measured
  only when asked (time on device within time in driver);
* bursts by the device's version: every prepared model carries the device's
  ``hal_version``, so the base ``Burst`` it configures follows HIDL's slot
  rules or AIDL's token rules (``vts.hal.aidl_burst``) as the device speaks.

The driver supplies ``unsupported_reasons`` and ``prepare_checked`` on the
device, ``run`` on the prepared model.  ``nnvts/drivers/reference``,
``nnvts/drivers/engine`` and ``nnvts/drivers/template`` use it.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from types import TracebackType

from vts.hal.enums import ErrorStatus, ExecutionPreference, HalVersion, MeasureTiming, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import (
    CacheFiles,
    Device,
    FencedExecutionCallback,
    PreparedModel,
    SyncFence,
    completed_callback,
    wait_for_fences,
)
from vts.hal.types import NO_TIMING_INFO, ExecutionResult, MemoryToken, Model, OutputShape, Request, Timing
from vts.hal.validation import ValidationError, validate_model, validate_request


def deadline_passed(deadline: int | None) -> bool:
    """True when an absolute ``time.monotonic_ns()`` deadline is already behind us (None: no deadline)."""
    return deadline is not None and time.monotonic_ns() >= deadline


def check_model(model: Model, hal_version: HalVersion = HalVersion.V1_3) -> None:
    """ValidateHal's driver-mode rules: INVALID_ARGUMENT for a model a driver of ``hal_version`` must refuse."""
    try:
        validate_model(model, hal_version, hal_rules_only=True)
    except ValidationError as error:
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None


def check_preparation_arguments(preference: ExecutionPreference | int, priority: Priority | int) -> Priority:
    """INVALID_ARGUMENT for a preference or priority outside the HAL's values; the priority as an enum."""
    if int(preference) not in ExecutionPreference._value2member_map_:
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"invalid execution preference {int(preference)}")
    if int(priority) not in Priority._value2member_map_:
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"invalid priority {int(priority)}")
    return Priority(int(priority))


class CheckedDevice(Device):
    """A device whose ``get_supported_operations`` and ``prepare_model`` preamble is the HAL's.

    Subclasses implement ``unsupported_reasons`` (one entry per operation of
    the main subgraph: None when supported, else why not) and
    ``prepare_checked`` (compile a valid, fully supported model).
    """

    def check_model(self, model: Model) -> None:
        """INVALID_ARGUMENT for an invalid model of the device's version; override to add checks (call super
        first)."""
        check_model(model, self.hal_version)

    @abc.abstractmethod
    def unsupported_reasons(self, model: Model) -> list[str | None]:
        """For a model already checked: per main-subgraph operation, None or the reason it is unsupported."""

    @abc.abstractmethod
    def prepare_checked(self, model: Model, priority: Priority, deadline: int | None, model_cache: CacheFiles,
                        data_cache: CacheFiles, token: bytes) -> PreparedModel:
        """Compile a model that passed the preamble (valid, supported, deadline not passed)."""

    def get_supported_operations(self, model: Model) -> list[bool]:
        self.check_model(model)
        return [reason is None for reason in self.unsupported_reasons(model)]

    def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
        priority: Priority | int = Priority.MEDIUM,
        deadline: int | None = None,
        model_cache: CacheFiles = (),
        data_cache: CacheFiles = (),
        token: bytes = bytes(32),
    ) -> PreparedModel:
        self.check_model(model)
        checked_priority = check_preparation_arguments(preference, priority)
        reasons = [reason for reason in self.unsupported_reasons(model) if reason is not None]
        if reasons:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"model has unsupported operations: {reasons[0]}")
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation")
        prepared = self.prepare_checked(model, checked_priority, deadline, model_cache, data_cache, token)
        if isinstance(prepared, PreparedModel):  # its bursts follow this version's rules (vts.hal.aidl_burst)
            prepared.hal_version = self.hal_version
        return prepared


class DeviceTimer:
    """Accumulates the time spent inside ``with timer:`` blocks: the HAL's "time on device"."""

    def __init__(self) -> None:
        self.nanoseconds = 0
        self._start = 0

    def __enter__(self) -> DeviceTimer:
        self._start = time.perf_counter_ns()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.nanoseconds += time.perf_counter_ns() - self._start


class CheckedPreparedModel(PreparedModel):
    """A prepared model whose three execution paths share the HAL's checks, deadlines and timing.

    Subclasses set ``self.model`` and implement ``run``; they may override
    ``check_request`` (call super first) and ``submit`` (how an asynchronous
    execution is queued: a thread by default).
    """

    model: Model
    #: True when the device allocates driver buffers (memory domains) and ``run`` resolves their tokens;
    #: otherwise a request naming a token is INVALID_ARGUMENT here (no such buffer exists).
    accepts_tokens: bool = False

    def check_request(self, request: Request, allow_unspecified_output: bool = True) -> None:
        """INVALID_ARGUMENT for a request this model cannot take."""
        try:
            validate_request(request, self.model, allow_unspecified_output=allow_unspecified_output)
        except ValidationError as error:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None
        if not self.accepts_tokens:
            for index, pool in enumerate(request.pools):
                if isinstance(pool, MemoryToken):
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"request pool {index}: unknown token {pool.token} (this device allocates none)")

    @abc.abstractmethod
    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> Sequence[OutputShape]:
        """Read the inputs, compute (inside ``with timer:``), write every output; the output shapes.

        Raise ``DriverError`` for OUTPUT_INSUFFICIENT_SIZE (with one shape per
        output) or a deadline missed during the work (MISSED_DEADLINE_TRANSIENT).
        """

    def submit(self, job: Callable[[], ExecutionResult]) -> Future[ExecutionResult]:
        """Queue one asynchronous execution; a daemon thread by default."""
        future: Future[ExecutionResult] = Future()

        def work() -> None:
            try:
                future.set_result(job())
            except BaseException as error:
                future.set_exception(error)

        threading.Thread(target=work, daemon=True, name="nnvts-checked-async").start()
        return future

    def timed_run(self, request: Request, measure: MeasureTiming, deadline: int | None,
                  loop_timeout: int | None) -> ExecutionResult:
        """``run`` with the timing the HAL asks for: only when measured, on device within in driver."""
        start = time.perf_counter_ns()
        timer = DeviceTimer()
        shapes = tuple(self.run(request, deadline, loop_timeout, timer))
        if measure != MeasureTiming.YES:
            return ExecutionResult(shapes, NO_TIMING_INFO)
        end = time.perf_counter_ns()
        return ExecutionResult(shapes, Timing(timer.nanoseconds // 1000, (end - start) // 1000))

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout: int | None = None) -> ExecutionResult:
        self.check_request(request)
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        return self.timed_run(request, measure, deadline, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        """Validate now (INVALID_ARGUMENT is the launch status); everything else arrives through the future.

        A deadline that has already passed is reported through the future
        (the callback), as the HAL suite requires, never at launch.
        """
        self.check_request(request)
        if deadline_passed(deadline):
            future: Future[ExecutionResult] = Future()
            future.set_exception(DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT,
                                             "deadline passed before execution"))
            return future

        def job() -> ExecutionResult:
            try:
                return self.timed_run(request, measure, deadline, loop_timeout)
            except DriverError:
                raise
            except Exception as error:  # a surprise in the compute is this execution's failure
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"internal error: {error!r}") from error

        return self.submit(job)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """Synchronous under the hood: wait for the fences, run, return no fence (the work is done)."""
        launched = time.perf_counter_ns()
        self.check_request(request, allow_unspecified_output=False)
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        deadline, fenced = wait_for_fences(wait_for, deadline, timeout_after_fence)
        self.timed_run(request, MeasureTiming.NO, deadline, loop_timeout)
        return None, completed_callback(measure, launched, fenced)
