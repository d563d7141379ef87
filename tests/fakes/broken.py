"""The reference driver with one deliberate output or status fault.

``FaultyDevice`` delegates every call to the reference device and injects a
fault into the prepared model's answers; each public factory below is a
``module:attr`` a test (or ``nnvts run --driver``) can name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import NUMPY_DTYPE, ErrorStatus, MeasureTiming, OperandType
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.types import ExecutionResult, Model, Request

OutputFault = Callable[[int, np.ndarray], None]  # (operand type, writable view of the output) -> None


class FaultyPreparedModel(PreparedModel):
    def __init__(self, inner: PreparedModel, model: Model, fault: OutputFault | None,
                 execute_error: Callable[[], BaseException] | None) -> None:
        self.inner = inner
        self.model = model
        self.fault = fault
        self.execute_error = execute_error

    def _corrupt(self, request: Request) -> None:
        if self.fault is None:
            return
        main = self.model.main
        for position, argument in enumerate(request.outputs):
            operand = main.operands[main.output_indexes[position]]
            dtype = np.dtype(NUMPY_DTYPE[OperandType(operand.type)])
            pool = request.pools[argument.location.pool_index]
            count = argument.location.length // dtype.itemsize
            writable = np.frombuffer(pool.buffer, dtype=dtype, count=count,  # type: ignore[union-attr]
                                     offset=argument.location.offset)
            self.fault(operand.type, writable)

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        if self.execute_error is not None:
            raise self.execute_error()
        result = self.inner.execute(request, measure, deadline, loop_timeout)
        self._corrupt(request)
        return result

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        future: Future[ExecutionResult] = Future()
        try:
            future.set_result(self.execute(request, measure, deadline, loop_timeout))
        except DriverError as error:
            future.set_exception(error)
        return future

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        if self.execute_error is not None:
            raise self.execute_error()
        answer = self.inner.execute_fenced(request, wait_for, measure, deadline, loop_timeout, timeout_after_fence)
        self._corrupt(request)
        return answer


class FaultyDevice(Device):
    """The reference device whose prepared models carry ``fault``/``execute_error``."""

    def __init__(self, name: str, fault: OutputFault | None = None,
                 execute_error: Callable[[], BaseException] | None = None) -> None:
        self.inner = ReferenceDevice()
        self.name = name
        self.fault = fault
        self.execute_error = execute_error

    @property
    def hal_version(self) -> Any:  # type: ignore[override]
        """The inner reference's: the harness judges the fake by the rules its inner device keeps."""
        return self.inner.hal_version

    def get_type(self) -> Any:
        return self.inner.get_type()

    def get_version_string(self) -> str:
        return self.inner.get_version_string()

    def get_capabilities(self) -> Any:
        return self.inner.get_capabilities()

    def get_supported_operations(self, model: Model) -> list[bool]:
        return self.inner.get_supported_operations(model)

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = self.inner.prepare_model(model, *args, **kwargs)
        return FaultyPreparedModel(prepared, model, self.fault, self.execute_error)


_FLOATS = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


def _float_offset(delta: float) -> OutputFault:
    def fault(operand_type: int, values: np.ndarray) -> None:
        if operand_type in _FLOATS:
            values += np.asarray(delta, dtype=values.dtype)

    return fault


def _quant_offset(delta: int) -> OutputFault:
    def fault(operand_type: int, values: np.ndarray) -> None:
        if operand_type in _QUANT8:
            info = np.iinfo(values.dtype)
            wide = values.astype(np.int32)
            # Move every element by ``delta`` in whichever direction stays in range.
            shifted = np.where(wide + delta <= info.max, wide + delta, wide - delta)
            values[...] = shifted.astype(values.dtype)

    return fault


def float_off_by_1e_4() -> Device:
    """Float outputs 1e-4 too large: ten times the float32 absolute tolerance."""
    return FaultyDevice("broken-float1e4", fault=_float_offset(1e-4))


def quant_off_by_2() -> Device:
    """Quantized 8-bit outputs off by 2 (the HAL allows 1)."""
    return FaultyDevice("broken-quant2", fault=_quant_offset(2))


def wrong_status() -> Device:
    """Every execution fails with GENERAL_FAILURE."""
    return FaultyDevice("broken-status", execute_error=lambda: DriverError(ErrorStatus.GENERAL_FAILURE, "injected"))


def raises_unexpected() -> Device:
    """Every execution raises an exception that is not a DriverError."""
    return FaultyDevice("broken-raises", execute_error=lambda: RuntimeError("injected driver bug"))


