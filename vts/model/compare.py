"""Accuracy criteria of the NN HAL suite, as pure functions returning records.

Per operand type (``checkResults`` of TestHarness.cpp, shared by VTS and CTS;
docs/driver-guide.md): float32
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


#: Elements a block of ``_all_within`` holds (two float64 buffers of 512 KiB, reused block after block).
#: Measured on 400,000 float32 elements: 8,192 a block took 2.4 ms (the per-block calls dominate),
#: 65,536 1.1-1.5 ms, 131,072 no better; the whole-array temporaries before, 5.9 ms.
_BLOCK = 65536
#: The kinds ``_all_within`` takes (bool, signed, unsigned, float); others go to the full comparison.
_PLAIN_KINDS = frozenset("biuf")


def compare_output(operand: str, expected: np.ndarray, actual: np.ndarray, criteria: Criteria) -> OutputComparison:
    """Compare ``actual`` with ``expected`` element by element (both already shaped alike)."""
    total = int(expected.size)
    if actual.size != expected.size:
        return OutputComparison(operand, False, total, total,
                                note=f"{actual.size} elements returned, {total} expected")
    if total == 0:
        return OutputComparison(operand, True, 0)
    if _all_within(expected, actual, criteria):
        return OutputComparison(operand, True, total)
    return _located_comparison(operand, expected, actual, criteria)


def _all_within(expected: np.ndarray, actual: np.ndarray, criteria: Criteria) -> bool:
    """Whether every element passes, decided block by block; False means "look closer", never "failed".

    Almost every comparison of a conforming driver passes, and the located comparison below costs a
    dozen whole-array temporaries (float64 copies, masks, ``where``) to say which element failed and
    why: over large outputs (a convolution's hundreds of thousands of elements) their fresh pages and
    passes were a fifth of a concurrency case's CPU.  Here the same sums are made in two reused
    block-sized buffers, and the first block with an element not plainly within its bound stops
    the pass.  The bound is the located comparison's to the bit (``atol + rtol * |expected|`` in
    float64, the same operations), and every non-finite golden, answer, error or bound sends the
    output to the located comparison, which alone judges non-finite values.
    """
    if expected.dtype.kind not in _PLAIN_KINDS or actual.dtype.kind not in _PLAIN_KINDS:
        return False
    flat_expected, flat_actual = expected.reshape(-1), actual.reshape(-1)
    if criteria.exact:
        return expected.dtype == actual.dtype and bool(np.array_equal(flat_expected, flat_actual))
    size = flat_expected.size
    block = min(size, _BLOCK)
    bound, error = np.empty(block), np.empty(block)
    within = np.empty(block, dtype=np.bool_)
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, size, block):
            stop = min(start + block, size)
            count = stop - start
            b, e, w = bound[:count], error[:count], within[:count]
            np.copyto(b, flat_expected[start:stop], casting="unsafe")
            np.copyto(e, flat_actual[start:stop], casting="unsafe")
            np.subtract(e, b, out=e)
            np.absolute(e, out=e)
            np.absolute(b, out=b)
            np.multiply(b, criteria.rtol, out=b)
            np.add(b, criteria.atol, out=b)
            np.less_equal(e, b, out=w)  # False where the error is NaN
            if not w.all() or not math.isfinite(float(b.max())):
                return False
    return True


def _located_comparison(operand: str, expected: np.ndarray, actual: np.ndarray,
                        criteria: Criteria) -> OutputComparison:
    """The full comparison: which elements are out of tolerance, the worst of them, the error histogram."""
    total = int(expected.size)
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
