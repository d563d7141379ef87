"""The differential family: answers that must depend on the input values.

Every golden family executes a prepared model on the inputs of one example
(or on the same inputs again), so a driver that re-serves the outputs of an
earlier execution whenever the input shapes repeat, or that is right only
on the inputs it has seen in the specs, passes all of them.  This family
catches both.  One case per model, ``differential/SPEC.MODEL``, on one
prepared model:

1. **Orders.** A model with several examples runs them forward, then in
   reverse, each judged against its own golden with the ``generated``
   family's criteria.
2. **Random inputs.** ``DRAWS`` fresh input sets, more (up to
   ``MAX_DRAWS``) while the oracle answers them all alike (``differential_inputs``:
   reproducible from a stable hash of the case name through
   ``numpy.random.Generator``, in each type's range and the operation's
   domain; inputs that cannot be varied honestly are held) run first on the
   oracle, then on the driver, alternating the synchronous and
   asynchronous paths; every answer is judged like a golden execution
   (status, timing, shapes, values) against the oracle's.

3. **Drawn quantization parameters** (``quant_params``): models made only
   of quantized ADD, SUB and MUL are also run with ``QUANT_DRAWS`` sets of
   drawn scales and zero points (each a model of its own, prepared on
   both sides) and inputs over the type's whole range, against the oracle.

4. **Realistic sizes** (``large``): device-level cases
   ``differential/large/NAME``, operations at real networks' sizes
   (millions of elements, hundreds of channels, batch above 1) with random
   inputs against the oracle, within ``--large-budget`` seconds.

The oracle is ``--oracle DRIVER`` (default ``reference``), any driver spec
``nnvts run`` accepts.  A Python driver is loaded into the harness process
(no IPC per execution; the case time limit covers it); an ``exec:`` driver
runs in a driver host of its own.  The reference is trustworthy as an
oracle only because it is itself verified on external goldens (the
conformance corpus and the hand-computed specs, whose goldens never come
from the reference); an engine such as LiteRT or ONNX Runtime is an oracle
with no extra code.  The oracle's answers are kept per case (a case re-run
after a driver host death does not recompute them).  Whatever goes wrong on
the oracle's side (it refuses or cannot prepare the model, fails an
execution) skips that part of the case with the reason, and an exception
it raises is a harness ERROR: the driver under test is never blamed for
its oracle.

Tolerances: the ``generated`` family's criteria, doubled.  A golden is
exact; an oracle's answer carries its own error, up to the same bound, so
two correct implementations may differ by the sum of the two: ±2 steps for
quantized outputs where the golden check allows ±1 (SOFTMAX, LOGISTIC and
every op whose rounding may go either way on random inputs), twice the
float bounds.  For float outputs the relative part of the bound is also
applied to the largest magnitude in the output tensor: two correct
implementations summing in different orders (a convolution, a reduction)
differ by ulps of the largest partial sums, not of a result that
cancellation made small, and random inputs cancel far more often than
hand-picked ones (with ONNX Runtime as the oracle, conv sums of 2.97 and
36.83 differed by 3e-5 and 1.2e-4 without this term).  Integer and boolean
outputs keep their bounds.

Skipped, with the reason: ``expect_failure`` models (no answer to compare),
RANDOM_MULTINOMIAL (samples: no deterministic answer, the ``generated``
family judges it statistically), models with vendor extension types (the
oracle cannot be assumed to know them), models the oracle refuses, and
models with no input that can be varied honestly (the orders check still
runs when there are several examples).
"""

from __future__ import annotations

import atexit
import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from vts.families._kit.executions import Answer, Executor, execute, prepare_for_case, timing_problems
from vts.families._kit.judge import judge_success, reduced_precision, shape_problems
from vts.families._kit.random_inputs import InputPlan, plan_inputs, random_example, seed_of
from vts.families.base import Case, CaseFailure, Family, HarnessError, Outcome, RunOptions, failed, passed, skipped
from vts.families.differential import large, quant_params
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, MeasureTiming, OperandType, OperationType
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import DriverLost
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, TensorData, build_request, dtype_of, element_count
from vts.model.compare import OutputComparison, compare_output, criteria_for

