"""What a soak repeats: golden executions of long-lived prepared models, or whole cases of any family.

``GoldenWorkload`` is the default and the realistic one: an application
prepares a model once and executes it again and again.  It prepares the
case's model once, then every ``step`` executes the example on the
synchronous path with the output pool cleared first; the first answer is
judged against the golden (as the generated family does) and every later
answer must equal the first byte for byte (status, shapes, output bytes),
so a driver that goes wrong after a while, or stops writing its outputs, is
caught.  ``CaseWorkload`` repeats one case of another family through the
runner and requires the same verdict and reason each time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from vts.families import Executor, execute, judge_success, prepare_for_case
from vts.families.base import Case, Family, RunOptions
from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import Device
from vts.model.casemodel import BuiltRequest, build_request

#: Problems kept per workload (a driver that is wrong every time would fill the report).
MAX_PROBLEMS = 5


@dataclass
class StepResult:
    latency: float  # seconds
    problem: str | None = None


@dataclass
class GoldenWorkload:
    case: Case
    options: RunOptions
    prepared: Any = None
    built: BuiltRequest | None = None
    executions: int = 0
    first_latencies: list[float] = field(default_factory=list)  # the first few, for the first-execution ratio
    problems: list[str] = field(default_factory=list)
    skipped: str = ""
    _first: tuple[Any, ...] | None = None

    @property
    def name(self) -> str:
        return self.case.name

    def prepare(self, device: Device) -> bool:
        """Prepare the model once; False (with ``skipped`` set) when the driver does not support it."""
        model = self.case.model
        assert model is not None and self.case.example is not None
        prepared, why = prepare_for_case(device, model, self.options)
        if prepared is None:
            self.skipped = why
            return False
        self.prepared = prepared
        self.built = build_request(model, model.examples[self.case.example], self.options.pool_kind,
                                   extensions=self.options.extensions)
        return True

    def step(self, keep_first: int) -> StepResult:
        model, built = self.case.model, self.built
        assert model is not None and built is not None and self.case.example is not None
        pool = built.output_pool
        pool.write(0, bytes(pool.size))
        started = time.perf_counter()
        answer = execute(self.prepared, built.request, Executor.SYNC, MeasureTiming.NO)
        latency = time.perf_counter() - started
        self.executions += 1
        if len(self.first_latencies) < keep_first:
            self.first_latencies.append(latency)
        snapshot = (answer.status, tuple(answer.output_shapes), pool.read(0, pool.size))
        problem = None
        if self._first is None:
            self._first = snapshot
            problems = judge_success(model, model.examples[self.case.example], built, answer, MeasureTiming.NO,
                                     "first execution")
            problem = problems[0] if problems else None
        elif snapshot != self._first:
            problem = f"execution {self.executions} differs from the first: {_difference(self._first, snapshot)}"
        if problem is not None and len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        return StepResult(latency, problem)

    def close(self) -> None:
        self.prepared = None
        if self.built is not None:
            self.built.close()
            self.built = None


def _difference(first: tuple[Any, ...], now: tuple[Any, ...]) -> str:
    if first[0] != now[0]:
        return f"status {now[0].name}, first {first[0].name}"
    if first[1] != now[1]:
        return f"output shapes {now[1]}, first {first[1]}"
    changed = [i for i, (a, b) in enumerate(zip(first[2], now[2], strict=True)) if a != b]
    return f"{len(changed)} output bytes differ (first at byte {changed[0]})" if changed else "outputs differ"


@dataclass
class CaseWorkload:
    family: Family
    case: Case
    runner: Any
    executions: int = 0
    first_latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: str = ""
    _first: tuple[str, str] | None = None

    @property
    def name(self) -> str:
        return self.case.name

    def prepare(self, device: Device) -> bool:
        return True

    def step(self, keep_first: int) -> StepResult:
        result = self.runner.run_case(self.family, self.case)
        self.executions += 1
        outcome = (result.verdict.value, result.reason)
        problem = None
        if self._first is None:
            self._first = outcome
            if result.verdict.is_failure:
                problem = f"first run {result.verdict.value}: {result.reason}"
        elif outcome != self._first:
            problem = (f"run {self.executions} ended {outcome[0]} ({outcome[1]}), the first ended "
                       f"{self._first[0]} ({self._first[1]})")
        if problem is not None and len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        return StepResult(result.duration, problem)

    def close(self) -> None:
        pass
