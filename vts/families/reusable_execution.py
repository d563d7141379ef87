"""Reusable executions (AIDL v4 ``IExecution``): one request, created once, executed again and again.

IExecution.aidl fixes the request and its settings at ``createReusableExecution``; the client rewrites the
request's input memory between executions and every execution must read it as it is then (a driver may
cache mappings, never contents).  Five cases per model:

* ``sync`` and ``fenced``: created once with timing, executed three times (inputs A, B, A, where the model
  has two examples with different goldens; A twice otherwise) with the input memory rewritten and the
  outputs cleared before each run; every run's outputs, shapes and timing are judged.
* ``invalid_request``: a request without its first input; it must be refused with INVALID_ARGUMENT at
  creation or on every execution (the interface allows either), nothing written.
* ``one_at_a_time``: while a fenced execution waits on a fence the harness holds, a second execution of the
  same object must be refused or wait for the first ("at most one execution at any given time"): one that
  completes before the fence is signalled ran at once.  Then the first must still answer right.  Out of
  process the host is asked to serve two calls at once (``SET_CONCURRENCY``), so it is the driver that
  refuses or serialises the second, not a host serving one call at a time.
* ``prepared_with_config``: the ``sync`` and ``fenced`` runs again on the model prepared through
  ``prepareModelWithConfig`` (Android 13's VTS evaluates every model a second time, so prepared, with its
  reusable executions: GeneratedTestHarness.cpp ``Execute``, ``createPreparedModel(..., useConfig=true)``).

A driver speaking less than AIDL v4 has no reusable executions: its cases are skipped, saying so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from vts.families._kit.executions import Answer, PreparedModelCache, prepare_for_case, timing_problems
from vts.families._kit.fenced_path import fenced_must_refuse
from vts.families._kit.judge import judge_success
from vts.families._kit.request_mutations import RequestMutation, apply_request_mutation
from vts.families._kit.request_variants import SiblingExamples, request_variants, with_examples
from vts.families.base import Case, CaseFailure, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.config import PrepareModelConfig
from vts.hal.enums import ErrorStatus, HalVersion, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, SyncFence, spoken_version
from vts.hal.types import NO_TIMING_INFO, Timing
from vts.ipc.clients import set_concurrency
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, build_request

KINDS = ("sync", "fenced", "invalid_request", "one_at_a_time", "prepared_with_config")
#: The byte written over every output before a run: a run that writes nothing is seen.
SENTINEL = 0xA5
#: Seconds the first execution's call is given to get under way before the second is launched, and the
#: second to show it runs at once while the first waits on its fence.
SETTLE = 0.05
OVERLAP_WINDOW = 0.2
#: Seconds any one execution may take before the case gives up on it.
RUN_TIMEOUT = 30.0


def _run(execution: Any, fenced: bool) -> Answer:
    """One execution of the reusable object, its answer normalised as the families' ``execute`` does."""
    try:
        if not fenced:
            result = execution.execute()
            return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        fence, callback = execution.execute_fenced([])
        if fence is not None and not fence.wait(RUN_TIMEOUT):
            raise CaseFailure("the sync fence of a reusable fenced execution did not signal success")
        if callback is None:
            raise CaseFailure("execute_fenced of a reusable execution returned no callback on success")
        status, launched, _ = callback.get_execution_info()
        return Answer(ErrorStatus(status), (), launched)
    except DriverError as error:
        return Answer(error.status, error.output_shapes, error.timing or Timing(), error.message)


def _create(prepared: PreparedModel, request: Any, measure: MeasureTiming) -> Any:
    """``createReusableExecution``; an execution must come back on success (IPreparedModel.aidl)."""
    execution = prepared.create_reusable_execution(request, measure)
    if execution is None:
        raise CaseFailure("createReusableExecution returned no execution and no error")
    return execution


def _clear(built: BuiltRequest) -> None:
    built.output_pool.write(0, bytes([SENTINEL]) * built.output_pool.size)


def _untouched(built: BuiltRequest) -> bool:
    return built.output_pool.read(0, built.output_pool.size) == bytes([SENTINEL]) * built.output_pool.size


