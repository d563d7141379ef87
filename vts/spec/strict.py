"""Making a concrete document writable as strict JSON: non-finite values move to ``{b64}``.

A golden may be NaN or infinity (docs/spec-format.md, "Element checks"), but JSON
has no token for either: Python's ``NaN``/``Infinity`` are an extension that
strict parsers (``jq``, browsers, most other languages) reject.  The concrete
format already has a form that carries any float bit pattern — ``{b64}``,
the little-endian bytes of the stored element type, which loads to the same
array as a list — so a value holding a non-finite float is written that way,
and every other value keeps its list form.  Reading stays lenient: YAML's
``.inf``/``.nan`` and the JSON extension tokens still load.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from vts.spec.values import TYPES, decode, encode


def has_non_finite(value: Any) -> bool:
    """True when a list, bare or long-form value holds a NaN or an infinity."""
    if isinstance(value, dict):
        return "value" in value and has_non_finite(value["value"])
    if isinstance(value, list):
        return any(type(x) is float and not math.isfinite(x) for x in value)
    return type(value) is float and not math.isfinite(value)


def as_b64(value: Any, type_name: str) -> Any:
    """``value`` (list, bare or long form) rewritten as ``{b64}`` (long form: ``{dims, b64}``)."""
    et = TYPES[type_name]
    if isinstance(value, dict):
        return {"dims": value["dims"], **as_b64(value["value"], type_name)}
    return encode(decode(value, et), {"b64": ""}, et)


def strict_document(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """``document`` with every non-finite operand or example value in ``{b64}`` form (copied only if needed)."""
    if not any(_needs_rewrite(model) for model in document["models"]):
        return document
    document = copy.deepcopy(dict(document))
    for model in document["models"]:
        for subgraph in [model["main"], *model.get("referenced", ())]:
            for operand in subgraph["operands"]:
                if _rewritable(operand) and has_non_finite(operand.get("value")):
                    operand["value"] = as_b64(operand["value"], operand["type"])
        operands = model["main"]["operands"]
        for example in model["examples"]:
            for side in ("inputs", "outputs"):
                for key, value in example[side].items():
                    operand = _example_operand(operands, key)
                    if operand is not None and _rewritable(operand) and has_non_finite(value):
                        example[side][key] = as_b64(value, operand["type"])
    return document


def _rewritable(operand: Mapping[str, Any]) -> bool:
    et = TYPES.get(operand["type"])
    return et is not None and et.kind == "float" and operand.get("lifetime") != "SUBGRAPH"


def _example_operand(operands: list[Mapping[str, Any]], key: str) -> Mapping[str, Any] | None:
    for operand in operands:
        if operand["name"] == key:
            return operand
    return operands[int(key)] if key.isdigit() and int(key) < len(operands) else None


def _needs_rewrite(model: Mapping[str, Any]) -> bool:
    for subgraph in [model["main"], *model.get("referenced", ())]:
        if any(has_non_finite(o.get("value")) for o in subgraph["operands"] if o.get("lifetime") != "SUBGRAPH"):
            return True
    return any(has_non_finite(v) for example in model["examples"] for side in ("inputs", "outputs")
               for v in example[side].values())