def hangs() -> Device:
    """Every execution sleeps for an hour: the case time limit must end it."""
    import time

    def hang() -> BaseException:
        time.sleep(3600)
        return RuntimeError("unreachable")

    return FaultyDevice("broken-hangs", execute_error=hang)


class _LaxDevice(FaultyDevice):
    """Skips model validation: a mutated operand type (or anything else) is accepted."""

    def _lenient(self, error: DriverError) -> bool:
        return error.status == ErrorStatus.INVALID_ARGUMENT

    def get_supported_operations(self, model: Model) -> list[bool]:
        try:
            return self.inner.get_supported_operations(model)
        except DriverError as error:
            if self._lenient(error):
                return [True] * len(model.main.operations)
            raise

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        try:
            return super().prepare_model(model, *args, **kwargs)
        except DriverError as error:
            if self._lenient(error):
                return FaultyPreparedModel(self.inner.prepare_model(_any_valid_model(), *args, **kwargs), model,
                                           None, None)
            raise


def _any_valid_model() -> Model:
    from tests.conftest import hand_add_float
    from vts.model.casemodel import parse_spec, to_hal_model

    return to_hal_model(parse_spec(hand_add_float())[0])


def accepts_bad_operand_type() -> Device:
    """Accepts models whose operand types are invalid for their operations."""
    return _LaxDevice("broken-lax-types")


