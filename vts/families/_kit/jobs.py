"""Waves of concurrent requests ("jobs"): made, launched together, settled and judged.

In the kit because two families send waves: ``concurrency`` (many requests in
flight on one prepared model and across several) and ``multi_client`` (clients
of one driver instance running requests at once).  Each job has pools of its
own and, where an exact identity allows (``request_variants``), a golden of its
own, so a job answered with another's result is named as such.

The harness's thread count is a setting shared by both families
(``NNVTS_CONCURRENCY_THREADS``, environment, so ``-j`` workers see it too).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import numpy as np

from vts.families._kit.concurrent_calls import Finished, run_concurrently
from vts.families._kit.executions import Answer, Executor, execute
from vts.families._kit.fenced_path import fenced_must_refuse, refusal_problems
from vts.families._kit.judge import judge_success
from vts.families._kit.request_variants import request_variants
from vts.families.base import RunOptions
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import PreparedModel
from vts.hal.types import NO_TIMING_INFO, ExecutionResult
from vts.ipc.errors import DriverLost
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, build_request, dtype_of, element_count

DEFAULT_THREADS = 4
_SENTINEL = 0xA5


def setting(name: str, default: int) -> int:
    """A positive integer family setting from the environment (bad values fall back to the default)."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


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