#: Random input sets per model, all on one prepared model.
DRAWS = 3
#: More sets are drawn (up to this many) while the oracle's outputs are all the same: a re-served
#: old output is only visible once two inputs have different answers.
MAX_DRAWS = 8
#: Oracle answers kept (by case name) for re-runs of the same case.
ORACLE_CACHE_SIZE = 8
_NO_ANSWER = {int(OperationType.RANDOM_MULTINOMIAL)}


class Oracle:
    """The driver whose answers are expected: loaded once per run, on first use."""

    def __init__(self, ref: DriverRef, allow_network: bool = False) -> None:
        self.ref = ref
        self.spec = ref.spec
        #: An oracle program's host may reach the network only when the run allows drivers to (--allow-network).
        self.allow_network = allow_network
        self._device: Device | None = None
        self._host: Any = None
        self._lock = threading.Lock()
        self.answers: OrderedDict[str, list[CaseExample]] = OrderedDict()

    @property
    def device(self) -> Device:
        with self._lock:
            if self._device is None:
                ref = self.ref
                try:
                    if ref.is_exec:
                        from vts.ipc.process import HostProcess

                        self._host = HostProcess(ref, allow_network=self.allow_network)
                        self._device = self._host.start()
                        atexit.register(self._host.stop)  # families have no teardown; the run's end is it
                    else:
                        self._device = ref.load()
                except Exception as error:  # not found, did not start, a factory that raised
                    raise HarnessError(f"cannot load the oracle {self.spec!r}: {error}") from None
            return self._device

    def remember(self, case: str, answers: list[CaseExample]) -> None:
        self.answers[case] = answers
        while len(self.answers) > ORACLE_CACHE_SIZE:
            self.answers.popitem(last=False)


_FLOAT_OUTPUTS = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.FLOAT32, OperandType.FLOAT16)


def _tolerance_doubled(model: CaseModel, operand_type: int, expected: np.ndarray) -> Any:
    """The generated family's criteria for comparing two computed answers (module docstring)."""
    base = criteria_for(operand_type, reduced_precision=reduced_precision(model), tolerance=model.tolerance)
    if base.exact or operand_type in (OperandType.TENSOR_INT32, OperandType.INT32, OperandType.UINT32):
        return base
    atol = base.atol * 2
    if operand_type in _FLOAT_OUTPUTS and expected.size:
        finite = np.abs(expected[np.isfinite(expected)].astype(np.float64))
        atol += base.rtol * 2 * (float(finite.max()) if finite.size else 0.0)
    return dataclasses.replace(base, atol=atol, rtol=base.rtol * 2)


def _compare_with_oracle(model: CaseModel, expected: CaseExample, built: BuiltRequest) -> list[OutputComparison]:
    comparisons = []
    for position, golden in sorted(expected.outputs.items()):
        operand = model.main.operands[model.main.outputs[position]]
        if operand.ignored:
            continue
        count = element_count(golden.dims)
        actual = built.read_output(position, dtype_of(operand.type), count)
        criteria = _tolerance_doubled(model, int(operand.type), golden.value)  # type: ignore[arg-type]
        comparisons.append(compare_output(operand.name, golden.value.reshape(golden.dims or ()),
                                          actual.reshape(golden.dims or ()) if actual.size == count else actual,
                                          criteria))
    return comparisons


def _skip_reason(model: CaseModel) -> str:
    if model.expect_failure:
        return "expect_failure model: no answer to compare"
    if model.operation_types() & _NO_ANSWER:
        return ("RANDOM_MULTINOMIAL draws samples: no deterministic answer (the generated family judges it "
                "statistically)")
    if model.extensions or any(o.is_extension for g in model.subgraphs() for o in g.operands):
        return "vendor extension types: the oracle cannot be assumed to know them"
    return ""


