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
  _kit.request_variants``: examples of identical sibling models, rolled inputs
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
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from vts.families._kit.concurrent_calls import run_concurrently
from vts.families._kit.executions import prepare_for_case
from vts.families._kit.jobs import (
    close_jobs,
    harness_threads,
    job_task,
    judge_jobs,
    make_jobs,
    run_wave,
    setting,
    settle,
)
from vts.families._kit.request_variants import SiblingExamples, distinct_goldens, request_variants, with_examples
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.interfaces import Device
from vts.ipc.clients import set_concurrency
from vts.model.casemodel import CaseModel
from vts.model.parameters import operation_parameters

DEFAULT_REQUESTS = 8
#: Share of the case's time the concurrent calls may take (the rest is for judging and reporting).
TIME_SHARE = 0.8


def requests_per_wave() -> int:
    return setting("NNVTS_CONCURRENCY_REQUESTS", DEFAULT_REQUESTS)


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
        # Each model named in every request's label, so a failure says which model it was (not just "m2").
        m1, m2 = ("m1", "m2") if partner is model else (f"m1 {model.case_name()}", f"m2 {partner.case_name()}")
        # Wave 1: m1, m2, m1, m2, ... all at once.
        wave = make_jobs([(m1, holder[0], model), (m2, second, partner)], requests, options)
        try:
            problems += judge_jobs(wave, run_wave([job_task(j, budget) for j in wave], threads, budget))
        finally:
            close_jobs(wave)
        del wave
        # Wave 2: m2 executions in flight while m1 is released; then wave 3 on m2 alone.
        later = make_jobs([(m2, second, partner)], requests, options, start=requests)
        try:
            tasks = [job_task(j, budget) for j in later]
            tasks.insert(min(threads, len(tasks)) // 2, _release(holder))
            finished = run_concurrently(tasks, threads, budget)
            released = finished.pop(min(threads, len(later)) // 2)
            settle(finished, budget)
            if released.error is not None:
                problems.append(f"releasing m1 raised {type(released.error).__name__}: {released.error}")
            problems += judge_jobs(later, finished)
            after = make_jobs([(m2, second, partner)], requests, options, start=2 * requests)
            try:
                problems += [f"after m1 was released: {p}" for p in judge_jobs(
                    after, run_wave([job_task(j, budget) for j in after], threads, budget))]
            finally:
                close_jobs(after)
        finally:
            close_jobs(later)
        partner_failed = partner is not model and bool(problems) and f"({m2}," in problems[0]
        return _verdict(problems, 3 * requests, threads, True, partner if partner_failed else None)


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


def _verdict(problems: list[str], requests: int, threads: int, distinct: bool,
             failing: CaseModel | None = None) -> Outcome:
    """``failing``: the partner model, when the first problem is its request's (the result then describes
    its operation, not the case's own model's: ``vts.model.parameters``)."""
    if problems:
        if failing is not None:
            described = operation_parameters(failing)
            if described is not None:
                return failed(problems[0], tuple(problems[:20]), operation=described)
        return failed(problems[0], tuple(problems[:20]))
    note = "" if distinct else "; every request has the same golden (no exact identity gives this model others)"
    return passed(f"{requests} requests on {threads} threads{note}")
