"""Operand values in specs: element types, counts, checks, and list/b64 codecs.

A value is written as a flat list, a bare scalar, ``{b64: ...}`` (the
little-endian bytes of the stored element type), or in examples the long
form ``{dims, value | b64}``.  All forms must denote the same array
(docs/spec-format.md, "Values").  Checks work on the Python list where that is
cheapest (``set(map(type, ...))``, ``min``/``max`` run at C speed) and fall back
to numpy only for long float lists; numpy itself is imported lazily.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any

from vts.hal.enums import ELEMENT_SIZE, NUMPY_DTYPE, SCALAR_TYPES, OperandType
from vts.spec.errors import Problem, pointer_join

#: Above this length a float list is checked with numpy instead of a Python loop.
_NUMPY_FROM = 32

#: Finite doubles at or beyond these magnitudes round to infinity when stored.
FLOAT32_OVERFLOW = 3.4028235677973366e38
FLOAT16_OVERFLOW = 65520.0


@dataclass(frozen=True, slots=True)
class ElementType:
    """What a spec value of one operand type may hold."""

    name: str
    dtype: str  # numpy dtype of the stored element (spec-format: quantized types hold stored integers)
    size: int  # bytes per element
    kind: str  # "float", "int", "bool" or "none" (SUBGRAPH: no data)
    scalar: bool
    low: float = 0
    high: float = 0

    def describe_range(self) -> str:
        return f"{int(self.low)}..{int(self.high)}" if self.kind == "int" else ""


def _build_types() -> dict[str, ElementType]:
    types: dict[str, ElementType] = {}
    for t in OperandType:
        dtype = NUMPY_DTYPE.get(t, "")
        code = dtype.lstrip("<>|=")[:1]  # numpy kind: f float, i/u int, ? bool
        scalar = t in SCALAR_TYPES
        if not dtype:
            types[t.name] = ElementType(t.name, "", 0, "none", scalar)
        elif code == "f":
            limit = FLOAT16_OVERFLOW if dtype.endswith("2") else FLOAT32_OVERFLOW
            types[t.name] = ElementType(t.name, dtype, ELEMENT_SIZE[t], "float", scalar, -limit, limit)
        elif code == "?":
            types[t.name] = ElementType(t.name, dtype, 1, "bool", scalar, 0, 1)
        else:
            bits = 8 * ELEMENT_SIZE[t]
            signed = code == "i"
            low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
            types[t.name] = ElementType(t.name, dtype, ELEMENT_SIZE[t], "int", scalar, low, high)
    return types


TYPES: dict[str, ElementType] = _build_types()


def element_type(type_name: str) -> ElementType | None:
    """The element type of a HAL operand type name; None for extension or unknown types."""
    return TYPES.get(type_name)


def expected_count(et: ElementType, dims: list[int] | None) -> int | None:
    """Element count implied by ``dims``, or None where dims are unknown (a 0, or no rank)."""
    if not dims:
        return 1 if et.scalar else None
    if 0 in dims:
        return None
    return math.prod(dims)


def shape_text(et: ElementType, dims: list[int] | None) -> str:
    return f"{et.name} of dims {list(dims or [])}" if dims else et.name


#: Largest finite magnitude of each float storage type, for messages.
_MAX_FINITE = {"<f2": 65504.0, "<f4": 3.4028234663852886e38}


# --- checks -----------------------------------------------------------------------------------


def check_value(value: Any, et: ElementType, count: int | None, pointer: str,
                dims: list[int] | None) -> Problem | None:
    """The first problem of a list, bare-scalar or ``{b64}`` value, or None.

    ``count`` is the element count ``dims`` require (None: unknown, any count);
    ``dims`` only serve the message.
    """
    if type(value) is list:
        if count is not None and len(value) != count:
            return Problem(pointer, f"expected {count} value(s) for {shape_text(et, dims)}, got {len(value)}")
        return check_elements(value, et, pointer) if value else None
    if type(value) is dict:
        return check_b64(value["b64"], et, count, pointer + "/b64", dims)
    if count is not None and count != 1:
        return Problem(pointer, f"expected {count} value(s) for {shape_text(et, dims)}, got a single value")
    return check_elements([value], et, pointer, bare=True)


def check_elements(values: list[Any], et: ElementType, pointer: str, *, bare: bool = False) -> Problem | None:
    """Check element kinds and ranges against the stored type (docs/spec-format.md, "Values")."""
    kinds = set(map(type, values))

    def at(i: int) -> str:
        return pointer if bare else pointer_join(pointer, i)

    if et.kind == "float":
        if bool in kinds:
            i = _first(values, lambda x: type(x) is bool)
            return Problem(at(i), f"expected a number for {et.name}, got {_json(values[i])}")
        # min/max run at C speed; NaN or infinity only send us to the exact scan.
        if et.low < min(values) and max(values) < et.high:
            return None
        i = _first_overflow(values, et.high)
        if i is not None:
            return Problem(at(i), f"{values[i]!r} overflows {et.name}: its largest finite value is "
                           f"{_MAX_FINITE[et.dtype]!r}")
        return None
    if et.kind == "int":
        if bool in kinds:
            i = _first(values, lambda x: type(x) is bool)
            return Problem(at(i), f"expected an integer for {et.name}, got {_json(values[i])}")
        if float in kinds:
            i = _first(values, lambda x: type(x) is float and not x.is_integer())
            if i is not None:
                return Problem(at(i), f"expected an integer for {et.name}, got {values[i]!r}")
        if min(values) < et.low or max(values) > et.high:
            i = _first(values, lambda x: not et.low <= x <= et.high)
            return Problem(at(i), f"{_json(values[i])} is out of range for {et.name} "
                           f"(stored values are {et.describe_range()})")
        return None
    if et.kind == "bool":
        if not kinds <= {bool}:
            i = _first(values, lambda x: type(x) is not bool and x not in (0, 1))
            if i is not None:
                return Problem(at(i), f"expected true/false (or 0/1) for {et.name}, got {_json(values[i])}")
        return None
    return None


def b64_size(text: str) -> int | None:
    """Decoded size of schema-valid base64 text (alphabet and padding already checked), or None
    when the length is not a multiple of 4.  Avoids decoding megabytes just to measure them."""
    if len(text) % 4:
        return None
    return len(text) // 4 * 3 - text[-2:].count("=")


def check_b64(text: str, et: ElementType, count: int | None, pointer: str,
              dims: list[int] | None) -> Problem | None:
    """Check a ``b64`` blob's byte size (and bool bytes) against the type and dims."""
    size = b64_size(text)
    if size is None:
        return Problem(pointer, f"expected base64 data, got text whose length ({len(text)}) "
                       "is not a multiple of 4")
    if et.size == 0:
        return Problem(pointer, f"{et.name} operands hold no data")
    if count is not None and size != count * et.size:
        return Problem(pointer, f"expected {count * et.size} bytes ({count} value(s) of "
                       f"{shape_text(et, dims)}, {et.size} byte(s) each), got {size} bytes")
    if size % et.size:
        return Problem(pointer, f"expected a multiple of {et.size} bytes for {et.name}, got {size} bytes")
    if et.kind == "bool":
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as e:
            return Problem(pointer, f"expected base64 data ({e})")
        if data.strip(b"\x00\x01"):
            return Problem(pointer, f"expected bytes 0 or 1 for {et.name}")
    return None


