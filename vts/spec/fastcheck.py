"""Compile the spec JSON Schema into a fast yes/no check.

Why: the `jsonschema` package interprets the schema node by node and needs
tens of seconds for the 6,140-model corpus; ``fastjsonschema`` knows drafts
4-7 only.  Our schema uses a small, fixed set of keywords, so we generate
straight-line Python for it (one function per schema node) that answers
only "valid or not".  A file that fails is re-validated with ``jsonschema``
for the detailed message (pointer and expectation), so the two only have to
agree on the verdict, which ``tests/spec/test_fastcheck.py`` checks on
mutated documents.  The compiler refuses any keyword it does not implement,
so a schema change can never make the fast check silently more lenient.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

#: Keywords that only annotate: they never change a verdict.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "$defs", "default", "examples"}
)
#: Keywords an inline expression can express (no statements needed).
_INLINE = frozenset({"type", "enum", "const", "pattern", "minimum", "$ref"})
_SUPPORTED = _INLINE | {
    "required", "properties", "additionalProperties", "propertyNames", "minProperties",
    "items", "prefixItems", "minItems", "maxItems", "uniqueItems",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
}

_TYPE_EXPR = {
    "object": "type({v}) is dict",
    "array": "type({v}) is list",
    "string": "type({v}) is str",
    "integer": "(type({v}) is int or (type({v}) is float and {v}.is_integer()))",
    "number": "(type({v}) is int or type({v}) is float)",
    "boolean": "type({v}) is bool",
    "null": "{v} is None",
}


class UnsupportedSchema(ValueError):
    """The schema uses a keyword this compiler does not implement."""


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``True != 1`` (as jsonschema's ``equal``)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def _unique(items: list[Any]) -> bool:
    return all(not json_equal(a, b) for i, a in enumerate(items) for b in items[i + 1 :])


def _keywords(schema: Mapping[str, Any]) -> set[str]:
    keys = set(schema) - _ANNOTATIONS
    unknown = keys - _SUPPORTED
    if unknown:
        raise UnsupportedSchema(f"keywords not supported by the fast check: {sorted(unknown)}")
    return keys


class _Generator:
    """Emits one ``def fN(v)`` per non-trivial schema node into ``self.lines``."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.lines: list[str] = []
        self.names: dict[int, str] = {}  # id(schema node) -> function name
        self.consts: dict[str, Any] = {"json_equal": json_equal, "_unique": _unique}
        self.keep: list[Any] = []  # keeps nodes alive so id() stays unique

    def const(self, value: Any) -> str:
        name = f"C{len(self.consts)}"
        self.consts[name] = value
        return name

    def resolve(self, pointer: str) -> Any:
        if not pointer.startswith("#/"):
            raise UnsupportedSchema(f"only local $ref is supported, got {pointer!r}")
        node: Any = self.root
        for part in pointer[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def expr(self, schema: Any, var: str) -> str:
        """A Python boolean expression that is true when ``var`` satisfies ``schema``."""
        if schema is True or schema == {}:
            return "True"
        if schema is False:
            return "False"
        keys = _keywords(schema)
        if not keys <= _INLINE:
            return f"{self.function(schema)}({var})"
        parts = self.type_and_scalars(schema, keys, var)
        return "(" + " and ".join(parts) + ")" if parts else "True"

    def type_and_scalars(self, schema: Mapping[str, Any], keys: set[str], var: str) -> list[str]:
        parts: list[str] = []
        types = schema.get("type")
        types = [types] if isinstance(types, str) else types
        if "$ref" in keys:
            parts.append(self.expr(self.resolve(schema["$ref"]), var))
        if types:
            parts.append("(" + " or ".join(_TYPE_EXPR[t].format(v=var) for t in types) + ")")
        if "enum" in keys:
            options = schema["enum"]
            if all(type(o) is str for o in options):
                parts.append(f"(type({var}) is str and {var} in {self.const(frozenset(options))})")
            else:
                parts.append(f"any(json_equal({var}, o) for o in {self.const(list(options))})")
        if "const" in keys:
            parts.append(f"json_equal({var}, {self.const(schema['const'])})")
        if "pattern" in keys:
            search = self.const(re.compile(schema["pattern"]).search)
            guard = "" if types == ["string"] else f"type({var}) is not str or "
            parts.append(f"({guard}{search}({var}) is not None)")
        if "minimum" in keys:
            low = schema["minimum"]
            numeric = types is not None and set(types) <= {"integer", "number"}
            guard = "" if numeric else f"not (type({var}) is int or type({var}) is float) or "
            parts.append(f"({guard}{var} >= {low!r})")
        return parts

    def function(self, schema: Mapping[str, Any]) -> str:
        key = id(schema)
        if key in self.names:
            return self.names[key]
        name = f"f{len(self.names)}"
        self.names[key] = name
        self.keep.append(schema)
        body: list[str] = []
        keys = _keywords(schema)
        scalar_parts = self.type_and_scalars(schema, keys & _INLINE, "v")
        if scalar_parts:
            body.append(f"if not ({' and '.join(scalar_parts)}): return False")
        types = schema.get("type")
        types = [types] if isinstance(types, str) else (types or [])
        obj = self.object_lines(schema, keys)
        if obj:
            body += obj if types == ["object"] else ["if type(v) is dict:"] + ["    " + x for x in obj]
        arr = self.array_lines(schema, keys)
        if arr:
            body += arr if types == ["array"] else ["if type(v) is list:"] + ["    " + x for x in arr]
        body += self.logic_lines(schema, keys)
        self.lines.append(f"def {name}(v):")
        self.lines += ["    " + line for line in body]
        self.lines.append("    return True")
        return name

    def object_lines(self, schema: Mapping[str, Any], keys: set[str]) -> list[str]:
        lines: list[str] = []
        required = list(schema.get("required", ()))
        if required:
            lines.append(f"if not ({' and '.join(f'{k!r} in v' for k in required)}): return False")
        if "minProperties" in keys:
            lines.append(f"if len(v) < {schema['minProperties']}: return False")
        if "propertyNames" in keys:
            check = self.expr(schema["propertyNames"], "x")
            lines.append(f"for x in v:\n        if not {check}: return False")
        props: Mapping[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra is False:
            lines.append(f"if not v.keys() <= {self.const(frozenset(props))}: return False")
        for prop, sub in props.items():
            check = self.expr(sub, "x")
            if check == "True":
                continue
            if prop in required:
                lines.append(f"x = v[{prop!r}]")
                lines.append(f"if not {check}: return False")
            else:
                lines.append(f"if {prop!r} in v:")
                lines.append(f"    x = v[{prop!r}]")
                lines.append(f"    if not {check}: return False")
        if extra is not False and extra is not True and extra != {}:
            known = self.const(frozenset(props))
            check = self.expr(extra, "x")
            lines.append(f"for k, x in v.items():\n        if k not in {known} and not {check}: return False")
        return lines

    def array_lines(self, schema: Mapping[str, Any], keys: set[str]) -> list[str]:
        lines: list[str] = []
        if "minItems" in keys:
            lines.append(f"if len(v) < {schema['minItems']}: return False")
        if "maxItems" in keys:
            lines.append(f"if len(v) > {schema['maxItems']}: return False")
        prefix = schema.get("prefixItems", [])
        for i, sub in enumerate(prefix):
            lines.append(f"if len(v) > {i}:")
            lines.append(f"    x = v[{i}]")
            lines.append(f"    if not {self.expr(sub, 'x')}: return False")
        if "items" in keys:
            check = self.expr(schema["items"], "x")
            if check != "True":
                source = f"v[{len(prefix)}:]" if prefix else "v"
                lines.append(f"for x in {source}:\n        if not {check}: return False")
        if schema.get("uniqueItems"):
            lines.append("if not _unique(v): return False")
        return lines

    def logic_lines(self, schema: Mapping[str, Any], keys: set[str]) -> list[str]:
        lines: list[str] = []
        for sub in schema.get("allOf", ()):
            lines.append(f"if not {self.expr(sub, 'v')}: return False")
        if "anyOf" in keys:
            lines.append(f"if not ({' or '.join(self.expr(s, 'v') for s in schema['anyOf'])}): return False")
        if "oneOf" in keys:
            count = " + ".join(f"bool({self.expr(s, 'v')})" for s in schema["oneOf"])
            lines.append(f"if ({count}) != 1: return False")
        if "not" in keys:
            lines.append(f"if {self.expr(schema['not'], 'v')}: return False")
        if "if" in keys:
            lines.append(f"if {self.expr(schema['if'], 'v')}:")
            lines.append(f"    if not {self.expr(schema.get('then', True), 'v')}: return False")
            lines.append("else:")
            lines.append(f"    if not {self.expr(schema.get('else', True), 'v')}: return False")
        return lines


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """Compile ``schema`` (a draft 2020-12 subset) into a ``value -> bool`` check."""
    gen = _Generator(schema)
    entry = gen.function(schema)
    namespace: dict[str, Any] = dict(gen.consts)
    exec(compile("\n".join(gen.lines), "<nnvts spec schema>", "exec"), namespace)
    return namespace[entry]