def _rewrite_inputs(target: BuiltRequest, source: BuiltRequest) -> None:
    """The client's part between runs: the next inputs written into the memory the execution was created with."""
    size = source.input_pool.size
    if target.input_pool.size != size:
        raise CaseFailure("harness: two examples of one model lay their inputs out differently")
    target.input_pool.write(0, source.input_pool.read(0, size))


@register_family
class ReusableExecutionFamily(Family):
    name = "reusable_execution"
    description = ("AIDL v4 reusable executions: created once, run again with the inputs rewritten (sync and "
                   "fenced), invalid requests refused, one execution at a time")
    #: Every case of a HIDL or older AIDL driver is a skip: not run unless asked (``--family``).
    default = False
    sees_whole_spec = True  # second inputs may come from sibling models of the spec (as burst's do)

    def __init__(self) -> None:
        self._prepared = PreparedModelCache()
        self._siblings = SiblingExamples()

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure or not model.examples:
            return
        model = with_examples(model, self._siblings.remember(model, spec_path))
        for kind in KINDS:
            yield Case(f"{self.name}/{model.case_name()}.{kind}", self.name, model, None, spec_path, {"kind": kind})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        model = case.model
        assert model is not None
        kind = case.config["kind"]
        rule = "createReusableExecution is AIDL v4's (feature level 8)"
        if kind == "prepared_with_config":
            prepared, why = _prepared_with_config(case, device, options, rule)
        else:
            prepared, why = self._prepared.for_version(case, device, options, HalVersion.FL8, rule)
        if prepared is None:
            return skipped(why)
        if not callable(getattr(prepared, "create_reusable_execution", None)):
            raise CaseFailure("the prepared model of an AIDL v4 driver has no create_reusable_execution")
        runs: dict[str, Callable[[CaseModel, PreparedModel, RunOptions], list[str]]] = {
            "sync": lambda m, p, o: _golden_runs(m, p, o, fenced=False),
            "fenced": lambda m, p, o: _golden_runs(m, p, o, fenced=True),
            "invalid_request": _invalid_request,
            "one_at_a_time": _one_at_a_time,
            "prepared_with_config": _both_paths,
        }
        if kind in ("fenced", "one_at_a_time") and fenced_must_refuse(model, 0):
            return skipped("an output zero-sized or not fully specified: the fenced path must refuse it (the "
                           "fenced family judges that)")
        previous = set_concurrency(device, 2) if kind == "one_at_a_time" else None
        try:
            problems = runs[kind](model, prepared, options)
        finally:
            if previous is not None:
                set_concurrency(device, previous)
        if problems:
            return failed(problems[0], tuple(problems[:20]))
        return passed()


def _prepared_with_config(case: Case, device: Device, options: RunOptions, rule: str
                          ) -> tuple[PreparedModel | None, str]:
    """The case's model prepared through ``prepareModelWithConfig`` (an empty config), for its own case only."""
    speaks = spoken_version(device)
    if speaks < HalVersion.FL8:
        return None, f"{rule}; the driver speaks {speaks.interface}"
    assert case.model is not None
    return prepare_for_case(device, case.model, options, with_config=PrepareModelConfig())


