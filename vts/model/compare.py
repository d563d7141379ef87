"""Accuracy criteria of the NN HAL suite, as pure functions returning records.

Per operand type (spec-format.md "Accuracy", test-catalogue §9): float32
within 1e-5 + 5 ULP relative; float16 (and float32 in relaxed or fp16 models)
within 5 fp16 ULP absolute and relative; int32 and quantized types within 1
(a model may widen the quantized bound, MobileNet-sized graphs use 3);
booleans exact.  A model's overrides arrive typed (``Tolerance``, built where
the model is made), never as a mapping read here.  A non-finite actual value
fails unless the golden is the same non-finite value.  The comparison never
asserts: it returns an ``OutputComparison`` and the family decides the
verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vts.hal.enums import OperandType as T

FP32_ULP = 1.1920928955078125e-07  # 2**-23
FP16_ULP = 0.0009765625  # 2**-10


@dataclass(frozen=True, slots=True)
class Criteria:
    atol: float
    rtol: float
    exact: bool = False


FLOAT32 = Criteria(atol=1e-5, rtol=5 * FP32_ULP)
FLOAT16 = Criteria(atol=5 * FP16_ULP, rtol=5 * FP16_ULP)
INTEGER = Criteria(atol=1, rtol=0)
EXACT = Criteria(atol=0, rtol=0, exact=True)

_QUANTIZED = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
              T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM)


#: The keys a tolerance may set (``Tolerance``'s fields, in the order messages list them).
_TOLERANCE_KEYS = ("atol", "quant", "rtol")


class ToleranceError(ValueError):
    """A tolerance with a key the criteria do not know, or a value that is no bound.

    ``key`` names the offending key ("" for the whole value) so the spec
    loader can point at it (file, line, JSON pointer).
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.message = message


@dataclass(frozen=True, slots=True)
class Tolerance:
    """A model's widening of the per-type criteria (the spec's ``tolerance``), typed when the model is made.

    As a bare mapping read only at comparison time, a misspelt key
    (``qaunt: 3``) in a built-in or hand-made model silently fell back to the
    default bound; typed once, where the spec is loaded or the model is
    made, a bad key or value is an error there, naming the key.

    ``quant``: allowed error of quantized outputs, in quantization steps
    (VTS uses 3 for MobileNet-sized graphs).  ``atol`` / ``rtol``: when
    either is set, every output but booleans is judged with them (the other
    keeps the type's default).
    """

    quant: float = 1
    atol: float | None = None
    rtol: float | None = None

    def __post_init__(self) -> None:
        for key in _TOLERANCE_KEYS:
            value = getattr(self, key)
            if value is None and key != "quant":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ToleranceError(key, f"expected a finite number >= 0, got {value!r}")

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> Tolerance:
        """The typed form of a tolerance mapping; an unknown key or a bad value raises ``ToleranceError``."""
        if not isinstance(mapping, Mapping):
            raise ToleranceError("", f"expected a mapping of {', '.join(_TOLERANCE_KEYS)}, got {mapping!r}")
        for key in mapping:
            if key not in _TOLERANCE_KEYS:
                raise ToleranceError(str(key), f"unknown tolerance key {key!r} (expected one of: "
                                     f"{', '.join(_TOLERANCE_KEYS)})")
        return cls(**mapping)


#: No overrides: every output judged by its type's criteria.
DEFAULT_TOLERANCE = Tolerance()


