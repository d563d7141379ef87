"""Semantic load-time checks the schema cannot express (docs/spec-format.md, "Load-time errors").

Names unique per subgraph and per file, every reference resolvable, type
names known (or of a declared extension), and every value's size, kinds and
range consistent with its operand's type and dims.  A model that is
well-formed but breaks a HAL rule is deliberately *not* an error here: it is
a legitimate case, usually marked ``expect_failure``.

The checks run once per loaded file over the whole corpus, so the loops are
plain and allocation-light; they collect problems (up to a limit) rather
than stop at the first, so an author sees several mistakes in one run.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

from vts.hal.enums import OperationType
from vts.model.compare import Tolerance, ToleranceError
from vts.spec.errors import Problem, pointer_join
from vts.spec.values import FLOAT32_OVERFLOW, TYPES, check_value, expected_count

MAX_PROBLEMS = 50

_OPERATION_NAMES = frozenset(OperationType.__members__)
_SUBGRAPH_REFERENCES = "an operand name, or an operand index below {n}"


class _Problems(list[Problem]):
    def add(self, pointer: str, message: str) -> None:
        self.append(Problem(pointer, message))

    @property
    def full(self) -> bool:
        return len(self) >= MAX_PROBLEMS


def document_problems(document: Mapping[str, Any]) -> list[Problem]:
    """Semantic problems of a schema-valid document, in document order (at most ``MAX_PROBLEMS``)."""
    problems = _Problems()
    _check_name(document["name"], "/name", problems)
    seen: dict[str, int] = {}
    for i, model in enumerate(document["models"]):
        base = f"/models/{i}"
        name = model["name"]
        _check_name(name, base + "/name", problems)
        if name in seen:
            problems.add(base + "/name", f"duplicate model name {name!r} (also model {seen[name]}): "
                         "model names must be unique in a file")
        else:
            seen[name] = i
        tolerance = model.get("multinomial_tolerance", 0.0)
        if not math.isfinite(tolerance):
            problems.add(base + "/multinomial_tolerance", f"expected a finite tolerance, got {tolerance!r}")
        _check_tolerance(model, base, problems)
        check_model(model, base, problems)
        if problems.full:
            break
    return problems[:MAX_PROBLEMS]


def _check_tolerance(model: Mapping[str, Any], base: str, problems: _Problems) -> None:
    """The tolerance becomes typed criteria at load time: what ``Tolerance`` refuses is a load error.

    The schema already limits a spec's keys; this keeps the typed criteria
    the authority, so the two cannot drift apart unnoticed.
    """
    try:
        Tolerance.from_mapping(model.get("tolerance", {}))
    except ToleranceError as error:
        pointer = pointer_join(base, "tolerance", error.key) if error.key else base + "/tolerance"
        problems.add(pointer, error.message)


def check_model(model: Mapping[str, Any], base: str, problems: _Problems) -> None:
    extensions = frozenset(model.get("extensions", ()))
    referenced = model.get("referenced", ())
    names = _check_subgraph(model["main"], base + "/main", extensions, len(referenced), problems)
    for j, subgraph in enumerate(referenced):
        _check_subgraph(subgraph, f"{base}/referenced/{j}", extensions, len(referenced), problems)
    _check_examples(model, names, base, problems)


def _check_name(name: str, pointer: str, problems: _Problems) -> None:
    # The schema's pattern uses "$", which Python also matches before a final newline.
    if name.endswith("\n"):
        problems.add(pointer, f"expected a name made of [A-Za-z0-9_], got {name!r}")


def _unknown_type(type_name: str, kind: str, known: frozenset[str] | Mapping[str, Any],
                  extensions: frozenset[str]) -> str | None:
    """Why ``type_name`` is not a HAL name or a declared extension's, or None if it is fine."""
    if ":" in type_name:
        extension = type_name.rsplit(":", 1)[0]
        if extension in extensions:
            return None
        declared = ", ".join(sorted(extensions)) or "none"
        return (f"{kind} type {type_name!r} names extension {extension!r}, which the model does not "
                f"declare in `extensions` (declared: {declared})")
    if type_name in known:
        return None
    close = difflib.get_close_matches(type_name, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} type {type_name!r}: expected a HAL {kind} type name or EXTENSION:NAME{hint}"


def _check_subgraph(subgraph: Mapping[str, Any], base: str, extensions: frozenset[str], n_referenced: int,
                    problems: _Problems) -> dict[str, int]:
    operands = subgraph["operands"]
    names: dict[str, int] = {}
    for k, operand in enumerate(operands):
        name = operand["name"]
        if name in names:
            problems.add(f"{base}/operands/{k}/name", f"duplicate operand name {name!r} (also operand "
                         f"{names[name]}): operand names must be unique in a subgraph")
        else:
            names[name] = k
            if name.endswith("\n"):
                _check_name(name, f"{base}/operands/{k}/name", problems)
        _check_operand_numbers(operand, f"{base}/operands/{k}", problems)
        type_name = operand["type"]
        et = TYPES.get(type_name)
        if et is None:
            why = _unknown_type(type_name, "operand", TYPES, extensions)
            if why:
                problems.add(f"{base}/operands/{k}/type", why)
        if "value" not in operand:
            continue
        value = operand["value"]
        if operand["lifetime"] == "SUBGRAPH":
            if value >= n_referenced:
                problems.add(f"{base}/operands/{k}/value", f"expected an index into the model's "
                             f"{n_referenced} referenced subgraph(s), got {value}")
        elif et is not None and et.kind != "none":
            dims = operand.get("dims")
            problem = check_value(value, et, expected_count(et, dims), f"{base}/operands/{k}/value", dims)
            if problem:
                problems.append(problem)
    n = len(operands)
    for q, operation in enumerate(subgraph["operations"]):
        type_name = operation["type"]
        if type_name not in _OPERATION_NAMES:
            why = _unknown_type(type_name, "operation", _OPERATION_NAMES, extensions)
            if why:
                problems.add(f"{base}/operations/{q}/type", why)
        for side in ("inputs", "outputs"):
            for r, ref in enumerate(operation[side]):
                if not (ref < n if type(ref) is int else ref in names):
                    problems.add(f"{base}/operations/{q}/{side}/{r}", _bad_reference(ref, n))
    for side in ("inputs", "outputs"):
        for r, ref in enumerate(subgraph[side]):
            if not (ref < n if type(ref) is int else ref in names):
                problems.add(f"{base}/{side}/{r}", _bad_reference(ref, n))
    return names