def _first(values: list[Any], predicate: Any) -> Any:
    return next((i for i, x in enumerate(values) if predicate(x)), None)


def _first_overflow(values: list[Any], limit: float) -> int | None:
    if len(values) < _NUMPY_FROM:
        return _first(values, lambda x: limit <= abs(x) < math.inf)
    import numpy as np

    magnitudes = np.abs(np.asarray(values, dtype=np.float64))
    bad = (magnitudes >= limit) & (magnitudes < np.inf)
    return int(np.argmax(bad)) if bad.any() else None


def _json(x: Any) -> str:
    return ("true" if x else "false") if isinstance(x, bool) else repr(x)


# --- codecs -----------------------------------------------------------------------------------


def decode(value: Any, et: ElementType) -> Any:
    """A flat numpy array for a list, bare scalar or ``{b64}`` value (not the long form).

    Lists decode to a wide dtype (float64, int64, bool) so authored decimals
    survive a round trip unchanged; b64 decodes to the stored dtype.
    """
    import numpy as np

    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["b64"]), dtype=np.dtype(et.dtype)).copy()
    items = value if isinstance(value, list) else [value]
    wide = {"float": np.float64, "int": np.int64, "bool": np.bool_}.get(et.kind, np.float64)
    return np.asarray(items, dtype=wide).reshape(-1)


def encode(array: Any, like: Any, et: ElementType) -> Any:
    """``array`` written in the same form as ``like`` (list, bare scalar or ``{b64}``) for ``et``."""
    import numpy as np

    if isinstance(like, dict):
        stored = np.asarray(array).astype(np.dtype(et.dtype), copy=False)
        return {"b64": base64.b64encode(stored.tobytes()).decode("ascii")}
    if et.kind == "float":
        items = [float(x) for x in np.asarray(array, dtype=np.float64).reshape(-1)]
    elif et.kind == "bool":
        items = [bool(x) for x in np.asarray(array).reshape(-1)]
    else:
        items = [int(x) for x in np.asarray(array).reshape(-1)]
    if not isinstance(like, list) and len(items) == 1:
        return items[0]
    return items


def to_array(value: Any, type_name: str, dims: list[int] | None = None) -> Any:
    """The stored-dtype numpy array a spec value denotes, shaped by ``dims`` when known.

    For consumers turning specs into HAL models and requests; accepts every
    value form, including the long form (whose own dims then win).
    """
    import numpy as np

    et = TYPES[type_name]
    if isinstance(value, dict) and "dims" in value:
        dims = value["dims"]
        value = value["value"] if "value" in value else {"b64": value["b64"]}
    flat = decode(value, et).astype(np.dtype(et.dtype))
    if dims and 0 not in dims and math.prod(dims) == flat.size:
        return flat.reshape(dims)
    return flat