def _both_paths(model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
    """The golden runs, sync then fenced (fenced left out where that path must refuse the model)."""
    problems = _golden_runs(model, prepared, options, fenced=False)
    if problems or fenced_must_refuse(model, 0):
        return [f"prepared through prepareModelWithConfig: {p}" for p in problems]
    return [f"prepared through prepareModelWithConfig: {p}" for p in _golden_runs(model, prepared, options,
                                                                                   fenced=True)]


def _golden_runs(model: CaseModel, prepared: PreparedModel, options: RunOptions, *, fenced: bool) -> list[str]:
    variants = request_variants(model, 2)
    order: list[CaseExample] = [variants[0], variants[-1], variants[0]] if len(variants) > 1 else variants * 2
    sources = [build_request(model, example, options.pool_kind, extensions=options.extensions)
               for example in order]
    target = sources[0]
    try:
        try:
            execution = _create(prepared, target.request, MeasureTiming.YES)
        except DriverError as error:
            return [f"createReusableExecution refused a valid request: {error.status.name} ({error.message})"]
        path = "fenced" if fenced else "sync"
        for run, (example, source) in enumerate(zip(order, sources, strict=True)):
            _rewrite_inputs(target, source)
            _clear(target)
            answer = _run(execution, fenced)
            where = f"reusable {path} execution, run {run + 1} of {len(order)} (inputs rewritten before it)"
            problems = judge_success(model, example, target, answer, MeasureTiming.YES, where)
            if problems:
                return problems
        return []
    finally:
        for built in sources:
            built.close()


def _invalid_request(model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
    built = build_request(model, model.examples[0], options.pool_kind, extensions=options.extensions)
    try:
        request = built.request.copy()
        apply_request_mutation(request, built, RequestMutation("remove_input_0", "remove input 0", "remove_input",
                                                               (0,)))
        try:
            execution = _create(prepared, request, MeasureTiming.YES)
        except DriverError as error:
            if error.status == ErrorStatus.INVALID_ARGUMENT:
                return []
            return [f"createReusableExecution of a request without input 0 returned {error.status.name}, "
                    "expected INVALID_ARGUMENT"]
        problems = []
        for run in (1, 2):
            _clear(built)
            answer = _run(execution, fenced=False)
            where = f"run {run} of a reusable execution of a request without input 0 (accepted at creation)"
            if answer.status != ErrorStatus.INVALID_ARGUMENT:
                problems.append(f"{where} returned {answer.status.name}, expected INVALID_ARGUMENT")
            if answer.timing != NO_TIMING_INFO:
                problems.append(f"{where}: timing returned with an error")
            if not _untouched(built):
                problems.append(f"{where}: the output pool was written")
        return problems
    finally:
        built.close()


def _one_at_a_time(model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
    example = model.examples[0]
    built = build_request(model, example, options.pool_kind, extensions=options.extensions)
    try:
        try:
            execution = _create(prepared, built.request, MeasureTiming.NO)
        except DriverError as error:
            return [f"createReusableExecution refused a valid request: {error.status.name} ({error.message})"]
        _clear(built)
        hold = SyncFence()
        first: dict[str, Any] = {}
        second: dict[str, Any] = {}

        started = threading.Event()

        def launch_first() -> None:
            started.set()
            try:
                fence, callback = execution.execute_fenced([hold])
                first["fence"], first["callback"] = fence, callback
            except DriverError as error:
                first["error"] = error

        def run_second() -> None:
            second["answer"] = _run(execution, fenced=False)
            second["before_signal"] = not hold.signalled

        launcher = threading.Thread(target=launch_first, daemon=True)
        launcher.start()
        started.wait(RUN_TIMEOUT)
        launcher.join(SETTLE)  # a driver may wait for the fence inside the call, or return at once
        runner = threading.Thread(target=run_second, daemon=True)
        runner.start()
        runner.join(OVERLAP_WINDOW)
        # Ran at once: the second answered NONE before the fence the first waits on was signalled, while the
        # first was not refused (a first refused was never in flight).
        overlapped = (not runner.is_alive() and second["answer"].ok and second["before_signal"]
                      and "error" not in first)
        hold.signal()
        launcher.join(RUN_TIMEOUT)
        runner.join(RUN_TIMEOUT)
        if launcher.is_alive() or runner.is_alive():
            return ["an execution of the reusable execution did not end after its wait fence was signalled"]
        if overlapped:
            return ["a second execution of one reusable execution completed while the first waited on its "
                    "fence: IExecution runs at most one execution at a time (refuse it or wait)"]
        if "error" in first:
            return [f"the fenced execution waiting on a fence was refused: {first['error'].status.name}"]
        fence = first["fence"]
        if fence is not None and not fence.wait(RUN_TIMEOUT):
            return ["the first execution's sync fence did not signal success"]
        status, launched, _ = first["callback"].get_execution_info()
        answer = Answer(ErrorStatus(status), (), launched)
        problems = judge_success(model, example, built, answer, MeasureTiming.NO,
                                 "the first execution (a second one launched while it waited)")
        later: Answer = second["answer"]
        if later.ok:  # serialised: it ran after the first, on the same memory and inputs
            problems += judge_success(model, example, built, later, MeasureTiming.NO,
                                      "the second execution (waited for the first)")
        else:
            problems += timing_problems(later, MeasureTiming.NO)
        return problems
    finally:
        built.close()
