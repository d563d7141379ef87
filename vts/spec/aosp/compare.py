"""Comparing two folders of concrete specs case for case (an import against a reference corpus).

Equality is semantic, not textual: the same spec and model names in the same
order, the same operands (types, dims, quantization, lifetimes), operations,
inputs and outputs, and every value bit-equal once loaded to its stored
dtype, whichever form (list, ``{b64}``, long form) either side wrote it in.
``source.detail`` is provenance and is not compared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from vts.spec.loader import load_file
from vts.spec.values import to_array

_MODEL_KEYS = ("hal_version", "relaxed", "expect_failure", "tolerance", "multinomial_tolerance", "extensions")
_OPERAND_KEYS = ("type", "dims", "scale", "zero_point", "channel_quant", "lifetime", "ignored",
                 "extension_params")
_DEFAULTS: dict[str, Any] = {"relaxed": False, "expect_failure": False, "tolerance": {}, "multinomial_tolerance": 0,
                             "extensions": [], "dims": [], "scale": 0.0, "zero_point": 0, "ignored": False,
                             "channel_quant": None, "extension_params": ""}


def spec_files(folder: Path) -> dict[str, Path]:
    """The spec files below ``folder`` by relative path (hidden files skipped)."""
    return {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*.json*"))
            if not any(part.startswith(".") for part in p.relative_to(folder).parts)}


def differences(a: Path, b: Path) -> Iterator[str]:
    """Every difference between the spec folders ``a`` and ``b``, one line each."""
    files_a, files_b = spec_files(a), spec_files(b)
    for rel in sorted(set(files_a) ^ set(files_b)):
        yield f"{rel}: only in {a if rel in files_a else b}"
    for rel in sorted(set(files_a) & set(files_b)):
        yield from document_differences(load_file(str(files_a[rel])).document,
                                        load_file(str(files_b[rel])).document, rel)


def document_differences(x: Mapping[str, Any], y: Mapping[str, Any], where: str) -> Iterator[str]:
    """Differences between two loaded concrete documents."""
    for key in ("nnvts", "name", "hal_version"):
        if x.get(key) != y.get(key):
            yield f"{where}: {key} {x.get(key)!r} != {y.get(key)!r}"
    if x["source"].get("kind") != y["source"].get("kind"):
        yield f"{where}: source kind differs"
    names_x = [m["name"] for m in x["models"]]
    names_y = [m["name"] for m in y["models"]]
    if names_x != names_y:
        yield f"{where}: models differ: {sorted(set(names_x) ^ set(names_y))[:8]} (or their order)"
        return
    for mx, my in zip(x["models"], y["models"], strict=True):
        yield from _model(mx, my, f"{where}::{mx['name']}")


def _get(obj: Mapping[str, Any], key: str) -> Any:
    return obj.get(key, _DEFAULTS.get(key))


def _model(x: Mapping[str, Any], y: Mapping[str, Any], where: str) -> Iterator[str]:
    for key in _MODEL_KEYS:
        if _get(x, key) != _get(y, key):
            yield f"{where}: {key} {_get(x, key)!r} != {_get(y, key)!r}"
    yield from _subgraph(x["main"], y["main"], f"{where}/main")
    refs_x, refs_y = x.get("referenced", []), y.get("referenced", [])
    if len(refs_x) != len(refs_y):
        yield f"{where}: {len(refs_x)} != {len(refs_y)} referenced subgraphs"
    for n, (rx, ry) in enumerate(zip(refs_x, refs_y, strict=False)):
        yield from _subgraph(rx, ry, f"{where}/referenced/{n}")
    if len(x["examples"]) != len(y["examples"]):
        yield f"{where}: {len(x['examples'])} != {len(y['examples'])} examples"
        return
    operands = {o["name"]: o for o in x["main"]["operands"]}
    for n, (ex, ey) in enumerate(zip(x["examples"], y["examples"], strict=True)):
        if ex.get("name", "") != ey.get("name", ""):
            yield f"{where}/examples/{n}: name {ex.get('name')!r} != {ey.get('name')!r}"
        for side in ("inputs", "outputs"):
            if set(ex[side]) != set(ey[side]):
                yield f"{where}/examples/{n}/{side}: keys {sorted(ex[side])} != {sorted(ey[side])}"
                continue
            for key, vx in ex[side].items():
                operand = operands[key]
                if not _same_value(vx, ey[side][key], operand):
                    yield f"{where}/examples/{n}/{side}/{key}: values differ"


def _subgraph(x: Mapping[str, Any], y: Mapping[str, Any], where: str) -> Iterator[str]:
    for key in ("operations", "inputs", "outputs"):
        if x[key] != y[key]:
            yield f"{where}: {key} differ"
    if len(x["operands"]) != len(y["operands"]):
        yield f"{where}: {len(x['operands'])} != {len(y['operands'])} operands"
        return
    for n, (ox, oy) in enumerate(zip(x["operands"], y["operands"], strict=True)):
        if ox["name"] != oy["name"]:
            yield f"{where}/operands/{n}: name {ox['name']!r} != {oy['name']!r}"
        for key in _OPERAND_KEYS:
            if _get(ox, key) != _get(oy, key):
                yield f"{where}/operands/{n} ({ox['name']}): {key} {_get(ox, key)!r} != {_get(oy, key)!r}"
        if ("value" in ox) != ("value" in oy):
            yield f"{where}/operands/{n} ({ox['name']}): value only on one side"
        elif "value" in ox and not _same_value(ox["value"], oy["value"], ox):
            yield f"{where}/operands/{n} ({ox['name']}): values differ"


def _same_value(vx: Any, vy: Any, operand: Mapping[str, Any]) -> bool:
    if operand["lifetime"] == "SUBGRAPH":
        return vx == vy
    dims_x = vx["dims"] if isinstance(vx, dict) and "dims" in vx else None
    dims_y = vy["dims"] if isinstance(vy, dict) and "dims" in vy else None
    if dims_x != dims_y:
        return False
    ax = to_array(vx, operand["type"], operand.get("dims"))
    ay = to_array(vy, operand["type"], operand.get("dims"))
    return ax.dtype == ay.dtype and ax.shape == ay.shape and ax.tobytes() == ay.tobytes()
