"""One example of one model, end to end: the skeleton the golden-execution families share.

Six families judged an example the same way, each with its own copy of the
loop: derive the model the case exercises, prepare it (a refusal skips the
case), then for each execution build the request, execute, judge, close
the request, and end the case at the first execution with a problem.  They
differ only in the steps, so the steps are hooks of ``PerExampleFamily``:

* ``case_model``: which model the driver sees (the model itself, or one
  derived from it, e.g. with unknown output dims);
* ``executions``: which executions an example runs (path, timing, and the
  request variant: pool kind, a shrunk output);
* ``execute``: how one execution is driven (``execute`` of the kit, with or
  without a loop timeout, or the suite's chained fenced protocol);
* ``judge``: what makes an answer right (goldens by default).

A family that prepares more than one model (a model and its twin) calls
``run_executions`` itself for each prepared model.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from vts.families._kit.executions import Answer, Executor, execute, prepare_for_case
from vts.families._kit.judge import judge_success
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import Device, PreparedModel
from vts.model.casemodel import BuiltRequest, CaseModel, build_request


@dataclass(frozen=True, slots=True)
class Execution:
    """One execution of an example: its path and timing, the request variant, and its name in messages."""

    executor: Executor
    measure: MeasureTiming = MeasureTiming.NO
    #: A family's own kind of execution (dynamic output shape's "unspecified" or "insufficient"), named first.
    mode: str = ""
    #: Output position whose buffer is one byte short (None: every buffer fits).
    shrink_output: int | None = None
    #: The call by name where a family drives one executor through several calls (``with_config``'s
    #: "burst_with_config" runs synchronously); empty: the executor's own path.
    through: str = ""

    @property
    def where(self) -> str:
        """How messages name this execution: ``[MODE ]PATH execution (timing YES|NO)``."""
        where = f"{self.through or self.executor.value} execution (timing {self.measure.name})"
        return f"{self.mode} {where}" if self.mode else where


@dataclass(frozen=True, slots=True)
class Executed:
    """An execution that ran: the request it sent, the answer, its name in messages and how long it took."""

    execution: Execution
    built: BuiltRequest
    answer: Answer
    where: str
    seconds: float


#: What a judge says of one execution: its problems (none: right), or the outcome that ends the case now.
Judgement = list[str] | Outcome


class PerExampleFamily(Family):
    """A family whose case is one example of one model, prepared once and executed through ``executions``."""

    def covers(self, model: CaseModel) -> bool:
        """Whether the family has cases for ``model`` (``expect_failure`` models never do by default)."""
        return True

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        """``FAMILY/SPEC.MODEL[.EXAMPLE]``: one case per example of every model the family covers."""
        if model.expect_failure or not self.covers(model):
            return
        for index, example in enumerate(model.examples):
            yield Case(f"{self.name}/{model.case_name(example)}", self.name, model, index, spec_path)

    def case_model(self, model: CaseModel) -> CaseModel:
        """The model the driver prepares and the goldens are judged against (the case's own by default)."""
        return model

    def refused(self, model: CaseModel, why: str) -> Outcome:
        """The outcome when the driver did not prepare the model (skipped: the operation is unsupported)."""
        return skipped(why)

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        assert case.model is not None
        model = self.case_model(case.model)
        prepared, why = prepare_for_case(device, model, options)
        if prepared is None:
            return self.refused(model, why)
        return self.run_executions(model, case.example or 0, prepared, options)

    def run_executions(self, model: CaseModel, example_index: int, prepared: PreparedModel,
                       options: RunOptions, label: str = "",
                       executions: Iterable[Execution] | None = None) -> Outcome:
        """Every execution of the example on ``prepared``; the first judged wrong ends the case.

        ``label`` names the prepared model in messages, for a family that runs several;
        ``executions``: a case kind's own list instead of ``executions()``.
        """
        example = model.examples[example_index]
        earlier: list[Executed] = []
        for execution in executions if executions is not None else self.executions(model, example_index):
            built = build_request(model, example, options.pool_kind, shrink_output=execution.shrink_output,
                                  extensions=options.extensions)
            try:
                started = time.monotonic()
                answer = self.execute(prepared, built, execution, options)
                seconds = time.monotonic() - started
                where = f"{label} {execution.where}" if label else execution.where
                executed = Executed(execution, built, answer, where, seconds)
                judgement = self.judge(model, example_index, executed, earlier)
            finally:
                built.close()
            if isinstance(judgement, Outcome):
                return judgement
            if judgement:
                return self.failure(executed, judgement)
            earlier.append(executed)
        return passed()

    def executions(self, model: CaseModel, example_index: int) -> Iterable[Execution]:
        """The executions an example runs, in order: every path (sync, async, fenced), timing off then on."""
        return [Execution(executor, measure) for executor in Executor
                for measure in (MeasureTiming.NO, MeasureTiming.YES)]

    def execute(self, prepared: PreparedModel, built: BuiltRequest, execution: Execution,
                options: RunOptions) -> Answer:
        """Drive one execution and normalise what came back."""
        return execute(prepared, built.request, execution.executor, execution.measure)

    def judge(self, model: CaseModel, example_index: int, executed: Executed,
              earlier: Sequence[Executed]) -> Judgement:
        """The answer's problems against the example's goldens (``earlier``: the executions that passed)."""
        return judge_success(model, model.examples[example_index], executed.built, executed.answer,
                             executed.execution.measure, executed.where)

    def failure(self, executed: Executed, problems: list[str]) -> Outcome:
        """The failed outcome of an execution judged wrong: the first problem is the reason."""
        return failed(problems[0], tuple(problems))
