"""The fuzz loop: seeded Hypothesis chunks of fuzzed models and requests, counted and resumable.

A run is a sequence of chunks; chunk ``i`` runs ``chunk`` Hypothesis
examples from seed ``seed + i``, so a long run can be split, resumed and
added up honestly: each finished chunk is reported (``on_chunk``) with its
seed and counts, and ``--seed`` picks up where a log left off.  One example
is one fuzzed model (0..3 edits to a valid seed model) and, when the driver
prepares it, ``requests_per_model`` fuzzed requests (0..2 edits each) on the
sync or async path.

On the first finding Hypothesis shrinks the input; shrinking is capped at
``shrink_budget`` seconds (a hang costs the full timeout per attempt), after
which the chunk stops and the last failing input seen -- the shrinker only
tries candidates smaller than its best, so that is the smallest -- is the
one reported.  The failing input is saved
(``saved.py``) and the run stops: fix the driver, then resume.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vts.families.fuzz_replay import (
    Edit,
    Finding,
    FuzzCase,
    RequestEdits,
    Tally,
    check_model,
    check_requests,
    edited_model,
    edited_requests,
    edits_text,
    save_failure,
)
from vts.fuzz.seeds import SeedModel


@dataclass
class FuzzConfig:
    examples: int = 1000
    seed: int = 0
    time_budget: float | None = None
    chunk: int = 1000
    requests_per_model: int = 4
    max_model_edits: int = 3
    max_request_edits: int = 2
    shrink_budget: float = 60.0
    save_dir: str | None = None
    #: Recorded in a saved failure (how it was found).
    found_by: dict[str, Any] = field(default_factory=dict)


@dataclass
class FuzzFailure:
    kind: str
    message: str
    case: FuzzCase
    seed: int
    spec_path: str | None = None

    def describe(self) -> list[str]:
        lines = [f"{self.kind}: {self.message}", f"  base model: {self.case.base}",
                 f"  model edits: {edits_text(self.case.model_edits)}"]
        lines += [f"  request {i} ({r.executor}): {edits_text(r.edits)}" for i, r in enumerate(self.case.requests)]
        if self.spec_path:
            lines.append(f"  saved: {self.spec_path}")
        return lines


@dataclass
class ChunkResult:
    seed: int
    examples: int
    tally: Tally
    seconds: float
    failure: FuzzFailure | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "examples": self.examples, **self.tally.as_dict(),
                "seconds": round(self.seconds, 3), "failure": None if self.failure is None else
                {"kind": self.failure.kind, "message": self.failure.message, "spec": self.failure.spec_path}}


@dataclass
class FuzzReport:
    chunks: list[ChunkResult] = field(default_factory=list)
    interrupted: bool = False
    out_of_time: bool = False

    @property
    def tally(self) -> Tally:
        total = Tally()
        for chunk in self.chunks:
            total.add(chunk.tally)
        return total

    @property
    def examples(self) -> int:
        return sum(c.examples for c in self.chunks)

    @property
    def failures(self) -> list[FuzzFailure]:
        return [c.failure for c in self.chunks if c.failure is not None]

    def as_dict(self) -> dict[str, Any]:
        tally = self.tally
        return {"examples": self.examples, **tally.as_dict(),
                "models_and_requests": tally.models + tally.requests,
                "seconds": round(sum(c.seconds for c in self.chunks), 3),
                "interrupted": self.interrupted, "out_of_time": self.out_of_time,
                "seeds": [c.seed for c in self.chunks],
                "failures": [{"kind": f.kind, "message": f.message, "spec": f.spec_path, **f.case.to_json()}
                             for f in self.failures]}


def run_fuzz(target: Any, seeds: Sequence[SeedModel], config: FuzzConfig,
             on_chunk: Callable[[ChunkResult], None] | None = None) -> FuzzReport:
    """Run chunks until ``config.examples`` examples ran, the time budget ends, or a failure is found."""
    if not seeds:
        raise ValueError("no valid seed model to fuzz")
    report = FuzzReport()
    deadline = None if config.time_budget is None else time.monotonic() + config.time_budget
    remaining = config.examples
    chunk_seed = config.seed
    try:
        while remaining > 0:
            if deadline is not None and time.monotonic() >= deadline:
                report.out_of_time = True
                break
            result = run_chunk(target, seeds, config, chunk_seed, min(config.chunk, remaining), deadline)
            report.chunks.append(result)
            if on_chunk is not None:
                on_chunk(result)
            if result.failure is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                report.out_of_time = True
                break
            remaining -= config.chunk
            chunk_seed += 1
    except KeyboardInterrupt:
        report.interrupted = True
    return report


class _Stop(BaseException):
    """Ends a chunk early (time budget, shrink budget); not an Exception, so Hypothesis does not shrink it."""


@dataclass
class _ChunkState:
    examples: int = 0
    first_failure_at: float | None = None
    last: tuple[FuzzCase, Finding] | None = None
    stopped: bool = False  # the time or shrink budget ended the chunk
    first: tuple[FuzzCase, Finding] | None = None


def run_chunk(target: Any, seeds: Sequence[SeedModel], config: FuzzConfig, chunk_seed: int, examples: int,
              deadline: float | None = None) -> ChunkResult:
    """One chunk: ``examples`` Hypothesis examples from ``chunk_seed``, its failure (if any) shrunk and saved."""
    chunk = _Chunk(target, seeds, config, deadline)
    fuzz_one = _hypothesis_test(chunk, chunk_seed, examples)
    started = time.monotonic()
    failure = _run_test(fuzz_one, chunk.state, chunk_seed)
    if failure is not None and config.save_dir:
        _save(failure, seeds, config, chunk_seed)
    return ChunkResult(chunk_seed, chunk.state.examples, chunk.tally, time.monotonic() - started, failure)


@dataclass
class _Chunk:
    """What the examples of one chunk share: the target, the seeds, the budgets, the tally and the state."""

    target: Any
    seeds: Sequence[SeedModel]
    config: FuzzConfig
    deadline: float | None
    tally: Tally = field(default_factory=Tally)
    state: _ChunkState = field(default_factory=_ChunkState)


def _hypothesis_test(chunk: _Chunk, chunk_seed: int, examples: int) -> Callable[[], None]:
    """The chunk as one Hypothesis test: seeded, quiet, no database, generate then shrink.

    Two draws an example: the model's edits, then -- only once the driver prepared the model -- the
    requests', so no request is generated for the (many) models a driver refuses.
    """
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    model_cases, request_lists = _strategies(chunk)

    @hypothesis_seed(chunk_seed)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False, print_blob=False,
              verbosity=Verbosity.quiet,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def fuzz_one(data: Any) -> None:
        index, model_edits = data.draw(model_cases())
        _stop_when_spent(chunk)
        _check_example(chunk, index, model_edits, lambda: data.draw(request_lists(index)))

    return fuzz_one


def _strategies(chunk: _Chunk) -> tuple[Any, Any]:
    """The two draws of an example: (seed index, model edits), then that seed's requests and their edits."""
    from hypothesis import strategies as st

    from vts.fuzz.mutators import ModelLayout, RequestLayout, draw_model_edits, draw_request_edits

    seeds, config = chunk.seeds, chunk.config
    layouts = [(ModelLayout.of(s.model), RequestLayout.of(s.built.request)) for s in seeds]
    pick_seed = st.integers(0, len(seeds) - 1)
    pick_executor = st.sampled_from(("sync", "async"))

    @st.composite
    def model_cases(draw: Any) -> tuple[int, tuple[Edit, ...]]:
        index = draw(pick_seed)
        return index, tuple(draw_model_edits(draw, layouts[index][0], config.max_model_edits))

    @st.composite
    def request_lists(draw: Any, index: int) -> tuple[RequestEdits, ...]:
        # The first request is drawn with 0..max edits (it shrinks to the valid base request), the
        # others with at least one, so a model's requests are not copies of the same valid request.
        layout = layouts[index][1]
        return tuple(RequestEdits(draw(pick_executor), tuple(draw_request_edits(
            draw, layout, config.max_request_edits, min_edits=0 if n == 0 else 1)))
            for n in range(config.requests_per_model))

    return model_cases, request_lists