class _DeadlineBlindPreparedModel(FaultyPreparedModel):
    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        return self.inner.execute(request, measure, None, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        return self.inner.execute_async(request, measure, None, loop_timeout)


class _DeadlineBlindDevice(FaultyDevice):
    prepared_class: type[FaultyPreparedModel] = _DeadlineBlindPreparedModel

    def prepare_model(self, model: Model, preference: Any = 1, priority: Any = 1, deadline: Any = None,
                      *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = self.inner.prepare_model(model, preference, priority, None, *args, **kwargs)
        return self.prepared_class(prepared, model, None, None)


def ignores_deadlines() -> Device:
    """Runs every preparation and execution to the end, whatever the deadline."""
    return _DeadlineBlindDevice("broken-deadlines")


#: How long the fast deadline-blind driver takes for any execution after its first.
FAST_EXECUTION_S = 0.02


class _FastDeadlineBlindPreparedModel(FaultyPreparedModel):
    """Computes the first execution; every later one takes FAST_EXECUTION_S and replays its answer.

    The harness reuses one request (and so its output pool, which still holds
    the first answer's bytes) for the executions of a case: from the second
    on, this behaves like an accelerator that runs the model in 20 ms and
    never looks at the deadline.
    """

    answer: ExecutionResult | None = None
    #: When the latest execution without a deadline started (monotonic ns).
    last_start: int | None = None

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        started = time.monotonic_ns()
        if self.answer is None:
            self.answer = self.inner.execute(request, measure, None, loop_timeout)
        else:
            time.sleep(FAST_EXECUTION_S)
        if deadline is None:
            self.last_start = started
        elif self.last_start is not None:
            # Ignoring the deadline, it ends as late past it as its last run without one lasted from the
            # harness's side (the time from that run's start to this one's): never less than what the
            # harness measured, whatever the machine's load, so the check cannot race the sleep.
            _sleep_until(deadline + started - self.last_start)
        return self.answer

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        future: Future[ExecutionResult] = Future()
        future.set_result(self.execute(request, measure, deadline, loop_timeout))
        return future


def _sleep_until(monotonic_ns: int) -> None:
    while (left := monotonic_ns - time.monotonic_ns()) > 0:
        time.sleep(left / 1e9)


class _FastDeadlineBlindDevice(_DeadlineBlindDevice):
    prepared_class = _FastDeadlineBlindPreparedModel


def ignores_deadlines_fast() -> Device:
    """Ignores deadlines, and is fast: the long chain ends 20 ms after its start, within a fixed 100 ms grace.

    Under a deadline it succeeds as late as its last run without one took, seen from the harness (the
    time since that run started), so how late it is does not depend on the machine's load.
    """
    return _FastDeadlineBlindDevice("broken-deadlines-fast")


class _PriorityClampingDevice(FaultyDevice):
    def prepare_model(self, model: Model, preference: Any = 1, priority: Any = 1, *args: Any,
                      **kwargs: Any) -> PreparedModel:
        return super().prepare_model(model, preference, min(max(int(priority), 0), 2), *args, **kwargs)


def accepts_invalid_priority() -> Device:
    """Clamps an out-of-range priority instead of refusing it."""
    return _PriorityClampingDevice("broken-priority")


class _FifoPreparedModel(FaultyPreparedModel):
    """Asynchronous executions go to one first-come-first-served worker shared by the device."""

    def __init__(self, inner: PreparedModel, model: Model, worker: ThreadPoolExecutor) -> None:
        super().__init__(inner, model, None, None)
        self.worker = worker

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        return self.worker.submit(self.inner.execute, request, measure, deadline, loop_timeout)


class _FifoDevice(FaultyDevice):
    priority_scheduling = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="broken-fifo")

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return _FifoPreparedModel(self.inner.prepare_model(model, *args, **kwargs), model, self.worker)


def schedules_fifo_despite_priority() -> Device:
    """Declares priority scheduling, and runs asynchronous executions in arrival order whatever their priority."""
    return _FifoDevice("broken-fifo")


class _ScribblingPreparedModel(FaultyPreparedModel):
    """Writes zeros over every output pool before validating the request."""

    def _scribble(self, request: Request) -> None:
        for pool in request.pools[1:]:
            pool.buffer[:] = bytes(pool.size)  # type: ignore[union-attr]

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        self._scribble(request)
        return self.inner.execute(request, measure, deadline, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        self._scribble(request)
        return self.inner.execute_async(request, measure, deadline, loop_timeout)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        self._scribble(request)
        return self.inner.execute_fenced(request, wait_for, measure, deadline, loop_timeout, timeout_after_fence)


class _ScribblingDevice(FaultyDevice):
    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return _ScribblingPreparedModel(self.inner.prepare_model(model, *args, **kwargs), model, None, None)


def writes_outputs_on_rejected_request() -> Device:
    """Touches the output pool before refusing an invalid request."""
    return _ScribblingDevice("broken-scribbles")


class _InsufficientSizeRewriter(FaultyPreparedModel):
    """Passes executions through, but answers OUTPUT_INSUFFICIENT_SIZE with ``rewrite(error)`` instead."""

    rewrite: Callable[[DriverError], DriverError]

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        try:
            return self.inner.execute(request, measure, deadline, loop_timeout)
        except DriverError as error:
            if error.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                raise self.rewrite(error) from None
            raise


class _InsufficientSizeRewritingDevice(FaultyDevice):
    def __init__(self, name: str, rewrite: Callable[[DriverError], DriverError]) -> None:
        super().__init__(name)
        self.rewrite = rewrite

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = _InsufficientSizeRewriter(self.inner.prepare_model(model, *args, **kwargs), model, None, None)
        prepared.rewrite = self.rewrite
        return prepared


def rewrites_insufficient_size(name: str, rewrite: Callable[[DriverError], DriverError]) -> Device:
    """The reference, with OUTPUT_INSUFFICIENT_SIZE answered as ``rewrite`` makes it (a broken variant)."""
    return _InsufficientSizeRewritingDevice(name, rewrite)


def insufficient_without_shapes() -> Device:
    """Reports OUTPUT_INSUFFICIENT_SIZE without the output shapes the HAL requires with it."""
    return rewrites_insufficient_size("broken-shapeless", lambda error: DriverError(error.status, "no shapes"))


class _UnsignedOnlyDevice(FaultyDevice):
    """Supports QUANT8_ASYMM but refuses every QUANT8_ASYMM_SIGNED model."""

    def _signed(self, model: Model) -> bool:
        return any(o.type == OperandType.TENSOR_QUANT8_ASYMM_SIGNED for o in model.main.operands)

    def get_supported_operations(self, model: Model) -> list[bool]:
        flags = self.inner.get_supported_operations(model)
        return [False] * len(flags) if self._signed(model) else flags

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        if self._signed(model):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "signed quantization not supported")
        return super().prepare_model(model, *args, **kwargs)


def unsigned_quant_only() -> Device:
    return _UnsignedOnlyDevice("broken-unsigned-only")


def fenced_outputs_off() -> Device:
    """Correct on the sync and async paths, wrong (by 1e-4) only on the fenced path."""

    class _FencedOnly(FaultyPreparedModel):
        def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                    deadline: int | None = None, loop_timeout: int | None = None) -> ExecutionResult:
            return self.inner.execute(request, measure, deadline, loop_timeout)

    class _Device(FaultyDevice):
        def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
            return _FencedOnly(self.inner.prepare_model(model, *args, **kwargs), model, _float_offset(1e-4), None)

    return _Device("broken-fenced")