def criteria_for(operand_type: int, *, reduced_precision: bool = False,
                 tolerance: Tolerance = DEFAULT_TOLERANCE) -> Criteria:
    """Criteria for one output.

    ``reduced_precision``: the model is relaxed or has a float16 operand, so
    float32 outputs are judged with the fp16 bound (VTS does the same).
    ``tolerance``: the model's overrides (``quant``, ``atol``, ``rtol``).
    """
    if operand_type in (T.TENSOR_FLOAT32, T.FLOAT32):
        base = FLOAT16 if reduced_precision else FLOAT32
    elif operand_type in (T.TENSOR_FLOAT16, T.FLOAT16):
        base = FLOAT16
    elif operand_type in _QUANTIZED:
        base = Criteria(atol=float(tolerance.quant), rtol=0)
    elif operand_type in (T.TENSOR_INT32, T.INT32, T.UINT32):
        base = INTEGER
    elif operand_type in (T.TENSOR_BOOL8, T.BOOL):
        return EXACT
    else:
        base = EXACT
    if tolerance.atol is not None or tolerance.rtol is not None:
        atol = base.atol if tolerance.atol is None else tolerance.atol
        rtol = base.rtol if tolerance.rtol is None else tolerance.rtol
        return Criteria(atol=float(atol), rtol=float(rtol))
    return base


#: Elements listed in a failed comparison's record, and bins of its error histogram.
WORST_KEPT = 10
HISTOGRAM_BINS = 16


@dataclass(frozen=True, slots=True)
class ElementError:
    """One element out of tolerance: where, what was expected, what came back, and the allowed error."""

    index: tuple[int, ...]
    expected: float
    actual: float
    error: float
    tolerance: float

    def record(self) -> dict[str, Any]:
        return {"index": list(self.index), "expected": _json_number(self.expected),
                "actual": _json_number(self.actual), "error": _json_number(self.error),
                "tolerance": _json_number(self.tolerance)}


