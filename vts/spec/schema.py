"""The spec JSON Schema: a fast verdict for every file, a detailed report for bad ones.

``schema.json`` (draft 2020-12) is the single description of the document
shape.  Every file is checked with the code compiled from it by
``fastcheck`` (a fraction of a second for the whole corpus); only a file
that fails is run through ``jsonschema`` to find each problem's pointer and
turn the validator's wording into "expected X, got Y" messages.  The
schema's ``description`` strings are written to complete "expected ...".
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

from vts.spec.errors import Problem, pointer_join, pointer_parts
from vts.spec.source import json_kind

#: Stop collecting schema problems after this many: the first ones matter.
MAX_PROBLEMS = 50


@functools.cache
def schema() -> dict[str, Any]:
    """The spec schema, parsed from the package data."""
    text = resources.files("vts.spec").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _part(name: str) -> dict[str, Any]:
    """The schema of a part of a document: ``document`` (all of it), ``shell`` (everything but the
    models' contents) or ``model`` (one model)."""
    root = schema()
    if name == "document":
        return root
    if name == "shell":
        properties = {**root["properties"], "models": {"type": "array", "minItems": 1}}
        return {**root, "properties": properties}
    return {"$ref": "#/$defs/model", "$defs": root["$defs"]}


@functools.cache
def _fast_check(part: str) -> Callable[[Any], bool]:
    from vts.spec.fastcheck import compile_schema

    return compile_schema(_part(part))


@functools.cache
def _validator(part: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(_part(part))


def schema_problems(document: Any) -> list[Problem]:
    """Problems of ``document`` against the schema, in document order; [] when it conforms.

    jsonschema only sees the parts that fail the fast check (the shell and
    the failing models), which keeps a bad model in a 384-model file cheap.
    """
    if _fast_check("document")(document):
        return []
    errors: list[tuple[Any, ...]] = [((), e) for e in _validator("shell").iter_errors(document)]
    models = document.get("models") if isinstance(document, dict) else None
    for i, model in enumerate(models if isinstance(models, list) else ()):
        if len(errors) >= MAX_PROBLEMS:
            break
        if not _fast_check("model")(model):
            sample = _Sample(model)
            errors += [(("models", i), e, sample) for e in _validator("model").iter_errors(sample.model)]
    errors.sort(key=lambda item: _path_key((*item[0], *item[1].absolute_path)))
    problems: list[Problem] = []
    for prefix, error, *sampled in errors:
        found = list(_describe(error, prefix))
        if sampled:
            found = [Problem(sampled[0].original_pointer(p.pointer, len(prefix)), p.message) for p in found]
        problems.extend(found)
        if len(problems) >= MAX_PROBLEMS:
            break
    if not problems:  # the two validators disagree: a bug in fastcheck, never hide the file
        problems.append(Problem("", "the document breaks the schema (internal: no detail available)"))
    return problems[:MAX_PROBLEMS]


#: Scalar lists longer than this are sampled before ``jsonschema`` sees them (see ``_Sample``).
SAMPLE_FROM = 256


class _Sample:
    """A failing model with its long scalar lists cut to a sample, for the slow validator.

    ``jsonschema`` takes ~30 µs per element: an invalid model with a
    12-million-element value list would take minutes to report.  A list of
    scalars is judged by its items' kinds, so its first elements plus the
    first element of each other kind carry every item problem; pointers into
    a sample are mapped back to the original indices.  If the sample should
    pass where the model fails (a rule the sample cannot see), the whole
    model is validated instead: slow, but never a problem missed entirely.
    """

    def __init__(self, model: Any) -> None:
        self.maps: dict[int, list[int]] = {}
        self.model = self._sampled(model)
        if self.maps and _fast_check("model")(self.model):
            self.maps.clear()
            self.model = model

    def _sampled(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._sampled(v) for k, v in value.items()}
        if not isinstance(value, list):
            return value
        kinds = set(map(type, value)) if len(value) > SAMPLE_FROM else {list}
        if not kinds & {list, dict}:
            seen = set(map(type, value[:16]))
            indices = list(range(16))
            indices += sorted(next(i for i, x in enumerate(value) if type(x) is kind) for kind in kinds - seen)
            sample = [value[i] for i in indices]
            self.maps[id(sample)] = indices
            return sample
        return [self._sampled(x) for x in value]

    def original_pointer(self, pointer: str, skip: int) -> str:
        """``pointer`` (into the sampled model, after ``skip`` prefix parts) with original indices."""
        if not self.maps:
            return pointer
        parts = pointer_parts(pointer)
        node: Any = self.model
        for n in range(skip, len(parts)):
            indices = self.maps.get(id(node))
            if indices is not None and parts[n].isdigit() and int(parts[n]) < len(indices):
                parts[n] = str(indices[int(parts[n])])
                break
            try:
                node = node[int(parts[n])] if isinstance(node, list) else node[parts[n]]
            except (KeyError, IndexError, ValueError, TypeError):
                break
        return pointer_join("", *parts)


def _path_key(path: Any) -> list[tuple[int, Any]]:
    return [(0, p) if isinstance(p, int) else (1, p) for p in path]


def _pointer(path: Any) -> str:
    return pointer_join("", *path)


def short(value: Any, limit: int = 60) -> str:
    """A compact JSON rendering of ``value`` for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _got(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return f"{json_kind(value)} {short(value)}"
    return short(value)


def _expected(error: Any) -> str | None:
    schema_node = error.schema
    return schema_node.get("description") if isinstance(schema_node, dict) else None


def _describe(error: Any, prefix: tuple[Any, ...] = ()) -> Iterator[Problem]:
    """Turn one jsonschema error into problems with "expected ..., got ..." messages."""
    path = (*prefix, *error.absolute_path)
    pointer = _pointer(path)
    kind, instance, rule = error.validator, error.instance, error.validator_value
    if kind in ("anyOf", "oneOf") and error.context:
        branch = _matching_branch(error)
        if branch is not None:
            for sub in sorted(branch, key=lambda e: _path_key(e.absolute_path)):
                yield from _describe(sub, prefix)
            return
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        for key in instance:
            if key not in allowed:
                expected = ", ".join(allowed)
                message = f"unknown key {key!r} (expected one of: {expected})"
                yield Problem(pointer_join(pointer, key), message)
        return
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        yield Problem(pointer, f"missing required key {missing!r}")
        return
    if kind == "propertyNames":
        what = error.schema.get("propertyNames", {}).get("description", "a name made of [A-Za-z0-9_]")
        for key in instance:
            if not _valid_key(key, error.schema["propertyNames"]):
                yield Problem(pointer_join(pointer, key), f"expected a key that is {what}, got {key!r}")
        return
    described = _expected(error)
    if kind == "const" and path == ("nnvts",):
        yield Problem(pointer, f"unsupported format version {short(instance)}: expected {described}")
        return
    if described:
        yield Problem(pointer, f"expected {described}, got {_got(instance)}")
        return
    templates = {
        "type": lambda: f"expected {_kinds(rule)}, got {_got(instance)}",
        "enum": lambda: f"expected one of {', '.join(short(x) for x in rule)}, got {_got(instance)}",
        "const": lambda: f"expected {short(rule)}, got {_got(instance)}",
        "minimum": lambda: f"expected a number >= {rule}, got {_got(instance)}",
        "minItems": lambda: f"expected at least {rule} item(s), got {len(instance)}",
        "maxItems": lambda: f"expected at most {rule} item(s), got {len(instance)}",
        "minProperties": lambda: f"expected at least {rule} key(s), got {len(instance)}",
        "uniqueItems": lambda: f"expected unique items, got {_got(instance)}",
        "pattern": lambda: f"expected a string matching {rule}, got {_got(instance)}",
        "not": lambda: f"unexpected value {_got(instance)}",
        "false": lambda: f"unexpected value {_got(instance)}",
    }
    template = templates.get(kind)
    yield Problem(pointer, template() if template else error.message)


def _kinds(rule: Any) -> str:
    names = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
             "number": "a number", "boolean": "a boolean", "null": "null"}
    rules = [rule] if isinstance(rule, str) else list(rule)
    return " or ".join(names.get(r, r) for r in rules)


def _valid_key(key: str, name_schema: dict[str, Any]) -> bool:
    import re

    pattern = name_schema.get("pattern")
    return pattern is None or re.search(pattern, key) is not None


def _matching_branch(error: Any) -> list[Any] | None:
    """The errors of the one anyOf/oneOf branch that fits the instance's kind, if exactly one does.

    A value list with one bad element fails every branch, but only the list
    branch "almost" matched; reporting its element error is far more useful
    than "not valid under any of the given schemas".
    """
    branches: dict[int, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0] if sub.schema_path else -1, []).append(sub)
    fitting = [
        errs for errs in branches.values()
        if not any(e.validator in ("type", "enum", "const", "required") and not e.relative_path for e in errs)
    ]
    return fitting[0] if len(fitting) == 1 else None
