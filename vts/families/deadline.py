"""The deadline family: preparation and execution under deadlines (HAL 1.3 DeadlineTest, and more).

Per model, as the suite does (VTS QualityOfServiceTests.cpp): five preparations (LOW and
HIGH priority without a deadline must succeed; an expired or 5 ms deadline
may succeed or report MISSED_DEADLINE_*; an unlimited one must succeed) and
six executions (sync and async × expired, unlimited, 5 ms).  A success must
be a correct result; a miss must come through the right channel: the
asynchronous launch must still answer NONE and report the miss through the
callback.

Except under the 5 ms deadline: whether a driver meets it depends on the
machine's load when the model takes about that long, so the outputs of a
success there are not compared (nor is a success under it executed again).
Were they, a driver that computes a model wrongly would fail the case when
it met the deadline and pass when it missed it: a verdict by timing, an
expected-failures list that never holds (an unexpected pass one run, a new
failure the next), and a wrong output reported as a deadline problem.  Those
cases judge only the rule this family owns, the status and its channel; the
generated family (and this family's other cases) judge the outputs.

The suite cannot tell a driver that honours deadlines from one that ignores
them (a late success is accepted).  nnvts adds device-level cases on a
synthetic model given a deadline far shorter than the time it needs on
this very driver (measured first, without a deadline): a success that
arrives long after the deadline fails, however fast the driver is.

Preparation arguments must not change the answer.  Every successful
preparation above is executed once and judged against the golden with the
model's own (non-relaxed, unless the model says so) bounds, and two more
preparations per model use the other execution preferences, LOW_POWER and
SUSTAINED_SPEED, each with a priority rotated by the model's name (every
family else prepares FAST_SINGLE_ANSWER at MEDIUM): across a corpus every
one of the 3 x 3 pairs is run, and per model every preference and every
priority is.  A driver may trade speed for power with a preference, never
precision (``relaxComputationFloat32toFloat16`` is the only licence to
compute float32 in float16).  Golden inputs are often small integers, exact
in float16, so every preparation with a preference or priority other than
FAST_SINGLE_ANSWER at MEDIUM is also executed on random real-valued inputs
and compared with the FAST_SINGLE_ANSWER preparation of the same model on
the same driver (``_kit/fresh_inputs``), within the model's tolerance.
This family owns the rule because it owns the
preparation arguments besides the model: the suite's DeadlineTest is where
priorities and deadlines are prepared and judged.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from concurrent.futures import Future

from vts.families._kit.executions import (
    Answer,
    Executor,
    PreparedModelCache,
    claim_broken,
    driver_mode_violation,
    prepare_for_case,
    refused_plainly,
    timing_problems,
    unsupported_names,
)
from vts.families._kit.fresh_inputs import differences_on_fresh_inputs
from vts.families._kit.judge import compare_outputs, shape_problems
from vts.families.base import Case, CaseFailure, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, spoken_version
from vts.hal.types import NO_TIMING_INFO, Request
from vts.model.builtin.synthetic import add_chain
from vts.model.casemodel import CaseModel, ConstantPolicy, build_request, close_model, to_hal_model

MISSED = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
SHORT_NS = 5_000_000
#: INT64_MAX nanoseconds: "the largest representable steady-clock time point".
UNLIMITED = 2**63 - 1
#: Below this the honoured check cannot judge: scheduling noise is as long as the whole chain.
MIN_CHAIN_NS = 2_000_000

PREPARE_TESTS = {
    "prepare_priority_low": (Priority.LOW, None),
    "prepare_priority_high": (Priority.HIGH, None),
    "prepare_deadline_now": (Priority.MEDIUM, "now"),
    "prepare_deadline_short": (Priority.MEDIUM, "short"),
    "prepare_deadline_unlimited": (Priority.MEDIUM, "unlimited"),
}
#: The non-default preferences, each prepared once per model with a priority rotated by the model's name.
PREFERENCE_TESTS = {
    "prepare_preference_low_power": ExecutionPreference.LOW_POWER,
    "prepare_preference_sustained_speed": ExecutionPreference.SUSTAINED_SPEED,
}
_PRIORITIES = (Priority.LOW, Priority.MEDIUM, Priority.HIGH)


def rotated_priority(model_name: str, preference: ExecutionPreference) -> Priority:
    """A priority for ``preference`` that a stable hash of the model's name picks (never Python's salted hash)."""
    digest = hashlib.blake2b(model_name.encode(), digest_size=2).digest()
    return _PRIORITIES[(digest[0] + int(preference)) % len(_PRIORITIES)]
EXECUTE_TESTS = {f"execute_{e.value}_{kind}": (e, kind) for e in (Executor.ASYNC, Executor.SYNC)
                 for kind in ("now", "unlimited", "short")}


def deadline_at(kind: str | None) -> int | None:
    now = time.monotonic_ns()
    return {None: None, "now": now, "short": now + SHORT_NS, "unlimited": UNLIMITED}[kind]


def timing_decides(kind: str | None) -> bool:
    """Whether a deadline of ``kind`` is met or missed by the machine's timing, not by the driver's rules.

    An expired deadline is missed and an unlimited one met whatever the load; 5 ms is about as long as
    a small model takes, so a correct driver meets it one run and misses it the next.
    """
    return kind == "short"


def _allowed(kind: str | None) -> tuple[ErrorStatus, ...]:
    return (ErrorStatus.NONE, *MISSED) if kind in ("now", "short") else (ErrorStatus.NONE,)


def execute_with_deadline(prepared: PreparedModel, request: Request, executor: Executor,
                          deadline: int | None) -> Answer:
    """Execute; for async, a launch error is a failure (misses belong in the callback)."""
    try:
        if executor is Executor.SYNC:
            result = prepared.execute(request, MeasureTiming.NO, deadline)
        else:
            try:
                future: Future = prepared.execute_async(request, MeasureTiming.NO, deadline)
            except DriverError as error:
                raise CaseFailure(f"asynchronous launch returned {error.status.name}; the HAL suite requires "
                                  "NONE at launch and the miss through the callback") from None
            result = future.result()
        return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
    except DriverError as error:
        return Answer(error.status, error.output_shapes, error.timing or NO_TIMING_INFO, error.message)


@register_family
class DeadlineFamily(Family):
    name = "deadline"
    description = "preparation and execution with expired, short and unlimited deadlines; priorities"

    def __init__(self) -> None:
        self._prepared = PreparedModelCache()

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure:
            return
        stem = f"{self.name}/{model.case_name()}"
        for test in (*PREPARE_TESTS, *EXECUTE_TESTS):
            yield Case(f"{stem}.{test}", self.name, model, 0, spec_path, {"test": test})
        for test in PREFERENCE_TESTS:
            yield Case(f"{stem}.{test}", self.name, model, 0, spec_path, {"test": test})

    def device_cases(self) -> Iterator[Case]:
        model = add_chain("long_add_chain", length=400, size=1 << 18)
        for executor in (Executor.SYNC, Executor.ASYNC):
            yield Case(f"{self.name}/long_add_chain.honoured_{executor.value}", self.name, model, 0, "",
                       {"test": "honoured", "executor": executor})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        test = case.config["test"]
        if test == "honoured":
            return self._run_honoured(case, device, options)
        if test in PREPARE_TESTS or test in PREFERENCE_TESTS:
            return self._run_prepare(case, device, options)
        return self._run_execute(case, device, options)

    def _run_prepare(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        assert case.model is not None
        test = case.config["test"]
        preference = PREFERENCE_TESTS.get(test, ExecutionPreference.FAST_SINGLE_ANSWER)
        if test in PREFERENCE_TESTS:
            priority, kind = rotated_priority(case.model.name, preference), None
        else:
            priority, kind = PREPARE_TESTS[test]
        arguments = f"preference {preference.name}, priority {priority.name}, deadline {kind or 'none'}"
        hal_model = to_hal_model(case.model, ConstantPolicy(pool_kind=options.pool_kind), options.extensions)
        try:
            flags = device.get_supported_operations(hal_model)
            deadline = deadline_at(kind)
            try:
                prepared = device.prepare_model(hal_model, preference, priority, deadline)
                status = ErrorStatus.NONE
            except DriverError as error:
                if not all(flags):
                    return skipped(f"unsupported: {unsupported_names(hal_model, flags)}")
                status, prepared = error.status, None
                if status not in _allowed(kind) and refused_plainly(device, hal_model):
                    # Not these arguments' fault: the model claimed is refused however it is prepared.
                    return failed(claim_broken(status), (error.message,) if error.message else ())
        except DriverError as error:
            refused = error.status == ErrorStatus.INVALID_ARGUMENT
            rule = driver_mode_violation(hal_model, spoken_version(device)) if refused else None
            if rule is not None:
                return skipped(f"refused as the HAL allows: a model only the NNAPI runtime accepts ({rule})")
            return failed(f"get_supported_operations returned {error.status.name} for a valid model")
        finally:
            close_model(hal_model)
        if status not in _allowed(kind):
            expected = " or ".join(s.name for s in _allowed(kind))
            return failed(f"prepare_model with {arguments} returned {status.name}, expected {expected}")
        if status == ErrorStatus.NONE and prepared is None:
            return failed("prepare_model returned NONE without a prepared model")
        if prepared is not None and timing_decides(kind):
            return passed(f"{status.name} ({arguments}; not executed: whether a {SHORT_NS // 1_000_000} ms "
                          "deadline is met depends on timing, and other cases judge the results)")
        if prepared is not None:
            problems = self._judged_execution(case.model, prepared, options, f"prepared with {arguments}")
            if not problems and (preference != ExecutionPreference.FAST_SINGLE_ANSWER or priority != Priority.MEDIUM):
                baseline, _why = self._prepared.for_case(case.spec_path, case.model, device, options)
                if baseline is not None:
                    problems = differences_on_fresh_inputs(case.model, prepared, baseline, options, case.name,
                                                           f"prepared with {arguments}")
            if problems:
                return failed(problems[0], tuple(problems))
        return passed(f"{status.name} ({arguments})")

    @staticmethod
    def _judged_execution(model: CaseModel, prepared: PreparedModel, options: RunOptions, how: str) -> list[str]:
        """One synchronous execution of the first example, judged with the model's own bounds."""
        example = model.examples[0]
        built = build_request(model, example, options.pool_kind, extensions=options.extensions)
        try:
            answer = execute_with_deadline(prepared, built.request, Executor.SYNC, None)
            if not answer.ok:
                return [f"execution of the model {how} returned {answer.status.name}"
                        + (f" ({answer.message})" if answer.message else "")]
            problems = timing_problems(answer, MeasureTiming.NO) + shape_problems(model, example, answer)
            problems += [c.describe() for c in compare_outputs(model, example, built) if not c.passed]
            return [f"execution of the model {how}: {p}" for p in problems]
        finally:
            built.close()

    def _run_execute(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        assert case.model is not None
        executor, kind = EXECUTE_TESTS[case.config["test"]]
        model = case.model
        prepared, why = self._prepared.for_case(case.spec_path, model, device, options)
        if prepared is None:
            return skipped(why)
        example = case.model.examples[0]
        built = build_request(case.model, example, options.pool_kind, extensions=options.extensions)
        try:
            answer = execute_with_deadline(prepared, built.request, executor, deadline_at(kind))
            if answer.status not in _allowed(kind):
                return failed(f"{executor.value} execution with deadline {kind} returned {answer.status.name}",
                              (answer.message,) if answer.message else ())
            problems = timing_problems(answer, MeasureTiming.NO)
            if answer.ok and not timing_decides(kind):  # met or missed by timing: not judged (module doc)
                problems += shape_problems(case.model, example, answer)
                problems += [c.describe() for c in compare_outputs(case.model, example, built) if not c.passed]
            elif not answer.ok and answer.output_shapes:
                problems.append(f"{answer.status.name} returned with output shapes")
            if problems:
                return failed(problems[0], tuple(problems))
            if answer.ok and timing_decides(kind):
                return passed(f"NONE (outputs not compared: whether a {SHORT_NS // 1_000_000} ms deadline is met "
                              "depends on timing; the generated family judges them)")
            return passed(answer.status.name)
        finally:
            built.close()

    def _run_honoured(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        """Stricter than the suite: a model run under a deadline far shorter than it needs must not succeed late.

        What "far shorter" means is measured on the driver itself: the chain
        runs twice without a deadline first (the faster run is ``needed``),
        then once with a deadline of ``needed / 20`` (at most 5 ms).  A driver
        that ignores the deadline succeeds about ``needed`` after its start,
        so more than ``needed / 4`` late; one that checks it between
        operations stops with MISSED_DEADLINE_* within an operation or so.
        A fixed grace would let a fast driver run the whole chain inside it
        (an accelerator does 400 ADDs in milliseconds), and the check would
        catch nothing.
        """
        assert case.model is not None
        executor: Executor = case.config["executor"]
        prepared, why = prepare_for_case(device, case.model, options)
        if prepared is None:
            return skipped(why)
        built = build_request(case.model, case.model.examples[0], options.pool_kind)
        try:
            needed = self._time_without_deadline(prepared, built.request, executor)
            if needed < MIN_CHAIN_NS:
                return skipped(f"the chain runs in {needed / 1e6:.2f} ms on this driver, too little time to tell "
                               "a driver that honours deadlines from one that ignores them")
            budget = min(SHORT_NS, needed // 20)
            deadline = time.monotonic_ns() + budget
            answer = execute_with_deadline(prepared, built.request, executor, deadline)
            finished = time.monotonic_ns()
        finally:
            built.close()
        late_ms, grace = (finished - deadline) / 1e6, needed // 4
        context = f"the chain needs {needed / 1e6:.1f} ms without a deadline; deadline {budget / 1e6:.1f} ms"
        if answer.status in MISSED:
            return passed(f"{answer.status.name} ({late_ms:.1f} ms after the deadline; {context})", late_ms=late_ms)
        if answer.ok and finished - deadline <= grace:
            return passed(f"succeeded {late_ms:.1f} ms after the deadline, within {grace / 1e6:.1f} ms ({context})",
                          late_ms=late_ms)
        if answer.ok:
            return failed(f"{executor.value} execution succeeded {late_ms:.1f} ms after its deadline ({context}): the "
                          "driver ignores deadlines (a driver that honours them stops with MISSED_DEADLINE_*)",
                          late_ms=late_ms)
        return failed(f"{executor.value} execution with a {budget / 1e6:.1f} ms deadline returned {answer.status.name}")

    @staticmethod
    def _time_without_deadline(prepared: PreparedModel, request: Request, executor: Executor) -> int:
        """The faster of two executions without a deadline, in ns (CaseFailure if either fails)."""
        times = []
        for _ in range(2):
            started = time.monotonic_ns()
            answer = execute_with_deadline(prepared, request, executor, None)
            times.append(time.monotonic_ns() - started)
            if not answer.ok:
                raise CaseFailure(f"{executor.value} execution without a deadline returned {answer.status.name}")
        return min(times)