def _stop_when_spent(chunk: _Chunk) -> None:
    """End the chunk once the shrink budget (after a failure) or the time budget (before one) is spent.

    Both stops end Hypothesis at once (BaseExceptions it does not treat as failures): an example that
    drew less because time ran out would make its data generation inconsistent (Flaky).
    """
    state, now = chunk.state, time.monotonic()
    if state.first_failure_at is not None and now - state.first_failure_at > chunk.config.shrink_budget:
        state.stopped = True
        raise _Stop("shrink budget spent")
    if state.first_failure_at is None and chunk.deadline is not None and now >= chunk.deadline:
        state.stopped = True
        raise _Stop("out of time")


def _check_example(chunk: _Chunk, index: int, model_edits: tuple[Edit, ...],
                   draw_requests: Callable[[], tuple[RequestEdits, ...]]) -> None:
    """Send one example's model and, once prepared, its requests; a Finding is recorded, then raised."""
    seed, config, state, tally = chunk.seeds[index], chunk.config, chunk.state, chunk.tally
    model = edited_model(seed.model, model_edits)
    case = FuzzCase(seed.label, model_edits, ())
    try:
        prepared = check_model(chunk.target.device(), model, chunk.target.call, tally)
        if prepared is not None and config.requests_per_model:
            case = FuzzCase(seed.label, model_edits, draw_requests())
            requests = edited_requests(seed.built.request, case.requests)
            tally.edited_requests += sum(1 for r in case.requests if r.edits)
            check_requests(prepared, model, requests, chunk.target.call, tally, async_timeout=chunk.target.timeout)
    except Finding as finding:
        state.last = (case, finding)
        if state.first is None:
            state.first, state.first_failure_at = (case, finding), time.monotonic()
        raise
    if state.first_failure_at is None:
        state.examples += 1


