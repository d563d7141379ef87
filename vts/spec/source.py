"""Reading spec files: decompression, parsing, and locating a JSON pointer's line.

JSON is parsed with the C ``json`` module and YAML with libyaml when present;
line numbers are worked out only when there is an error to report, so the
happy path of a 6,140-model corpus never pays for them.

The YAML dialect is the YAML 1.2 core schema rather than PyYAML's YAML 1.1:
``1e-5`` is a float (not a string), ``no``/``on`` are strings (not booleans),
``017`` is seventeen (not octal) and timestamps stay strings, so what an
author writes means the same in YAML and JSON.  Duplicate keys are errors.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from vts import bounds
from vts.spec.aliases import AliasBudgetExceeded, check_alias_expansion
from vts.spec.errors import SpecError, pointer_parts
from vts.spec.literals import Finding, Findings, Refused, json_pairs_hook, lone_surrogates
from vts.spec.reading import read_bounded

YAML_SUFFIXES = (".yaml", ".yml")
JSON_SUFFIXES = (".json",)
SPEC_SUFFIXES = tuple(s + gz for s in YAML_SUFFIXES + JSON_SUFFIXES for gz in ("", ".gz"))


def spec_kind(path: str) -> str | None:
    """``"yaml"`` or ``"json"`` for a spec file name, else None."""
    name = path[:-3] if path.endswith(".gz") else path
    if name.endswith(YAML_SUFFIXES):
        return "yaml"
    if name.endswith(JSON_SUFFIXES):
        return "json"
    return None


def read_text(path: str) -> str:
    """The text of ``path``, gunzipped when its name ends in ``.gz``; bounded (``vts.spec.reading``)."""
    data = read_bounded(path, bounds.MAX_YAML_BYTES if spec_kind(path) == "yaml" else bounds.MAX_SPEC_BYTES)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SpecError(path, line, "", f"expected UTF-8 text, got byte 0x{data[e.start]:02x}") from None


def parse(text: str, kind: str, path: str) -> dict[str, Any]:
    """Parse a spec document; it must be a non-empty mapping."""
    if not text.strip():
        raise SpecError(path, 1, "", "the file is empty: expected a spec mapping (nnvts: 1, name, ...)")
    findings = Findings()
    if kind == "json":
        try:
            document = json.loads(text, object_pairs_hook=json_pairs_hook(findings), parse_int=findings.json_integer,
                                  parse_float=findings.real)
        except json.JSONDecodeError as e:
            raise SpecError(path, e.lineno, "", f"invalid JSON: {e.msg} (column {e.colno})") from None
        except RecursionError:
            raise SpecError(path, None, "", "invalid JSON: nested too deeply") from None
        for problem in lone_surrogates(text, document):
            findings.items.append(Finding(None, problem.message, None, None, problem.pointer))
    else:
        document = _parse_yaml(text, path, findings)
    if findings.items:
        raise _findings_error(findings, document, text, kind, path)
    if document is None:
        raise SpecError(path, 1, "", "the file holds no document: expected a spec mapping (nnvts: 1, ...)")
    if not isinstance(document, dict):
        raise SpecError(path, 1, "", f"expected a mapping at the top level, got {json_kind(document)}")
    return document


def _findings_error(findings: Findings, document: Any, text: str, kind: str, path: str) -> SpecError:
    located = findings.problems(document)
    unknown = [problem.pointer for problem, line in located if line is None]
    lines = iter(locate_all(text, kind, unknown) if unknown else [])
    errors = [SpecError(path, line if line is not None else next(lines), problem.pointer, problem.message)
              for problem, line in located]
    errors.sort(key=lambda e: e.line if e.line is not None else 1 << 62)
    return SpecError(errors[0].path, errors[0].line, errors[0].pointer, errors[0].message, errors[1:])


def json_kind(value: Any) -> str:
    """The JSON kind of ``value`` with an article, for messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__


# --- YAML -------------------------------------------------------------------------------------

_INT = re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")