@register_family
class DifferentialFamily(Family):
    name = "differential"
    description = ("several random inputs on one prepared model, compared with an oracle driver (--oracle); "
                   "multi-example models run in two orders")

    def __init__(self) -> None:
        self._oracles: dict[str, Oracle] = {}
        self._large_spent = 0.0

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        yield Case(f"{self.name}/{model.case_name()}", self.name, model, None, spec_path)

    def device_cases(self) -> Iterator[Case]:
        for entry in large.LARGE_MODELS:
            yield Case(f"{self.name}/large/{entry.name}", self.name, config={"large": entry.name})

    def oracle(self, options: RunOptions) -> Oracle:
        ref = DriverRef.of(getattr(options, "oracle", None) or "reference")
        if ref.spec not in self._oracles:
            self._oracles[ref.spec] = Oracle(ref, bool(getattr(options, "allow_network", False)))
        return self._oracles[ref.spec]

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        if "large" in case.config:
            return self._run_large(case, device, options)
        model = case.model
        assert model is not None
        why = _skip_reason(model)
        if why:
            return skipped(why)
        plan = plan_inputs(model)
        if not plan.any_varied and len(model.examples) < 2:
            return skipped("no input can be varied honestly (" + "; ".join(
                f"input {p}: {r}" for p, r in sorted(plan.held.items())) + ") and the model has one example")
        prepared, why = prepare_for_case(device, model, options)
        if prepared is None:
            return skipped(why)
        done: list[str] = []
        if len(model.examples) >= 2:
            problems = self._orders(model, prepared, options)
            if problems:
                return failed(problems[0], tuple(problems))
            done.append(f"{len(model.examples)} examples forward and reverse")
        notes: list[str] = []
        if plan.any_varied:
            answers, why = self._oracle_answers(case, model, plan, options)
            if answers:
                problems = self._against_oracle(model, prepared, answers, options)
                if problems:
                    return failed(problems[0], tuple(problems), oracle=str(options.oracle))
                done.append(f"{len(answers)} random inputs matched the oracle {str(options.oracle)!r}")
                if len(answers) > 1 and not _outputs_differ(answers):
                    notes.append("the oracle gave every random input the same outputs (they do not depend on "
                                 "the varied inputs)")
            else:
                notes.append(why)
        else:
            notes.append("no input can be varied honestly")
        if quant_params.eligible(model):
            problems, note = self._drawn_quant_params(case, model, device, options)
            if problems:
                return failed(problems[0], tuple(problems), oracle=str(options.oracle))
            (done if note.endswith("matched the oracle") else notes).append(note)
        if not done:
            return skipped("; ".join(notes))
        return passed("; ".join(done + notes))

    # -- 1. examples in two orders --------------------------------------------------

    def _orders(self, model: CaseModel, prepared: PreparedModel, options: RunOptions) -> list[str]:
        indexes = list(range(len(model.examples)))
        for order, sequence in (("forward", indexes), ("reverse", indexes[::-1])):
            for step, index in enumerate(sequence):
                example = model.examples[index]
                executor = Executor.SYNC if step % 2 == 0 else Executor.ASYNC
                where = (f"{order} order, example {index} ({example.name or index}), "
                         f"{executor.value} execution")
                problems = self._judged(model, example, prepared, executor, options, where, judge_success)
                if problems:
                    return problems
        return []

    # -- 2. random inputs against the oracle --------------------------------------------

    def _oracle_answers(self, case: Case, model: CaseModel, plan: InputPlan,
                        options: RunOptions) -> tuple[list[CaseExample], str]:
        oracle = self.oracle(options)
        cached = oracle.answers.get(case.name)
        if cached is not None:
            return cached, ""
        try:
            prepared, why = prepare_for_case(oracle.device, model, options)
        except CaseFailure as failure:  # the oracle broke a rule: never the driver's failure
            return [], f"the oracle {oracle.spec!r} could not prepare the model ({failure.reason})"
        if prepared is None:
            return [], f"the oracle {oracle.spec!r} does not support the model ({why})"
        rng = np.random.Generator(np.random.PCG64(seed_of(case.name)))
        answers: list[CaseExample] = []
        refusals = []
        for draw in range(MAX_DRAWS):
            if draw >= DRAWS and (not answers or _outputs_differ(answers)):
                break
            example = random_example(model, plan, rng, f"random{draw}")
            try:
                answer, why = _oracle_run(model, example, prepared, options)
            except CaseFailure as failure:
                answer, why = None, failure.reason
            except HarnessError:
                raise
            except DriverLost as lost:  # an exec: oracle's host died or hung; the driver's is fine
                raise HarnessError(f"the oracle {oracle.spec!r} was lost: {lost.reason}") from None
            except Exception as error:  # an oracle bug is the harness's problem (ERROR), not the driver's
                raise HarnessError(f"the oracle {oracle.spec!r} raised {type(error).__name__}: {error}") from None
            if answer is None:
                refusals.append(f"draw {draw}: {why}")
            else:
                answers.append(answer)
        del prepared
        oracle.remember(case.name, answers)
        return answers, ("the oracle did not answer the random inputs: " + "; ".join(refusals)) if refusals else ""

    # -- 4. realistic sizes ---------------------------------------------------------------

    def _run_large(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        budget = float(getattr(options, "large_budget", 0.0))
        if budget <= self._large_spent:
            return skipped(f"the --large-budget of {budget:g} s is spent ({self._large_spent:.1f} s used)")
        started = time.monotonic()
        try:
            return self._large(case, device, options)
        finally:
            self._large_spent += time.monotonic() - started

    def _large(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        entry = next(e for e in large.LARGE_MODELS if e.name == case.config["large"])
        model = entry.build(np.random.Generator(np.random.PCG64(seed_of(case.name))))
        oracle = self.oracle(options)
        try:
            theirs, why = prepare_for_case(oracle.device, model, options)
            if theirs is None:
                return skipped(f"the oracle {oracle.spec!r} does not support the model ({why})")
            expected, why = _oracle_run(model, model.examples[0], theirs, options)
        except CaseFailure as failure:
            return skipped(f"the oracle {oracle.spec!r} could not run the model ({failure.reason})")
        except HarnessError:
            raise
        except Exception as error:  # an oracle bug is the harness's problem, never the driver's
            raise HarnessError(f"the oracle {oracle.spec!r} raised {type(error).__name__}: {error}") from None
        del theirs
        if expected is None:
            return skipped(f"the oracle {oracle.spec!r} did not answer ({why})")
        prepared, why = prepare_for_case(device, model, options)
        if prepared is None:
            return skipped(why)
        problems = self._judged(model, expected, prepared, Executor.SYNC, options,
                                f"{entry.name} (random inputs)", _judge_against_oracle)
        if problems:
            return failed(problems[0], tuple(problems), oracle=str(options.oracle))
        return passed(f"matched the oracle {str(options.oracle)!r}")

    # -- 3. drawn quantization parameters -------------------------------------------------

    def _drawn_quant_params(self, case: Case, model: CaseModel, device: Device,
                            options: RunOptions) -> tuple[list[str], str]:
        """Each drawn parameter set: its model prepared on the oracle and the driver, answers compared."""
        oracle = self.oracle(options)
        rng = np.random.Generator(np.random.PCG64(seed_of(f"{case.name}/quant_params")))
        compared = 0
        for draw in range(quant_params.QUANT_DRAWS):
            drawn = quant_params.drawn_model(model, rng, draw)
            example = quant_params.full_range_example(drawn, rng, f"quant_params{draw}")
            try:
                theirs, _why = prepare_for_case(oracle.device, drawn, options)
                expected, _why = _oracle_run(drawn, example, theirs, options) if theirs is not None else (None, "")
            except CaseFailure:
                expected = None
            except HarnessError:
                raise
            except Exception as error:  # an oracle bug is the harness's problem, never the driver's
                raise HarnessError(f"the oracle {oracle.spec!r} raised {type(error).__name__}: {error}") from None
            if expected is None:
                continue
            prepared, _why = prepare_for_case(device, drawn, options)
            if prepared is None:
                continue
            where = f"drawn quantization parameters {draw} ({quant_params.describe(drawn)})"
            problems = self._judged(drawn, expected, prepared, Executor.SYNC, options, where, _judge_against_oracle)
            if problems:
                return problems, ""
            compared += 1
        if not compared:
            return [], "no drawn quantization parameter set was prepared by both the oracle and the driver"
        return [], f"{compared} drawn quantization parameter sets matched the oracle"

    def _against_oracle(self, model: CaseModel, prepared: PreparedModel, answers: list[CaseExample],
                        options: RunOptions) -> list[str]:
        for draw, expected in enumerate(answers):
            executor = Executor.SYNC if draw % 2 == 0 else Executor.ASYNC
            where = f"random input {draw}, {executor.value} execution"
            problems = self._judged(model, expected, prepared, executor, options, where, _judge_against_oracle)
            if problems:
                return problems
        return []

    def _judged(self, model: CaseModel, example: CaseExample, prepared: PreparedModel, executor: Executor,
                options: RunOptions, where: str, judge: Any) -> list[str]:
        built = build_request(model, example, options.pool_kind, extensions=options.extensions)
        try:
            answer = execute(prepared, built.request, executor, MeasureTiming.NO, timeout=options.case_timeout)
            return judge(model, example, built, answer, MeasureTiming.NO, where)
        finally:
            built.close()


def _outputs_differ(answers: list[CaseExample]) -> bool:
    """Whether two of the oracle's answers differ in some output (shape or value)."""
    first = answers[0].outputs
    for other in answers[1:]:
        for position, data in first.items():
            theirs = other.outputs.get(position)
            if theirs is None or theirs.dims != data.dims or not np.array_equal(theirs.value, data.value):
                return True
    return False


def _judge_against_oracle(model: CaseModel, expected: CaseExample, built: BuiltRequest, answer: Answer,
                          measure: MeasureTiming, where: str) -> list[str]:
    if not answer.ok:
        return [f"{where} returned {answer.status.name} where the oracle succeeded"
                + (f" ({answer.message})" if answer.message else "")]
    problems = timing_problems(answer, measure) + shape_problems(model, expected, answer)
    if problems:
        return [f"{where}: {p}" for p in problems]
    return [f"{where}: {c.describe()} (expected: the oracle's answer)"
            for c in _compare_with_oracle(model, expected, built) if not c.passed]


def _oracle_run(model: CaseModel, example: CaseExample, prepared: PreparedModel,
                options: RunOptions) -> tuple[CaseExample | None, str]:
    """The oracle's outputs for ``example``; output buffers sized from the first example, grown if it asks."""
    outputs = dict(model.examples[0].outputs)
    for _attempt in range(2):
        sized = CaseExample(example.name, example.inputs, outputs)
        built = build_request(model, sized, options.pool_kind, extensions=options.extensions)
        try:
            try:
                answer = execute(prepared, built.request, Executor.SYNC, timeout=options.case_timeout)
            except DriverError as error:  # execute normalises these; kept for oracles that raise oddly
                answer = Answer(error.status, error.output_shapes)
            if answer.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE and answer.output_shapes:
                outputs = {p: TensorData(tuple(s.dimensions), np.zeros(0)) for p, s in enumerate(answer.output_shapes)}
                continue
            if not answer.ok:
                return None, f"{answer.status.name}" + (f" ({answer.message})" if answer.message else "")
            values = {}
            for position, index in enumerate(model.main.outputs):
                operand = model.main.operands[index]
                if answer.output_shapes:
                    dims = tuple(answer.output_shapes[position].dimensions)
                elif position in sized.outputs:
                    dims = tuple(sized.outputs[position].dims)
                else:
                    dims = tuple(operand.dims)
                count = element_count(dims)
                values[position] = TensorData(dims, built.read_output(position, dtype_of(operand.type), count))
            return CaseExample(example.name, example.inputs, values), ""
        finally:
            built.close()
    return None, "OUTPUT_INSUFFICIENT_SIZE twice"
