"""Judging a successful execution: output shapes, then values against the goldens.

Shapes are checked before values (VTS GeneratedTestHarness.cpp EvaluatePreparedModel): an answer must carry
no shapes or exactly one per output, each sufficient and equal to the
expected dims.  Values use the criteria of ``vts.model.compare``; RANDOM_MULTINOMIAL
models are judged statistically (TestHarness.cpp ``checkResults``) instead of element by element.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vts.families._kit.executions import Answer, timing_problems
from vts.families.base import Outcome
from vts.hal.enums import MeasureTiming, OperandType, OperationType
from vts.model.casemodel import BuiltRequest, CaseExample, CaseModel, dtype_of, element_count
from vts.model.compare import OutputComparison, compare_output, criteria_for
from vts.results import Verdict


def shape_problems(model: CaseModel, example: CaseExample, answer: Answer) -> list[str]:
    shapes = answer.output_shapes
    outputs = model.main.outputs
    if not shapes:
        return []
    if len(shapes) != len(outputs):
        return [f"{len(shapes)} output shapes returned for {len(outputs)} outputs"]
    problems = []
    for position, shape in enumerate(shapes):
        name = model.main.operands[outputs[position]].name
        golden = example.outputs.get(position)
        if not shape.is_sufficient:
            problems.append(f"output {name}: reported insufficient on success")
        if golden is not None and tuple(shape.dimensions) != tuple(golden.dims):
            problems.append(f"output {name}: shape {list(shape.dimensions)}, expected {list(golden.dims)}")
    return problems


def reduced_precision(model: CaseModel) -> bool:
    return model.relaxed or model.has_operand_type(OperandType.TENSOR_FLOAT16)


#: Failed output comparisons kept per case for the reports (each is bounded by ``vts.model.compare``).
MAX_RECORDED_COMPARISONS = 8

_recorded: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "nnvts_comparisons", default=None)


@contextlib.contextmanager
def recording_comparisons() -> Iterator[list[dict[str, Any]]]:
    """Collect the records of the output comparisons that fail inside this block (this thread only).

    Families report problems as text; the structured detail travels beside
    them, so no family has to thread it through its own return values.
    """
    records: list[dict[str, Any]] = []
    token = _recorded.set(records)
    try:
        yield records
    finally:
        _recorded.reset(token)


def run_recording_comparisons(run: Callable[..., Outcome], *args: Any) -> Outcome:
    """``run(*args)``; a FAILED outcome gains ``extra["comparison"]`` when an output comparison failed."""
    with recording_comparisons() as records:
        outcome = run(*args)
    if not records or outcome.verdict is not Verdict.FAILED or "comparison" in outcome.extra:
        return outcome
    return Outcome(outcome.verdict, outcome.reason, outcome.details, {**outcome.extra, "comparison": records})


def _record(comparison: OutputComparison, type_name: str) -> None:
    records = _recorded.get()
    if records is not None and not comparison.passed and len(records) < MAX_RECORDED_COMPARISONS:
        records.append(comparison.record(type_name))


def _type_name(operand_type: object) -> str:
    try:
        return OperandType(operand_type).name
    except ValueError:
        return str(operand_type)


def compare_outputs(model: CaseModel, example: CaseExample, built: BuiltRequest) -> list[OutputComparison]:
    if model.multinomial_tolerance > 0:
        result = _multinomial(model, example, built)
        _record(result, "TENSOR_INT32")
        return [result]
    comparisons = []
    reduced = reduced_precision(model)
    for position, golden in sorted(example.outputs.items()):
        operand = model.main.operands[model.main.outputs[position]]
        if operand.ignored:
            continue
        # Extension goldens were decoded with the extension's dtype (vts.model.extensions); reuse it.
        dtype = golden.value.dtype if operand.is_extension else dtype_of(operand.type)
        count = element_count(golden.dims)
        actual = built.read_output(position, dtype, count)
        criteria = criteria_for(operand.type if isinstance(operand.type, int) else -1,
                                reduced_precision=reduced, tolerance=model.tolerance)
        comparison = compare_output(operand.name, golden.value.reshape(golden.dims or ()),
                                    actual.reshape(golden.dims or ()) if actual.size == count else actual, criteria)
        _record(comparison, _type_name(operand.type))
        comparisons.append(comparison)
    return comparisons


def _multinomial(model: CaseModel, example: CaseExample, built: BuiltRequest) -> OutputComparison:
    """Observed class frequencies within tolerance of softmax(logits) (VTS multinomial check)."""
    op = model.main.operations[0]
    if op.type != OperationType.RANDOM_MULTINOMIAL:
        return OutputComparison("multinomial", False, 0, note="multinomial tolerance on a non-multinomial model")
    logits_data = example.inputs[0]
    logits = logits_data.value.astype(np.float64).reshape(logits_data.dims)
    golden = example.outputs[0]
    samples = built.read_output(0, np.dtype("<i4"), element_count(golden.dims)).reshape(golden.dims)
    batches, classes = logits.shape
    name = model.main.operands[model.main.outputs[0]].name
    worst = 0.0
    worst_at: tuple[int, ...] = ()
    for b in range(batches):
        probabilities = np.exp(logits[b] - logits[b].max())
        probabilities /= probabilities.sum()
        observed = np.bincount(np.clip(samples[b], 0, classes - 1), minlength=classes) / samples.shape[1]
        if np.any((samples[b] < 0) | (samples[b] >= classes)):
            return OutputComparison(name, False, samples.size, note=f"batch {b}: sample outside [0, {classes})")
        error = np.abs(observed - probabilities)
        if error.max() > worst:
            worst = float(error.max())
            worst_at = (b, int(error.argmax()))
    if worst > model.multinomial_tolerance:
        return OutputComparison(name, False, samples.size, 1, worst_at, note=(
            f"class frequency off by {worst:.4f} at batch/class {list(worst_at)} "
            f"(tolerance {model.multinomial_tolerance})"))
    return OutputComparison(name, True, samples.size)


def judge_success(model: CaseModel, example: CaseExample, built: BuiltRequest, answer: Answer,
                  measure: MeasureTiming, where: str) -> list[str]:
    """Problems with an execution that must have succeeded: status, timing, shapes, then values."""
    if not answer.ok:
        return [f"{where} returned {answer.status.name}" + (f" ({answer.message})" if answer.message else "")]
    problems = timing_problems(answer, measure) + shape_problems(model, example, answer)
    if problems:
        return [f"{where}: {p}" for p in problems]
    return [f"{where}: {c.describe()}" for c in compare_outputs(model, example, built) if not c.passed]
