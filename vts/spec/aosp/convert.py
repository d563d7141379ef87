"""One generated case of Android's generator as a model of the concrete spec format.

The child hands over what ``example_generator.GetModelStruct`` gives the C++
printer; this module maps it onto docs/spec-format.md: the case named
``SPEC_REST`` by Android becomes model ``REST`` of spec ``SPEC`` (``SPEC``
itself when the names are equal), main inputs and outputs move their data
into the one example, constants keep theirs, and large data is written as
``{b64}`` (the little-endian stored elements, loading to the same array).
"""

from __future__ import annotations

import base64
import re
from typing import Any

import numpy as np

from vts.spec.values import TYPES

#: Values of more elements than this are written as {b64} (the corpus's own threshold).
B64_ABOVE = 256

#: NN HAL versions nnvts knows, oldest first; a newer Android folder maps to the newest.
KNOWN_HAL = ("1.0", "1.1", "1.2", "1.3")
#: The AIDL feature levels nnvts knows: Android's ``AIDL_V1`` folder is feature level 5, ``AIDL_V4`` 8.
KNOWN_AIDL = ("FL5", "FL6", "FL7", "FL8")

#: Older generators name lifetimes after HAL 1.0..1.2; the format uses the HAL 1.3 names.
_LIFETIMES = {"MODEL_INPUT": "SUBGRAPH_INPUT", "MODEL_OUTPUT": "SUBGRAPH_OUTPUT"}
_CONSTANT = ("CONSTANT_COPY", "CONSTANT_REFERENCE")
_VERSION = re.compile(r"V(\d+)_(\d+)")
_AIDL_VERSION = re.compile(r"AIDL_V(\d+)")

#: Per-model tolerance overrides for cases Android's harness judges with a wider margin:
#: the MobileNet graphs (quantized outputs within 3, as ``checkResults`` of TestHarness.cpp allows them).
_TOLERANCES: tuple[tuple[re.Pattern[str], dict[str, Any]], ...] = (
    (re.compile(r"mobilenet"), {"quant": 3}),
)


def hal_version(android_version: str | None) -> str | None:
    """``V1_2`` -> ``1.2``, ``AIDL_V2`` -> ``FL6``; a version newer than nnvts knows -> the newest it knows
    (of its kind); None if none is named.

    Android 12's generator (packages/modules/NeuralNetworks) tags the cases of
    the ``AIDL_Vn`` folders with the folder's name; AIDL version n is feature
    level n + 4.
    """
    if android_version is None:
        return None
    aidl = _AIDL_VERSION.match(android_version)
    if aidl is not None:
        return KNOWN_AIDL[max(0, min(int(aidl[1]), len(KNOWN_AIDL)) - 1)]
    match = _VERSION.match(android_version)
    if match is None:
        return None
    version = (int(match[1]), int(match[2]))
    known = [v for v in KNOWN_HAL if tuple(map(int, v.split("."))) <= version]
    return known[-1] if known else KNOWN_HAL[0]


def model_name(test_name: str, spec_name: str) -> str:
    """Android's case name without the spec-name prefix (docs/corpus.md: ``SPEC.MODEL``)."""
    if test_name == spec_name:
        return spec_name
    prefix = spec_name + "_"
    return test_name[len(prefix):] if test_name.startswith(prefix) else test_name


def _c_float(x: float) -> float:
    """``x`` as the C ``float`` Android's TestModel holds (scales, tolerances): what its harness uses."""
    return float(np.float32(x))


#: The raw forms the child packs long value lists in (child.py): exact doubles, int64, bytes 0/1.
_PACKED = {"f8": "<f8", "i8": "<i8", "b1": "u1"}


class BadCase(ValueError):
    """The child sent data that is not what child.py writes (one line: the spec fails)."""


def _unpack(value: dict[str, Any]) -> Any:
    if len(value) != 1 or next(iter(value)) not in _PACKED:
        raise BadCase(f"unknown packed value form {sorted(value)[:3]}")
    kind, text = next(iter(value.items()))
    try:
        raw = base64.b64decode(text, validate=True)
        return np.frombuffer(raw, dtype=_PACKED[kind])
    except ValueError as error:
        raise BadCase(f"malformed packed value: {error}") from None


def _count(values: Any) -> int:
    return len(_unpack(values)) if isinstance(values, dict) else len(values)


