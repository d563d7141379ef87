"""The concurrency family: many requests in flight, on one prepared model and across several.

The NN HAL's execution pattern is not one request at a time (driver guide):
"Multiple requests can be initiated in parallel on the same
IPreparedModel", and a driver "may be asked to keep around more than one
prepared model: prepare m1, prepare m2, run r1 on m1, run r2 on m2, run r3
on m1, run r4 on m2, ... delete m1, delete m2", reclaiming a model's
resources when it is released.  Cases (models not ``expect_failure``):

* ``concurrency/SPEC.MODEL``: ``REQUESTS`` requests on one prepared model
  from ``THREADS`` harness threads at once, on the synchronous,
  asynchronous and fenced paths (fenced only where the outputs are fully
  specified), timing off and on.  Every request has pools of its own and,
  where the corpus or an exact identity allows (``vts.families.
  request_variants``: examples of identical sibling models, rolled inputs
  of elementwise models), inputs of its own, so its golden differs from the
  others'; every answer is judged like a ``generated`` one.
* ``concurrency/interleaved/SPEC.MODEL`` (the first model, then every
  second one): this model (m1) and the model the family saw before it (m2;
  for the first, a second preparation of m1) prepared together;
  requests alternate m1, m2, m1, m2 concurrently; then m1 is released while
  executions on m2 are in flight, and m2's later executions must still be
  right.

Settings (environment, so ``-j`` workers see them too):
``NNVTS_CONCURRENCY_REQUESTS`` (requests per wave, default 8) and
``NNVTS_CONCURRENCY_THREADS`` (harness threads, default 4).  Out of process
the family asks the driver host to serve that many calls at once
(``SET_CONCURRENCY``, docs/protocol.md) and restores the setting after.
"""

from __future__ import annotations

import gc
import os
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import numpy as np

from vts.families._kit.concurrent_calls import Finished, run_concurrently
from vts.families._kit.executions import Answer, Executor, execute, prepare_for_case
from vts.families._kit.judge import judge_success
from vts.families._kit.request_variants import SiblingExamples, distinct_goldens, request_variants, with_examples
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.fenced import fenced_must_refuse, refusal_problems
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.hal.types import NO_TIMING_INFO, ExecutionResult
from vts.ipc.clients import set_concurrency
from vts.ipc.errors import DriverLost
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, build_request, dtype_of, element_count

DEFAULT_REQUESTS = 8
DEFAULT_THREADS = 4
#: Share of the case's time the concurrent calls may take (the rest is for judging and reporting).
TIME_SHARE = 0.8
_SENTINEL = 0xA5


def setting(name: str, default: int) -> int:
    """A positive integer family setting from the environment (bad values fall back to the default)."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def requests_per_wave() -> int:
    return setting("NNVTS_CONCURRENCY_REQUESTS", DEFAULT_REQUESTS)


def harness_threads() -> int:
    return setting("NNVTS_CONCURRENCY_THREADS", DEFAULT_THREADS)


@dataclass
class Job:
    """One request of a concurrent wave, with everything needed to judge it."""

    label: str
    prepared: PreparedModel
    model: CaseModel
    example: CaseExample
    executor: Executor
    measure: MeasureTiming
    built: BuiltRequest


def paths_for(model: CaseModel) -> tuple[Executor, ...]:
    """Every path a model's requests can all succeed on (fenced needs fully specified outputs)."""
    if fenced_must_refuse(model, 0):
        return (Executor.SYNC, Executor.ASYNC)
    return (Executor.SYNC, Executor.ASYNC, Executor.FENCED)


def make_jobs(entries: Sequence[tuple[str, PreparedModel, CaseModel]], count: int, options: RunOptions,
              start: int = 0) -> list[Job]:
    """``count`` jobs cycling over ``entries`` (name, prepared, model), their variants and their paths."""
    variants = {name: request_variants(model, count) for name, _, model in entries}
    jobs = []
    for number in range(start, start + count):
        name, prepared, model = entries[number % len(entries)]
        turn = number // len(entries)
        own = variants[name]
        example = own[turn % len(own)]
        paths = paths_for(model)
        executor = paths[turn % len(paths)]
        measure = MeasureTiming.YES if turn % 2 else MeasureTiming.NO
        built = build_request(model, example, options.pool_kind, extensions=options.extensions)
        built.output_pool.write(0, bytes([_SENTINEL]) * built.output_pool.size)
        label = (f"request {number + 1} ({name}, {executor.value}, timing {measure.name}"
                 f"{', ' + example.name if example.name else ''})")
        jobs.append(Job(label, prepared, model, example, executor, measure, built))
    return jobs


