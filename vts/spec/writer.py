"""Writing expanded specs as generated cases (``nnvts generate``), and checking they are fresh.

One JSON file per spec, named after the spec (spec names are suite-unique),
holding the concrete-layer document.  The rendering is canonical — keys in
the order of docs/spec-format.md, one operand, operation or example value per
line — so output is byte-for-byte deterministic and a change to a spec shows
up as a small diff.  ``generated_tests/`` belongs to the generator: any
``*.json`` directly in it that no spec produces is stale and removed.
Nothing is written until every spec has loaded, so a broken spec leaves the
directory as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vts.spec.errors import SpecError
from vts.spec.loader import SpecFile
from vts.spec.strict import strict_document

GENERATED_SUFFIX = ".json"

#: Canonical key order of each object kind; keys not listed follow, sorted.
_ORDER: dict[str, tuple[str, ...]] = {
    "document": ("nnvts", "name", "hal_version", "description", "source", "models"),
    "source": ("kind", "detail"),
    "model": ("name", "hal_version", "relaxed", "expect_failure", "tolerance", "multinomial_tolerance",
              "extensions", "main", "referenced", "examples"),
    "subgraph": ("operands", "operations", "inputs", "outputs"),
    "operand": ("name", "type", "dims", "scale", "zero_point", "channel_quant", "lifetime", "value",
                "ignored", "extension_params"),
    "operation": ("type", "inputs", "outputs"),
    "example": ("name", "inputs", "outputs"),
    "channel_quant": ("dim", "scales"),
    "long_value": ("dims", "value", "b64"),
}


@dataclass(frozen=True, slots=True)
class GenerateResult:
    """What ``write_generated`` did (or, with ``check``, would do) in ``out_dir``."""

    out_dir: str
    written: tuple[str, ...]  # created or changed
    removed: tuple[str, ...]  # stale: no spec produces them
    unchanged: tuple[str, ...]
    applied: bool  # False under --check: nothing was written or removed

    @property
    def stale(self) -> tuple[str, ...]:
        """Files that did not match the specs (written or removed); non-empty makes ``--check`` exit 1."""
        return self.written + self.removed

    def __str__(self) -> str:
        verb = ("would write", "would remove") if self.stale and not self.applied else ("wrote", "removed")
        return (f"{self.out_dir}: {verb[0]} {len(self.written)}, {verb[1]} {len(self.removed)}, "
                f"{len(self.unchanged)} unchanged")


def _ordered(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    order = _ORDER[kind]
    keys = [k for k in order if k in obj] + sorted(k for k in obj if k not in order)
    return {k: obj[k] for k in keys}


def _compact(value: Any) -> str:
    # allow_nan=False: strict JSON only; strict_document has moved non-finite values to {b64}.
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


def _operand(operand: Mapping[str, Any]) -> dict[str, Any]:
    out = _ordered(operand, "operand")
    if "channel_quant" in out:
        out["channel_quant"] = _ordered(out["channel_quant"], "channel_quant")
    return out


def _example_value(value: Any) -> Any:
    return _ordered(value, "long_value") if isinstance(value, dict) and "dims" in value else value


def _block(key: str, items: list[str], indent: str, opener: str = "[", closer: str = "]") -> list[str]:
    """``"key": [`` + one item per line + ``]``, or ``"key": []`` when empty."""
    if not items:
        return [f"{indent}{_compact(key)}: {opener}{closer}"]
    inner = indent + "  "
    return ([f"{indent}{_compact(key)}: {opener}"] + [f"{inner}{item}," for item in items[:-1]]
            + [f"{inner}{items[-1]}", f"{indent}{closer}"])


def _subgraph_lines(subgraph: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    for key, value in _ordered(subgraph, "subgraph").items():
        if key == "operands":
            lines.append(_block(key, [_compact(_operand(o)) for o in value], indent))
        elif key == "operations":
            lines.append(_block(key, [_compact(_ordered(o, "operation")) for o in value], indent))
        else:
            lines.append([f"{indent}{_compact(key)}: {_compact(value)}"])
    return _join(lines)


def _example_lines(example: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    for key, value in _ordered(example, "example").items():
        if key in ("inputs", "outputs"):
            items = [f"{_compact(k)}: {_compact(_example_value(v))}" for k, v in value.items()]
            lines.append(_block(key, items, indent, "{", "}"))
        else:
            lines.append([f"{indent}{_compact(key)}: {_compact(value)}"])
    return _join(lines)


def _model_lines(model: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    inner = indent + "  "
    for key, value in _ordered(model, "model").items():
        if key == "main":
            lines.append([f"{indent}\"main\": {{", *_subgraph_lines(value, inner), f"{indent}}}"])
        elif key in ("referenced", "examples"):
            render = _subgraph_lines if key == "referenced" else _example_lines
            items = [["{", *render(item, inner + "  "), inner + "}"] for item in value]
            lines.append(_nested_block(key, items, indent))
        elif key == "tolerance":
            lines.append([f"{indent}{_compact(key)}: {_compact(dict(sorted(value.items())))}"])
        else:
            lines.append([f"{indent}{_compact(key)}: {_compact(value)}"])
    return _join(lines)


def _nested_block(key: str, items: list[list[str]], indent: str) -> list[str]:
    """``"key": [`` + multi-line items (first line unindented) + ``]``."""
    if not items:
        return [f"{indent}{_compact(key)}: []"]
    inner = indent + "  "
    lines = [f"{indent}{_compact(key)}: ["]
    for n, item in enumerate(items):
        lines.append(inner + item[0])
        lines += item[1:-1]
        lines.append(item[-1] + ("," if n < len(items) - 1 else ""))
    lines.append(f"{indent}]")
    return lines


def _join(groups: list[list[str]]) -> list[str]:
    """Concatenate line groups, putting a comma after every group but the last."""
    out: list[str] = []
    for n, group in enumerate(groups):
        out += [*group[:-1], group[-1] + ("," if n < len(groups) - 1 else "")]
    return out


def render(document: Mapping[str, Any]) -> str:
    """The canonical text of a concrete-layer document (strict JSON, ending in a newline)."""
    document = strict_document(document)
    lines = []
    for key, value in _ordered(document, "document").items():
        if key == "models":
            models = [["{", *_model_lines(m, "      "), "    }"] for m in value]
            lines.append(_nested_block(key, models, "  "))
        elif key == "source":
            lines.append([f"  \"source\": {_compact(_ordered(value, 'source'))}"])
        else:
            lines.append([f"  {_compact(key)}: {_compact(value)}"])
    return "\n".join(["{", *_join(lines), "}"]) + "\n"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=GENERATED_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_generated(spec_files: Iterable[SpecFile], out_dir: str, *, check: bool) -> GenerateResult:
    """Write one canonical JSON file per spec into ``out_dir`` and remove stale ones.

    With ``check`` nothing is written or removed; the result says what would
    change.  Every spec is loaded (and rendered) before the first write.
    """
    owners: dict[str, str] = {}
    changed: dict[str, str] = {}  # path -> new text; unchanged files are not kept in memory
    unchanged: list[str] = []
    for spec in spec_files:
        if spec.name in owners:
            raise SpecError(spec.path, None, "/name", f"spec name {spec.name!r} is also the name of "
                            f"{owners[spec.name]}: spec names must be unique, they name the generated files")
        owners[spec.name] = spec.path
        path = os.path.join(out_dir, spec.name + GENERATED_SUFFIX)
        try:
            text = render(spec.document)
        except ValueError as error:  # a non-finite number where no {b64} form exists
            raise SpecError(spec.path, None, "", f"cannot be written as strict JSON: {error}") from None
        if _read(path) == text:
            unchanged.append(path)
        else:
            changed[path] = text
    produced = {os.path.join(out_dir, name + GENERATED_SUFFIX) for name in owners}
    existing = sorted(
        os.path.join(out_dir, f) for f in (os.listdir(out_dir) if os.path.isdir(out_dir) else ())
        if f.endswith(GENERATED_SUFFIX) and not f.startswith(".")
    )
    removed = [p for p in existing if p not in produced]
    if not check:
        os.makedirs(out_dir, exist_ok=True)
        for path in sorted(changed):
            _write_atomically(path, changed[path])
        for path in removed:
            os.unlink(path)
    return GenerateResult(
        out_dir, tuple(sorted(changed)), tuple(removed), tuple(sorted(unchanged)), applied=not check
    )