@functools.cache
def _yaml_loader() -> type:
    """A SafeLoader subclass speaking the YAML 1.2 core schema (see the module doc)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        """Records refused literals and duplicate keys in ``findings``; refuses alias bombs."""

        findings: Findings
        may_alias = True  # False when the text holds no "*": no alias, nothing to measure

        def construct_document(self, node: Any) -> Any:
            if self.may_alias:
                check_alias_expansion(node)
            return super().construct_document(node)

    Loader.yaml_implicit_resolvers = {}
    resolvers = [
        ("tag:yaml.org,2002:bool", _BOOL, "tTfF"),
        ("tag:yaml.org,2002:int", _INT, "-+0123456789"),
        ("tag:yaml.org,2002:float", _FLOAT, "-+0123456789."),
        ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
        ("tag:yaml.org,2002:merge", re.compile(r"^<<$"), "<"),  # anchors + merge keys share fields
    ]
    for tag, regexp, first in resolvers:
        Loader.add_implicit_resolver(tag, regexp, list(first))

    def construct_int(loader: Any, node: Any) -> Any:
        return loader.findings.integer(loader.construct_scalar(node), node.start_mark.line + 1)

    def construct_float(loader: Any, node: Any) -> Any:
        text = loader.construct_scalar(node).lower()
        if "inf" in text or "nan" in text:  # written as such: a golden may be non-finite
            return float(text.replace(".inf", "inf").replace(".nan", "nan"))
        return loader.findings.real(text, node.start_mark.line + 1)

    def construct_mapping(loader: Any, node: Any) -> dict[str, Any]:
        # Merge keys (<<) put the merged entries first; an explicit key may override those, but
        # two explicit entries with the same key are an error (YAML would keep the last silently).
        explicit = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)
        n_merged = len(node.value) - explicit
        mapping: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for i, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, int) and not isinstance(key, bool):
                key = str(key)  # example keys may be bare operand indices
            elif isinstance(key, Refused):
                key = key.text  # a huge bare number as a key: reported by findings, kept as text
            if not isinstance(key, str):
                raise yaml.constructor.ConstructorError(
                    None, None, f"expected a string key, got {json_kind(key)}", key_node.start_mark
                )
            if key in mapping and i >= n_merged and lines[key] > 0:
                loader.findings.duplicate(mapping, key, key_node.start_mark.line + 1, lines[key])
            lines[key] = key_node.start_mark.line + 1 if i >= n_merged else 0
            mapping[key] = loader.construct_object(value_node, deep=True)
        return mapping

    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
    Loader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    for tag in ("timestamp", "binary", "set", "omap", "pairs"):
        Loader.add_constructor(f"tag:yaml.org,2002:{tag}", _refuse_tag)
    return Loader


def _refuse_tag(loader: Any, node: Any) -> None:
    import yaml

    raise yaml.constructor.ConstructorError(
        None, None, f"unsupported YAML tag {node.tag}: specs hold JSON data only", node.start_mark
    )


def _parse_yaml(text: str, path: str, findings: Findings) -> Any:
    import yaml

    loader = _yaml_loader()(text)  # a SafeLoader subclass
    loader.findings = findings
    loader.may_alias = "*" in text
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        column = f" (column {mark.column + 1})" if mark is not None else ""
        what = " ".join(x for x in (e.context, e.problem) if x)
        raise SpecError(path, line, "", f"invalid YAML: {what}{column}") from None
    except yaml.YAMLError as e:
        raise SpecError(path, None, "", f"invalid YAML: {e}") from None
    except AliasBudgetExceeded as e:
        raise SpecError(path, e.line, e.pointer, e.message) from None
    except RecursionError:
        raise SpecError(path, None, "", "invalid YAML: nested too deeply") from None
    finally:
        loader.dispose()


# --- locating a pointer -----------------------------------------------------------------------


def locate(text: str, kind: str, pointer: str) -> int | None:
    """The 1-based line of the value at ``pointer`` (or of its deepest existing ancestor).

    For a mapping entry it is the line of the key, which is where an author
    looks for a value written as a block below its key.
    """
    return locate_all(text, kind, [pointer])[0]


def locate_all(text: str, kind: str, pointers: list[str]) -> list[int | None]:
    """``locate`` for several pointers, composing a YAML text only once."""
    try:
        if kind == "json":
            return [_locate_json(text, pointer_parts(p)) for p in pointers]
        import yaml

        root = yaml.compose(text, Loader=_yaml_loader())
        return [_locate_yaml(root, pointer_parts(p)) for p in pointers]
    except Exception:  # locating is best effort; the pointer is still reported
        return [None] * len(pointers)


def _locate_yaml(node: Any, parts: list[str]) -> int | None:
    import yaml

    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == part:
                    line, node = key_node.start_mark.line + 1, value_node
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            return line
    return line


_WS = re.compile(r"[ \t\n\r]*")


def _locate_json(text: str, parts: list[str]) -> int | None:
    decoder = json.JSONDecoder()
    scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    best = pos
    for part in parts:
        if text[pos] == "{":
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            found = False
            while text[pos] == '"':
                key_at = pos
                key, pos = scanstring(text, pos + 1)
                pos = _WS.match(text, pos).end() + 1  # type: ignore[union-attr]  # past ':'
                pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
                if key == part:
                    best, found = key_at, True
                    break
                pos = _skip_json_value(decoder, text, pos)
            if not found:
                break
        elif text[pos] == "[" and part.isdigit():
            newlines = text.count("\n", pos)
            if newlines == 0 or (newlines == 1 and text.endswith("\n")):  # one line left: no element walk
                best = pos
                break
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            for _ in range(int(part)):
                if text[pos] == "]":
                    break
                pos = _skip_json_value(decoder, text, pos)
            if text[pos] == "]":
                break
            best = pos
        else:
            break
    return text.count("\n", 0, best) + 1


def _skip_json_value(decoder: json.JSONDecoder, text: str, pos: int) -> int:
    """Position after the value at ``pos`` and its trailing comma, if any."""
    _, pos = decoder.raw_decode(text, pos)
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if text[pos] == ",":
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    return pos