@dataclass(frozen=True, slots=True)
class ErrorHistogram:
    """Counts of the absolute error in equal-width bins from 0 to the largest finite error (or the tolerance)."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    nonfinite: int = 0
    #: The largest allowed error, drawn as a line on the histogram (None where unknown).
    tolerance: float | None = None

    def record(self) -> dict[str, Any]:
        data: dict[str, Any] = {"edges": [_json_number(e) for e in self.edges], "counts": list(self.counts),
                                "nonfinite": self.nonfinite}
        if self.tolerance is not None:
            data["tolerance"] = self.tolerance
        return data


def _json_number(value: float) -> float | str:
    """A float for a JSON report: non-finite values as strings (strict JSON parsers reject NaN)."""
    return value if math.isfinite(value) else str(value)


@dataclass(frozen=True, slots=True)
class OutputComparison:
    """How one output compared with its golden."""

    operand: str
    passed: bool
    total: int
    bad_count: int = 0
    worst_index: tuple[int, ...] = ()
    expected: float | None = None
    actual: float | None = None
    error: float | None = None
    note: str = ""
    #: The worst elements, worst first (at most ``WORST_KEPT``); only filled for a failed comparison.
    worst: tuple[ElementError, ...] = ()
    #: Distribution of the absolute error over the elements with a finite error (failed comparisons only).
    histogram: ErrorHistogram | None = None

    def describe(self) -> str:
        if self.passed:
            return f"{self.operand}: ok ({self.total} elements)"
        if self.note:
            return f"{self.operand}: {self.note}"
        return (f"{self.operand}: {self.bad_count}/{self.total} elements out of tolerance; worst at "
                f"{list(self.worst_index)}: expected {self.expected!r}, got {self.actual!r} "
                f"(error {self.error:.6g})")

    def record(self, type_name: str = "") -> dict[str, Any]:
        """The bounded, JSON-ready form reports use (``extra["comparison"]`` items)."""
        data: dict[str, Any] = {"operand": self.operand, "type": type_name, "bad": self.bad_count,
                                "total": self.total, "worst": [e.record() for e in self.worst]}
        if self.histogram is not None:
            data["histogram"] = self.histogram.record()
        if self.note:
            data["note"] = self.note
        return data


def compare_output(operand: str, expected: np.ndarray, actual: np.ndarray, criteria: Criteria) -> OutputComparison:
    """Compare ``actual`` with ``expected`` element by element (both already shaped alike)."""
    total = int(expected.size)
    if actual.size != expected.size:
        return OutputComparison(operand, False, total, total,
                                note=f"{actual.size} elements returned, {total} expected")
    if total == 0:
        return OutputComparison(operand, True, 0)
    shape = expected.shape
    if criteria.exact:
        exp = expected.astype(bool) if expected.dtype == np.bool_ else expected.astype(np.float64)
        act = actual.astype(bool) if expected.dtype == np.bool_ else actual.astype(np.float64)
        bad = exp != act
        error = bad.astype(np.float64)
        limit = np.zeros(shape)
    else:
        exp = expected.astype(np.float64)
        act = actual.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            error = np.abs(act - exp)
            limit = criteria.atol + criteria.rtol * np.abs(exp)
            finite = np.isfinite(exp) & np.isfinite(act)
            same_nonfinite = (~np.isfinite(exp)) & ((exp == act) | (np.isnan(exp) & np.isnan(act)))
            bad = np.where(finite, error > limit, ~same_nonfinite)
            error = np.where(finite, error, np.inf)
            error = np.where(bad | finite, error, 0.0)
    bad_count = int(np.count_nonzero(bad))
    if bad_count == 0:
        return OutputComparison(operand, True, total)
    ranked = np.where(bad, error, -1.0).reshape(-1)
    flat_worst = int(np.argmax(ranked))
    worst = tuple(int(i) for i in np.unravel_index(flat_worst, shape)) if shape else ()
    return OutputComparison(
        operand,
        False,
        total,
        bad_count,
        worst,
        expected=_scalar(expected.reshape(-1)[flat_worst]),
        actual=_scalar(actual.reshape(-1)[flat_worst]),
        error=float(error.reshape(-1)[flat_worst]),
        worst=_worst_elements(ranked, bad_count, expected, actual, error, np.broadcast_to(limit, shape)),
        histogram=_histogram(error.reshape(-1), float(np.max(limit)) if np.size(limit) else 0.0),
    )


def _worst_elements(ranked: np.ndarray, bad_count: int, expected: np.ndarray, actual: np.ndarray,
                    error: np.ndarray, limit: np.ndarray) -> tuple[ElementError, ...]:
    """The ``WORST_KEPT`` bad elements with the largest error, worst first (a partial sort: O(n))."""
    keep = min(WORST_KEPT, bad_count)
    candidates = np.argpartition(-ranked, keep - 1)[:keep] if ranked.size > keep else np.arange(ranked.size)
    order = candidates[np.argsort(-ranked[candidates], kind="stable")][:keep]
    shape = expected.shape
    flat_expected, flat_actual = expected.reshape(-1), actual.reshape(-1)
    flat_error, flat_limit = error.reshape(-1), limit.reshape(-1)
    return tuple(
        ElementError(
            index=tuple(int(i) for i in np.unravel_index(int(k), shape)) if shape else (),
            expected=_scalar(flat_expected[k]), actual=_scalar(flat_actual[k]),
            error=float(flat_error[k]), tolerance=float(flat_limit[k]))
        for k in order)


def _histogram(error: np.ndarray, tolerance: float = 0.0) -> ErrorHistogram:
    """``HISTOGRAM_BINS`` bins from 0 to the largest finite error or the tolerance, whichever is larger.

    Always several bins, even when every error is the same (or zero, every bad element non-finite):
    one bar alone says nothing about where the error sits against the tolerance.
    """
    finite = error[np.isfinite(error)]
    nonfinite = int(error.size - finite.size)
    top = max(float(finite.max()) if finite.size else 0.0, tolerance if math.isfinite(tolerance) else 0.0)
    if top <= 0.0:
        top = 1.0
    counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS, range=(0.0, top))
    return ErrorHistogram(tuple(float(e) for e in edges), tuple(int(c) for c in counts), nonfinite,
                          tolerance if math.isfinite(tolerance) and tolerance > 0 else None)


def _scalar(value: np.generic) -> float:
    return float(value.item())