def _value(values: Any, type_name: str) -> Any:
    """A list up to B64_ABOVE elements, else {b64} of the stored elements (what the loader would build)."""
    array = _unpack(values) if isinstance(values, dict) else None
    if array is None and len(values) <= B64_ABOVE:
        return values
    et = TYPES[type_name]
    if array is None:
        array = np.asarray(values, dtype=np.float64 if et.kind == "float" else None)
    if len(array) <= B64_ABOVE:
        return array.astype(bool).tolist() if et.kind == "bool" else array.tolist()
    stored = array.astype(bool) if et.kind == "bool" else array
    data = stored.astype(np.dtype(et.dtype).newbyteorder("<"))
    return {"b64": base64.b64encode(data.tobytes()).decode("ascii")}


def _operand(raw: dict[str, Any], data_here: bool) -> dict[str, Any]:
    lifetime = _LIFETIMES.get(raw["lifetime"], raw["lifetime"])
    out: dict[str, Any] = {"name": raw["name"], "type": raw["type"]}
    if raw["dims"]:
        out["dims"] = raw["dims"]
    if raw["scale"] != 0.0:
        out["scale"] = _c_float(raw["scale"])
    if raw["zero_point"] != 0:
        out["zero_point"] = raw["zero_point"]
    if raw["channel_quant"] is not None:
        channel = raw["channel_quant"]
        out["channel_quant"] = {"dim": channel["dim"], "scales": [_c_float(s) for s in channel["scales"]]}
    out["lifetime"] = lifetime
    if raw["value"] is not None and (lifetime in _CONSTANT or lifetime == "SUBGRAPH") and data_here:
        # A SUBGRAPH operand's value is the index of its model in `referenced` (a bare integer).
        out["value"] = _subgraph_index(raw["value"]) if lifetime == "SUBGRAPH" else _value(raw["value"], raw["type"])
    if raw["ignored"]:
        out["ignored"] = True
    return out


def _subgraph_index(value: Any) -> int:
    if not (isinstance(value, list) and len(value) == 1 and type(value[0]) is int):
        raise BadCase("a SUBGRAPH operand without one subgraph index")
    return value[0]


def _subgraph(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "operands": [_operand(o, True) for o in raw["operands"]],
        "operations": raw["operations"],
        "inputs": raw["inputs"],
        "outputs": raw["outputs"],
    }


def _example_value(raw: dict[str, Any]) -> Any:
    value = _value(raw["value"], raw["type"])
    if 0 in raw["dims"]:  # dims with an unknown (0) extent: the long form carries the actual ones
        return {"dims": raw["dims"], **(value if isinstance(value, dict) else {"value": value})}
    return value


def _has_data(raw: dict[str, Any], side: str) -> bool:
    """False for an omitted optional input: Android gives it an empty buffer (``{}``).

    An output keeps even an empty value: a zero-sized output is a result to check.
    """
    if raw["value"] is None:
        return False
    return _count(raw["value"]) > 0 or side == "outputs"


def _example(main: dict[str, Any]) -> dict[str, Any]:
    operands = main["operands"]
    sides: dict[str, dict[str, Any]] = {"inputs": {}, "outputs": {}}
    for side in sides:
        for index in main[side]:
            raw = operands[index]
            if _has_data(raw, side):
                sides[side][raw["name"]] = _example_value(raw)
    return sides


def to_model(case: dict[str, Any], spec_name: str) -> dict[str, Any]:
    """The concrete-layer model of one generated case."""
    name = model_name(case["test_name"], spec_name)
    model: dict[str, Any] = {"name": name}
    version = hal_version(case["version"])
    if version is not None:
        model["hal_version"] = version
    if case["relaxed"]:
        model["relaxed"] = True
    if case["expect_failure"]:
        model["expect_failure"] = True
    for pattern, tolerance in _TOLERANCES:
        if pattern.search(case["test_name"]):
            model["tolerance"] = dict(tolerance)
    if case["multinomial_tolerance"]:
        # TestModel holds it as a C float: the value Android's harness compares with.
        model["multinomial_tolerance"] = _c_float(case["multinomial_tolerance"])
    model["main"] = _subgraph(case["main"])
    if case["referenced"]:
        model["referenced"] = [_subgraph(r) for r in case["referenced"]]
    model["examples"] = [_example(case["main"])]
    return model


def to_document(spec_name: str, folder: str, cases: list[dict[str, Any]], detail: str) -> dict[str, Any]:
    """The concrete spec of one ``.mod.py``: every case it generated, in the generator's order."""
    return {
        "nnvts": 1,
        "name": spec_name,
        "hal_version": hal_version(folder) or KNOWN_HAL[-1],
        "source": {"kind": "imported", "detail": detail},
        "models": [to_model(case, spec_name) for case in cases],
    }