#: HAL field ranges: dims are uint32, zero points int32, scales float32 (finite: a scale is a ratio).
_UINT32_MAX = (1 << 32) - 1
_INT32 = (-(1 << 31), (1 << 31) - 1)


def _finite_float32(x: float) -> bool:
    return -FLOAT32_OVERFLOW < x < FLOAT32_OVERFLOW  # False for NaN and the infinities


def _check_operand_numbers(operand: Mapping[str, Any], pointer: str, problems: _Problems) -> None:
    """Dims, zero point and scales within the HAL field types (a huge literal would wrap or overflow)."""
    for d, size in enumerate(operand.get("dims") or ()):
        if size > _UINT32_MAX:
            problems.add(f"{pointer}/dims/{d}", f"dimension {size} is out of range: HAL dims are uint32 "
                         f"(0..{_UINT32_MAX})")
    zero_point = operand.get("zero_point", 0)
    if not _INT32[0] <= zero_point <= _INT32[1]:
        problems.add(f"{pointer}/zero_point", f"zero point {zero_point} is out of range: HAL zero points are "
                     f"int32 ({_INT32[0]}..{_INT32[1]})")
    scales = [("scale", operand.get("scale", 0.0))]
    channel_scales = operand.get("channel_quant", {}).get("scales", ())
    scales += [(f"channel_quant/scales/{i}", x) for i, x in enumerate(channel_scales)]
    for where, scale in scales:
        if not _finite_float32(scale):
            problems.add(f"{pointer}/{where}", f"scale {scale!r} is not a finite float32: HAL scales are float32 "
                         "ratios")


def _bad_reference(ref: int | str, n: int) -> str:
    if isinstance(ref, int):
        return f"operand index {ref} is out of range: the subgraph has {n} operand(s)"
    return f"no operand is named {ref!r}: expected {_SUBGRAPH_REFERENCES.format(n=n)}"


def resolve(ref: int | str, names: Mapping[str, int], n: int) -> int | None:
    """Operand index of a reference (index or name), or None.  Example keys are strings:
    a key is a name first, and a decimal index only if no operand has that name."""
    if type(ref) is int:
        return ref if 0 <= ref < n else None
    k = names.get(ref)  # type: ignore[arg-type]
    if k is None and isinstance(ref, str) and ref.isdigit() and int(ref) < n:
        return int(ref)
    return k


def _check_examples(model: Mapping[str, Any], names: dict[str, int], base: str, problems: _Problems) -> None:
    main = model["main"]
    operands = main["operands"]
    n = len(operands)
    allowed = {
        "inputs": {resolve(r, names, n) for r in main["inputs"]},
        "outputs": {resolve(r, names, n) for r in main["outputs"]},
    }
    seen: dict[str, int] = {}
    for e, example in enumerate(model["examples"]):
        where = f"{base}/examples/{e}"
        name = example.get("name", "")
        if name in seen:
            shown = repr(name) if name else "no name"
            problems.add(where + ("/name" if "name" in example else ""), f"example {e} has the same name "
                         f"({shown}) as example {seen[name]}: each example is a case and needs a unique name")
        else:
            seen[name] = e
        for side in ("inputs", "outputs"):
            given: dict[int, str] = {}
            for key, value in example[side].items():
                pointer = f"{where}/{side}/{pointer_join('', key)[1:]}"
                k = resolve(key, names, n)
                if k is not None and k in given:
                    problems.add(pointer, f"operand {operands[k]['name']!r} is given twice (as {given[k]!r} "
                                 f"and {key!r})")
                    continue
                if k is not None:
                    given[k] = key
                if k is None:
                    problems.add(pointer, f"no operand of the main subgraph is named {key!r} "
                                 f"(nor has that index)")
                    continue
                if k not in allowed[side]:
                    indices = sorted(x for x in allowed[side] if x is not None)
                    listed = ", ".join(operands[i]["name"] for i in indices) or "none"
                    problems.add(pointer, f"operand {operands[k]['name']!r} is not one of the main "
                                 f"subgraph's {side} (expected one of: {listed})")
                    continue
                _check_example_value(value, operands[k], pointer, problems)


def _check_example_value(value: Any, operand: Mapping[str, Any], pointer: str, problems: _Problems) -> None:
    et = TYPES.get(operand["type"])
    if et is None or et.kind == "none":
        return
    if isinstance(value, dict) and "dims" in value:
        dims = value["dims"]
        count = 1
        for d in dims:
            count *= d
        if "value" in value:
            problem = check_value(value["value"], et, count, pointer + "/value", dims)
        else:
            problem = check_value({"b64": value["b64"]}, et, count, pointer, dims)
    else:
        dims = operand.get("dims")
        problem = check_value(value, et, expected_count(et, dims), pointer, dims)
    if problem:
        problems.append(problem)
