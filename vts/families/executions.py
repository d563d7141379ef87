"""Shared mechanics of model-driven families: prepare a model, execute a request.

``create_prepared_model`` is the suite's createPreparedModel (test-catalogue
§2.1): the support query must answer NONE with one flag per operation; a
model that is not fully supported may be refused at preparation (the case is
then skipped), a fully supported one may not.  ``execute`` drives one of the
execution paths and normalises what came back into an ``Answer``, so every
family judges sync, async and fenced executions the same way.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from vts.families.base import CaseFailure, RunOptions
from vts.hal.enums import NO_TIMING, ErrorStatus, MeasureTiming, OperationType, enum_name
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, SyncFence
from vts.hal.types import NO_TIMING_INFO, Model, OutputShape, Request, Timing
from vts.testmodel import ConstantPolicy, TestModel, close_model, to_hal_model


class Executor(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    FENCED = "fenced"


@dataclass(frozen=True, slots=True)
class Answer:
    """What an execution returned, whichever path it took."""

    status: ErrorStatus
    output_shapes: tuple[OutputShape, ...] = ()
    timing: Timing = NO_TIMING_INFO
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == ErrorStatus.NONE


@dataclass(frozen=True, slots=True)
class Preparation:
    prepared: PreparedModel | None
    supported: tuple[bool, ...]
    error: DriverError | None = None

    @property
    def fully_supported(self) -> bool:
        return all(self.supported)


def supported_operations(device: Device, model: Model) -> tuple[bool, ...]:
    """``getSupportedOperations``: must answer NONE with one flag per main operation."""
    try:
        flags = device.get_supported_operations(model)
    except DriverError as error:
        raise CaseFailure(f"get_supported_operations returned {error.status.name} for a valid model",
                          (error.message,)) from None
    flags = tuple(flags)
    wrong = [f for f in flags if not isinstance(f, (bool, np.bool_))]
    if wrong:
        # A flag must be a bool: "yes", 1 or None is no answer to "is this operation supported?".
        raise CaseFailure(f"get_supported_operations returned {type(wrong[0]).__name__} flags; each must be a bool")
    flags = tuple(bool(f) for f in flags)
    if len(flags) != len(model.main.operations):
        raise CaseFailure(f"get_supported_operations returned {len(flags)} flags for "
                          f"{len(model.main.operations)} operations")
    return flags


def unsupported_names(model: Model, flags: Sequence[bool]) -> str:
    names = sorted({enum_name(OperationType, op.type) for op, ok in zip(model.main.operations, flags, strict=True)
                    if not ok})
    return ", ".join(names)


def create_prepared_model(device: Device, model: Model, **kwargs: object) -> Preparation:
    """Prepare ``model`` the way the suite does; refusal of an unsupported model is allowed."""
    flags = supported_operations(device, model)
    try:
        prepared = device.prepare_model(model, **kwargs)  # type: ignore[arg-type]
    except DriverError as error:
        if all(flags):
            raise CaseFailure(f"prepare_model failed with {error.status.name} although every operation "
                              "was reported supported", (error.message,)) from None
        return Preparation(None, flags, error)
    if prepared is None:
        raise CaseFailure("prepare_model returned no prepared model and no error")
    return Preparation(prepared, flags)


def execute(
    prepared: PreparedModel,
    request: Request,
    executor: Executor,
    measure: MeasureTiming = MeasureTiming.NO,
    deadline: int | None = None,
    loop_timeout: int | None = None,
    timeout: float | None = None,
) -> Answer:
    """Run ``request`` through one execution path and normalise the answer.

    An asynchronous launch error and a callback error are both reported as
    the answer's status; families that must tell them apart call
    ``execute_async`` themselves.
    """
    try:
        if executor is Executor.SYNC:
            result = prepared.execute(request, measure, deadline, loop_timeout)
            return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        if executor is Executor.ASYNC:
            future = prepared.execute_async(request, measure, deadline, loop_timeout)
            result = future.result(timeout)
            return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        fence, callback = prepared.execute_fenced(request, [], measure, deadline, loop_timeout, None)
        if fence is not None and not fence.wait(timeout):
            raise CaseFailure("the sync fence of a fenced execution did not signal success")
        if callback is None:
            raise CaseFailure("execute_fenced returned no callback on success")
        status, launched, _fenced = callback.get_execution_info()
        return Answer(ErrorStatus(status), (), launched)
    except DriverError as error:
        return Answer(error.status, error.output_shapes, error.timing or Timing(), error.message)


def timing_problems(answer: Answer, measure: MeasureTiming) -> list[str]:
    """HAL timing rules: nothing unless measured and successful; on-device <= in-driver."""
    timing = answer.timing
    if measure == MeasureTiming.NO or not answer.ok:
        if timing.time_on_device != NO_TIMING or timing.time_in_driver != NO_TIMING:
            why = "timing was not requested" if measure == MeasureTiming.NO else "the execution failed"
            return [f"timing reported although {why}: {timing}"]
        return []
    if (timing.time_on_device != NO_TIMING and timing.time_in_driver != NO_TIMING
            and timing.time_on_device > timing.time_in_driver):
        return [f"time on device {timing.time_on_device} us exceeds time in driver {timing.time_in_driver} us"]
    return []


def null_fence() -> list[SyncFence | None]:
    """A wait list holding the HAL's null handle (a driver must refuse it)."""
    return [None]


class PreparedModelCache:
    """The prepared form of the model a family is working through.

    The cases of one model arrive together, so a one-entry cache saves a
    preparation per case; a refusal (unsupported model) is cached too, with
    the reason the cases are skipped.  The entry belongs to one device
    object: after a crash the runner serves the next case from a restarted
    driver process (a new device), and the old prepared model died with
    the old process.
    """

    def __init__(self) -> None:
        self._key: tuple[str, str] | None = None
        self._device: Device | None = None
        self._entry: tuple[PreparedModel | None, str] = (None, "")

    def get(self, key: tuple[str, str], device: Device, build: Callable[[], Model],
            release: Callable[[Model], None]) -> tuple[PreparedModel | None, str]:
        if self._key != key or self._device is not device:
            model = build()
            try:
                preparation = create_prepared_model(device, model)
                why = "" if preparation.prepared else f"unsupported: {unsupported_names(model, preparation.supported)}"
            finally:
                release(model)
            self._key, self._device, self._entry = key, device, (preparation.prepared, why)
        return self._entry


def prepare_for_case(device: Device, model: TestModel, options: RunOptions, extensions: object = None,
                     **prepare_kwargs: object) -> tuple[PreparedModel | None, str]:
    """Prepare a test model for one case: (prepared model, "") or (None, why the case is skipped).

    The HAL model (and its constant pool) lives only for the preparation;
    the prepared model keeps what it needs.
    """
    hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind),
                             extensions if extensions is not None else options.extensions)
    try:
        preparation = create_prepared_model(device, hal_model, **prepare_kwargs)
    finally:
        close_model(hal_model)
    if preparation.prepared is None:
        return None, f"unsupported: {unsupported_names(hal_model, preparation.supported)}"
    return preparation.prepared, ""