def _run_test(fuzz_one: Callable[[], None], state: _ChunkState, chunk_seed: int) -> FuzzFailure | None:
    """Run the chunk's test; the failure it found, if any (an error of the harness's own is re-raised)."""
    try:
        fuzz_one()
    except Finding as finding:
        return _failure(state.last, finding, chunk_seed)
    except BaseException as error:
        # A stop may surface as _Stop or, when Hypothesis notices the cut-short example, as its Flaky error.
        if state.stopped:
            # The smallest failing input found within the shrink budget, if any.
            return _failure(state.last, state.last[1], chunk_seed) if state.last is not None else None
        if isinstance(error, Exception) and state.first is not None:
            case, finding = state.first
            return FuzzFailure(finding.kind, f"{finding.message} (did not reproduce on replay: "
                               f"{type(error).__name__})", case, chunk_seed)
        raise
    return None


def _save(failure: FuzzFailure, seeds: Sequence[SeedModel], config: FuzzConfig, chunk_seed: int) -> None:
    """Write the failing input beside a concrete spec of its seed (``fuzz_replay`` re-sends it)."""
    seed = next(s for s in seeds if s.label == failure.case.base)
    found_by = {**config.found_by, "chunk_seed": chunk_seed}
    failure.spec_path = save_failure(config.save_dir, seed, failure.case, failure.kind, failure.message, found_by)


def _failure(last: tuple[FuzzCase, Finding] | None, raised: Finding, chunk_seed: int) -> FuzzFailure:
    case, finding = last if last is not None else (None, raised)
    assert case is not None, "a finding without the input that caused it"
    return FuzzFailure(finding.kind, finding.message, case, chunk_seed)


def progress_line(result: ChunkResult) -> str:
    return json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **result.as_dict()})