def job_task(job: Job, timeout: float) -> Callable[[], Answer | Future[ExecutionResult]]:
    """The call of one job; an asynchronous one only launches, so every launch of a wave is in flight at once."""
    if job.executor is not Executor.ASYNC:
        return lambda: execute(job.prepared, job.built.request, job.executor, job.measure, timeout=timeout)

    def launch() -> Answer | Future[ExecutionResult]:
        try:
            return job.prepared.execute_async(job.built.request, job.measure)
        except DriverError as error:  # the launch status
            return Answer(error.status, tuple(error.output_shapes), error.timing or NO_TIMING_INFO, error.message)

    return launch


def settle(finished: Sequence[Finished], timeout: float) -> None:
    """Wait (at most ``timeout`` s in all) for the asynchronous executions a wave launched; answers in place."""
    until = time.monotonic() + timeout
    for outcome in finished:
        future = outcome.value
        if outcome.error is not None or isinstance(future, Answer):
            continue
        if not isinstance(future, Future):
            outcome.value = None
            outcome.error = TypeError(f"execute_async returned {type(future).__name__}, not a Future")
            continue
        try:
            result = future.result(max(until - time.monotonic(), 0.0))
            outcome.value = Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        except DriverError as error:
            outcome.value = Answer(error.status, tuple(error.output_shapes), error.timing or NO_TIMING_INFO,
                                   error.message)
        except FutureTimeout:
            outcome.value = None
            outcome.error = TimeoutError(f"the asynchronous execution did not complete within {timeout:g} s")
        except DriverLost:
            raise
        except Exception as error:  # the driver's own exception, through the future
            outcome.value, outcome.error = None, error


def run_wave(tasks: Sequence[Callable[[], Any]], threads: int, budget: float) -> list[Finished]:
    """Run a wave's calls concurrently, then collect its asynchronous completions."""
    finished = run_concurrently(tasks, threads, budget)
    settle(finished, budget)
    return finished


def judge_jobs(jobs: Sequence[Job], finished: Sequence[Finished]) -> list[str]:
    """Problems of every job: its own golden, in its own pools; notes when it holds another's result."""
    problems: list[str] = []
    for job, outcome in zip(jobs, finished, strict=True):
        if outcome.error is not None:
            error = outcome.error
            problems.append(f"{job.label}: driver raised {type(error).__name__}: {error}")
            continue
        answer: Answer = outcome.value
        if job.executor is Executor.FENCED and fenced_must_refuse(job.model, 0):
            found = refusal_problems(answer, job.label)
        else:
            found = judge_success(job.model, job.example, job.built, answer, job.measure, job.label)
        if found:
            problems.extend(found)
            stray = holder_of(job, jobs)
            if stray:
                problems.append(f"{job.label}: its output pool holds the result of {stray}")
    return problems


def holder_of(job: Job, jobs: Sequence[Job]) -> str:
    """The label of another job (of the same model) whose golden this job's output pool holds, if any."""
    for other in jobs:
        if other is job or other.model is not job.model or other.example is job.example:
            continue
        if _holds(job, other.example):
            return other.label
    return ""


def _holds(job: Job, example: CaseExample) -> bool:
    main = job.model.main
    for position, golden in example.outputs.items():
        operand = main.operands[main.outputs[position]]
        if operand.is_extension:
            return False
        count = element_count(golden.dims)
        actual = job.built.read_output(position, dtype_of(operand.type), count)
        if actual.size != count or not np.array_equal(actual.reshape(-1), np.asarray(golden.value).reshape(-1)):
            return False
    return bool(example.outputs)


def close_jobs(jobs: Sequence[Job]) -> None:
    for job in jobs:
        job.built.close()


class _ConcurrencySetting:
    """Out of process, ask the host to serve ``calls`` calls at once for the case; restore after."""

    def __init__(self, device: Device, calls: int) -> None:
        self.device = device
        self.previous = set_concurrency(device, calls)

    def restore(self) -> None:
        if self.previous is not None:
            set_concurrency(self.device, self.previous)


