"""Judging a driver's answers to a fuzzed model and its requests.

The rule is narrow on purpose, so that every finding is a real fault: an
invalid input (by ``vts.hal.validation``) must be refused with
INVALID_ARGUMENT; a valid one may succeed (with an answer of the right
type) or fail with any HAL status.  Never acceptable: a non-HAL exception,
a wrong-typed answer, a crash or a hang.  Crashes and hangs are noticed by
whoever makes the calls (``Call``): the engine turns them into findings,
the replay family lets the runner turn them into CRASH / TIMEOUT.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from vts.hal.enums import ErrorStatus, HalVersion
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, spoken_version
from vts.hal.types import ExecutionResult, Model, OutputShape, Request
from vts.hal.validation import ValidationError, validate_model, validate_request

#: ``call(fn, *args)``: make one driver call, raising what it raises (and ``Finding`` for a crash or hang).
Call = Callable[..., Any]

#: Seconds an asynchronous execution may take to complete its future.
ASYNC_RESULT_TIMEOUT = 30.0


class Finding(Exception):
    """The driver answered a fuzzed input in a way no HAL driver may."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class FuzzInput:
    model: Model
    #: (executor "sync" or "async", request) pairs, run against the prepared model in order.
    requests: Sequence[tuple[str, Request]] = ()


@dataclass
class Tally:
    """What was sent and how the driver answered (for the report)."""

    models: int = 0
    invalid_models: int = 0
    prepared: int = 0
    requests: int = 0
    edited_requests: int = 0  # the rest are the base model's valid request, sent to an edited model
    invalid_requests: int = 0
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, other: Tally) -> None:
        self.models += other.models
        self.invalid_models += other.invalid_models
        self.prepared += other.prepared
        self.requests += other.requests
        self.edited_requests += other.edited_requests
        self.invalid_requests += other.invalid_requests
        self.statuses.update(other.statuses)

    def as_dict(self) -> dict[str, Any]:
        return {"models": self.models, "invalid_models": self.invalid_models, "prepared": self.prepared,
                "requests": self.requests, "edited_requests": self.edited_requests,
                "invalid_requests": self.invalid_requests, "statuses": dict(sorted(self.statuses.items()))}


def direct_call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def model_problem(model: Model, version: HalVersion = HalVersion.V1_3) -> str | None:
    """Why ``model`` is invalid for a driver of ``version``, or None."""
    try:
        validate_model(model, version)
    except ValidationError as error:
        return str(error)
    return None


def request_problem(request: Request, model: Model) -> str | None:
    try:
        validate_request(request, model)
    except ValidationError as error:
        return str(error)
    return None


def _guarded(call: Call, what: str, fn: Callable[..., Any], *args: Any) -> tuple[Any, DriverError | None]:
    """(answer, None) or (None, the DriverError); any other exception is a finding."""
    try:
        return call(fn, *args), None
    except DriverError as error:
        return None, error
    except Finding:
        raise
    except Exception as error:
        if _is_driver_lost(error):
            raise
        raise Finding("exception", f"{what} raised {type(error).__name__}: {error}"[:500]) from None


def _is_driver_lost(error: BaseException) -> bool:
    from vts.ipc.errors import DriverLost

    return isinstance(error, DriverLost)


def _refused(error: DriverError | None, invalid: str | None, what: str, tally: Tally) -> bool:
    """Record the answer; True when refused.  An invalid input must be refused with INVALID_ARGUMENT."""
    tally.statuses[f"{what}:{error.status.name if error else 'NONE'}"] += 1
    if invalid is None:
        return error is not None
    if error is None:
        raise Finding("accepted_invalid", f"{what} accepted an invalid input ({invalid})"[:500])
    if error.status != ErrorStatus.INVALID_ARGUMENT:
        raise Finding("wrong_status", f"{what} answered {error.status.name} to an invalid input, "
                      f"expected INVALID_ARGUMENT ({invalid})"[:500])
    return True


