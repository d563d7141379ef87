"""A request mutation through AIDL v4's calls: a driver of feature level 8 must refuse it on every path.

Android 13's VTS sends each mutated request, after the older calls, through the calls AIDL v4 added
(ValidateRequest.cpp, ``validate`` with ``aidlVersion >= kMinAidlLevelForFL8``): a reusable execution
(``validateReusableExecution``: refused at ``createReusableExecution``, or created and every run refused),
``executeSynchronouslyWithConfig``, ``executeFencedWithConfig`` and a burst's
``executeSynchronouslyWithConfig``, each with INVALID_ARGUMENT.  A driver validates each entry point of its own,
so one that checks the older calls proves nothing about the new ones.

The validation family has a synchronous, an asynchronous and a fenced case per mutation; each AIDL v4 call
goes with one of them, so the cases of a driver below AIDL v4 stay what they were and no call is sent twice
for one mutation:

* ``sync``: the reusable execution as the suite checks it (created once; if created, run synchronously, then
  fenced), ``executeSynchronouslyWithConfig`` and the burst's ``executeSynchronouslyWithConfig``;
* ``fenced``: ``executeFencedWithConfig``;
* ``async``: nothing (AIDL has no asynchronous execution).

The burst names its pools by slots 0, 1, ... (each given with its memory), where the suite uses AIDL's
token -1 (no identity): both are valid memory identifiers of an AIDL burst, so either way the mutation is the
only thing wrong with the call; slots keep that true for a burst that wrongly refuses -1, which is the burst
family's rule to judge, not this one's.  The burst is fresh for the call and dropped after it, its slots with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from vts.families._kit.executions import Executor
from vts.hal.config import ExecutionConfig
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import PreparedModel
from vts.hal.types import Request

#: A call of a path: its name as the suite's trace says it, and the attempt (the error it answered, or None if
#: it accepted the request).
Attempt = tuple[str, Callable[[], DriverError | None]]


class CallFailed(Exception):
    """A call that could not even be made (no burst, no execution and no error): the case fails with this."""


def config_attempts(prepared: PreparedModel, request: Request, executor: Executor,
                    measure: MeasureTiming) -> Iterator[Attempt]:
    """The AIDL v4 calls that go with ``executor``'s case, in the suite's order; nothing for ``async``."""
    config = ExecutionConfig(measure)
    if executor is Executor.ASYNC:
        return
    if executor is Executor.SYNC:
        yield from _reusable(prepared, request, measure)
        yield ("executeSynchronouslyWithConfig",
               lambda: _refusal(lambda: prepared.execute_synchronously_with_config(request, config)))
        yield "burst executeSynchronouslyWithConfig", lambda: _burst(prepared, request, config)
    else:
        yield ("executeFencedWithConfig",
               lambda: _refusal(lambda: prepared.execute_fenced_with_config(request, [], config)))


def _reusable(prepared: PreparedModel, request: Request, measure: MeasureTiming) -> Iterator[Attempt]:
    """``createReusableExecution``, then (only if it accepted the request) a synchronous and a fenced run
    (ValidateRequest.cpp, validateReusableExecution)."""
    created: list[Any] = []

    def create() -> DriverError | None:
        error = _refusal(lambda: created.append(prepared.create_reusable_execution(request, measure)))
        if error is None and created[0] is None:
            raise CallFailed("[createReusableExecution] returned no execution and no error")
        return error

    error = create()
    if error is not None:  # refused at creation: the interface allows it, and then nothing is run
        yield "createReusableExecution", lambda: error
        return
    execution = created[0]
    yield "reusable executeSynchronously", lambda: _refusal(execution.execute)
    yield "reusable executeFenced", lambda: _refusal(lambda: execution.execute_fenced([]))


def _burst(prepared: PreparedModel, request: Request, config: ExecutionConfig) -> DriverError | None:
    try:
        burst = prepared.configure_execution_burst()
    except DriverError as error:
        raise CallFailed(f"[configureExecutionBurst] returned {error.status.name} for a prepared model") from None
    if burst is None:
        raise CallFailed("[configureExecutionBurst] returned no burst and no error")
    slots = list(range(len(request.pools)))
    return _refusal(lambda: burst.execute_with_config(request, slots, config))


def _refusal(call: Callable[[], object]) -> DriverError | None:
    try:
        call()
    except DriverError as error:
        return error
    return None


def refusal_problems(call: str, error: DriverError | None, output_untouched: Callable[[], bool],
                     description: str) -> list[str]:
    """What is wrong with ``call``'s answer to a mutated request: refused with INVALID_ARGUMENT, no output shapes,
    no timing, no byte of the output pool written (as the older calls are judged)."""
    if error is None:
        return [f"[{call}] accepted an invalid request: {description}"]
    problems = []
    if error.status != ErrorStatus.INVALID_ARGUMENT:
        problems.append(f"[{call}] returned {error.status.name}, expected INVALID_ARGUMENT: {description}")
    if error.output_shapes:
        problems.append(f"[{call}] {len(error.output_shapes)} output shapes returned with {error.status.name}")
    if error.timing is not None and error.timing.measured:
        problems.append(f"[{call}] timing reported for a refused execution")
    if not output_untouched():
        problems.append(f"[{call}] the driver wrote into the output pool of a refused request")
    return problems