@register_family
class ConcurrencyFamily(Family):
    name = "concurrency"
    sees_whole_spec = True  # sibling examples (and, for concurrency, pairs) come from the spec's earlier models
    description = ("requests in flight together on one prepared model (sync, async, fenced, from several threads) "
                   "and interleaved over two prepared models, one released mid-flight")

    def __init__(self) -> None:
        self._spec = ""
        self._previous: CaseModel | None = None
        self._seen = 0
        self._siblings = SiblingExamples()

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure:
            return
        if spec_path != self._spec:  # pairs are made within a spec file (Family.sees_whole_spec)
            self._spec, self._previous, self._seen = spec_path, None, 0
        model = with_examples(model, self._siblings.remember(model, spec_path))
        settings = {"requests": requests_per_wave(), "threads": harness_threads()}
        yield Case(f"{self.name}/{model.case_name()}", self.name, model, None, spec_path,
                   {"kind": "in_flight", **settings})
        self._seen += 1
        # The models of a spec file pair up (3 with 2, 5 with 4, ...), so a sweep interleaves each model
        # once; a file's first model interleaves with a second preparation of itself, so a spec of one
        # model has the case too.
        partner = model if self._seen == 1 else self._previous if self._seen % 2 == 1 else None
        self._previous = model
        if partner is not None:
            yield Case(f"{self.name}/interleaved/{model.case_name()}", self.name, model, None, spec_path,
                       {"kind": "interleaved", "partner": partner, **settings})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        model = case.model
        assert model is not None
        requests, threads = int(case.config["requests"]), int(case.config["threads"])
        setting_ = _ConcurrencySetting(device, threads + 1)
        try:
            if case.config["kind"] == "in_flight":
                return self._in_flight(model, device, options, requests, threads)
            return self._interleaved(model, case.config["partner"], device, options, requests, threads)
        finally:
            setting_.restore()

    def _in_flight(self, model: CaseModel, device: Device, options: RunOptions, requests: int,
                   threads: int) -> Outcome:
        prepared, why = prepare_for_case(device, model, options)
        if prepared is None:
            return skipped(why)
        jobs = make_jobs([("m1", prepared, model)], requests, options)
        try:
            budget = options.case_timeout * TIME_SHARE
            finished = run_wave([job_task(job, budget) for job in jobs], threads, budget)
            problems = judge_jobs(jobs, finished)
        finally:
            close_jobs(jobs)
        return _verdict(problems, requests, threads, distinct_goldens(request_variants(model, requests)))

    def _interleaved(self, model: CaseModel, partner: CaseModel, device: Device, options: RunOptions,
                     requests: int, threads: int) -> Outcome:
        holder: list[Any] = [prepare_for_case(device, model, options)]
        if holder[0][0] is None:
            return skipped(holder[0][1])
        holder[0] = holder[0][0]  # only this list refers to m1: clearing it releases m1
        second, _ = prepare_for_case(device, partner, options)
        if second is None:  # the partner is unsupported: interleave two preparations of this model
            partner = model
            second, why = prepare_for_case(device, model, options)
            if second is None:
                return skipped(why)
        budget = options.case_timeout * TIME_SHARE / 3
        problems: list[str] = []
        # Wave 1: m1, m2, m1, m2, ... all at once.
        wave = make_jobs([("m1", holder[0], model), ("m2", second, partner)], requests, options)
        try:
            problems += judge_jobs(wave, run_wave([job_task(j, budget) for j in wave], threads, budget))
        finally:
            close_jobs(wave)
        del wave
        # Wave 2: m2 executions in flight while m1 is released; then wave 3 on m2 alone.
        later = make_jobs([("m2", second, partner)], requests, options, start=requests)
        try:
            tasks = [job_task(j, budget) for j in later]
            tasks.insert(min(threads, len(tasks)) // 2, _release(holder))
            finished = run_concurrently(tasks, threads, budget)
            released = finished.pop(min(threads, len(later)) // 2)
            settle(finished, budget)
            if released.error is not None:
                problems.append(f"releasing m1 raised {type(released.error).__name__}: {released.error}")
            problems += judge_jobs(later, finished)
            after = make_jobs([("m2", second, partner)], requests, options, start=2 * requests)
            try:
                problems += [f"after m1 was released: {p}" for p in judge_jobs(
                    after, run_wave([job_task(j, budget) for j in after], threads, budget))]
            finally:
                close_jobs(after)
        finally:
            close_jobs(later)
        return _verdict(problems, 3 * requests, threads, True)


def _release(holder: list[Any]) -> Callable[[], None]:
    """Drop the harness's last reference to m1 (the HAL's release); out of process it rides on the next call.

    Reference counting frees m1 the moment ``holder`` lets go of it; a full ``gc.collect`` is needed only
    when m1 is still alive after that (a prepared model caught in a reference cycle).  It used to run every
    time, and a full collection of a long run's heap cost 40-100 ms: a third of the family's time over the
    corpus, for a release that had already happened.  The weak reference tells the two apart, so m1 is
    released at the same point of the wave either way.
    """

    def release() -> None:
        alive = _weak(holder[0]) if holder else None
        holder.clear()
        if alive is None or alive() is not None:
            gc.collect()

    return release


def _weak(obj: Any) -> Callable[[], Any] | None:
    """A weak reference to ``obj``, or None when its type takes none (then the release collects)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def _verdict(problems: list[str], requests: int, threads: int, distinct: bool) -> Outcome:
    if problems:
        return failed(problems[0], tuple(problems[:20]))
    note = "" if distinct else "; every request has the same golden (no exact identity gives this model others)"
    return passed(f"{requests} requests on {threads} threads{note}")