def check_input(device: Device, fuzz_input: FuzzInput, call: Call = direct_call,
                tally: Tally | None = None, async_timeout: float = ASYNC_RESULT_TIMEOUT) -> None:
    """Send the input to ``device``; raise ``Finding`` at the first answer no HAL driver may give."""
    tally = tally if tally is not None else Tally()
    prepared = check_model(device, fuzz_input.model, call, tally)
    if prepared is not None:
        check_requests(prepared, fuzz_input.model, fuzz_input.requests, call, tally, async_timeout)


def check_model(device: Device, model: Model, call: Call = direct_call, tally: Tally | None = None) \
        -> PreparedModel | None:
    """Query support for ``model`` and prepare it; the prepared model, or None when it was refused."""
    tally = tally if tally is not None else Tally()
    invalid = model_problem(model, spoken_version(device))
    tally.models += 1
    tally.invalid_models += invalid is not None
    flags, error = _guarded(call, "get_supported_operations", device.get_supported_operations, model)
    if not _refused(error, invalid, "get_supported_operations", tally):
        if not isinstance(flags, list | tuple) or not all(isinstance(f, bool) for f in flags):
            raise Finding("wrong_type", f"get_supported_operations returned {type(flags).__name__}, "
                          "expected a list of bools")
        if len(flags) != len(model.main.operations):
            raise Finding("wrong_type", f"get_supported_operations returned {len(flags)} flags for "
                          f"{len(model.main.operations)} operations")
    prepared, error = _guarded(call, "prepare_model", device.prepare_model, model)
    if _refused(error, invalid, "prepare_model", tally):
        return None
    if not isinstance(prepared, PreparedModel):
        raise Finding("wrong_type", f"prepare_model returned {type(prepared).__name__}, expected a PreparedModel")
    tally.prepared += 1
    return prepared


def check_requests(prepared: PreparedModel, model: Model, requests: Sequence[tuple[str, Request]],
                   call: Call = direct_call, tally: Tally | None = None,
                   async_timeout: float = ASYNC_RESULT_TIMEOUT) -> None:
    """Execute each (executor, request) on ``prepared`` (a model that passed ``check_model``)."""
    tally = tally if tally is not None else Tally()
    for executor, request in requests:
        _check_request(prepared, model, executor, request, call, tally, async_timeout)


def _check_result(result: Any, what: str) -> None:
    if not isinstance(result, ExecutionResult):
        raise Finding("wrong_type", f"{what} returned {type(result).__name__}, expected an ExecutionResult")
    shapes = result.output_shapes
    if not isinstance(shapes, list | tuple) or not all(isinstance(s, OutputShape) for s in shapes):
        raise Finding("wrong_type", f"{what} returned output shapes that are not OutputShapes: {shapes!r}"[:300])


def _check_request(prepared: PreparedModel, model: Model, executor: str, request: Request, call: Call,
                   tally: Tally, async_timeout: float) -> None:
    invalid = request_problem(request, model)
    tally.requests += 1
    tally.invalid_requests += invalid is not None
    if executor == "sync":
        result, error = _guarded(call, "execute", prepared.execute, request)
        if not _refused(error, invalid, "execute", tally):
            _check_result(result, "execute")
        return
    future, error = _guarded(call, "execute_async", prepared.execute_async, request)
    if _refused(error, invalid, "execute_async", tally):
        return
    if not isinstance(future, Future):
        raise Finding("wrong_type", f"execute_async returned {type(future).__name__}, expected a Future")
    result, error = _guarded(call, "execute_async result", _future_result, future, async_timeout)
    tally.statuses[f"execute_async result:{error.status.name if error else 'NONE'}"] += 1
    if error is None:
        _check_result(result, "execute_async")


def _future_result(future: Future[ExecutionResult], timeout: float) -> ExecutionResult:
    import concurrent.futures

    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        raise Finding("hang", f"execute_async: the future did not complete within {timeout:g} s") from None
