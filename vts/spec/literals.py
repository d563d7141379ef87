"""Refusing literals a parser would silently bend: huge integers, overflowing floats, duplicate keys.

``json.loads`` reads ``1e400`` as infinity, keeps the last of two equal keys,
and turns a 5000-digit integer into a ``ValueError`` traceback; YAML does the
same.  The parsers call the hooks here instead; a hook that refuses a
literal records a ``Finding`` and puts a ``Refused`` placeholder in the
document, so parsing goes on and every problem of the file is reported at
once, each with its JSON pointer (found afterwards by looking the placeholder
or mapping up in the document; that walk happens only when there is
something to report).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from vts import bounds
from vts.spec.errors import Problem, pointer_join


class Refused:
    """Stands in the document for a refused literal (identity is what matters)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"<refused {self.text[:20]}>"


@dataclass(frozen=True, slots=True)
class Finding:
    """A refused literal (``target`` is its placeholder), a duplicate ``key`` of mapping ``target``,
    or a problem whose ``pointer`` is already known."""

    target: object
    message: str
    key: str | None = None
    line: int | None = None
    pointer: str | None = None


@dataclass
class Findings:
    """What the hooks refused while one document was parsed."""

    items: list[Finding] = field(default_factory=list)

    def integer(self, text: str, line: int | None = None) -> int | Refused:
        """``int(text)``, or a placeholder when it is beyond 64 bits (decided before converting)."""
        if len(text) <= bounds.MAX_INT_CHARS:
            based = text.startswith(("0x", "0o"))  # YAML 1.2 core schema forms
            value = int(text[2:], 16 if text[1] == "x" else 8) if based else int(text)
            if abs(value) <= bounds.MAX_INT_MAGNITUDE:
                return value
        return self._refuse(text, f"integer {_abbreviated(text)} is too large: spec integers are at most "
                            "64 bits (every HAL integer fits in 32)", line)

    def json_integer(self, text: str) -> int | Refused:
        """``integer`` for JSON's decimal tokens, with a fast path for the common short ones."""
        return int(text) if len(text) < 19 else self.integer(text)

    def real(self, text: str, line: int | None = None) -> float | Refused:
        """``float(text)``, or a placeholder when a finite literal overflows to infinity."""
        value = float(text)
        if math.isinf(value):
            return self._refuse(text, f"{_abbreviated(text)} overflows to infinity even as a 64-bit float: "
                                "write infinity as such (.inf in YAML) or give a finite value", line)
        return value

    def duplicate(self, mapping: dict[str, Any], key: str, line: int | None = None, first: int | None = None) -> None:
        where = f" (first at line {first})" if first else ""
        self.items.append(Finding(mapping, f"duplicate key {key!r}{where}: a key may appear once in a mapping",
                                  key, line))

    def _refuse(self, text: str, message: str, line: int | None) -> Refused:
        placeholder = Refused(text)
        self.items.append(Finding(placeholder, message, None, line))
        return placeholder

    def problems(self, document: Any) -> list[tuple[Problem, int | None]]:
        """Each finding as a located problem (pointer found in ``document``; line when known)."""
        pointers = find_pointers(document, {id(f.target) for f in self.items if f.pointer is None})
        out = []
        for finding in self.items:
            pointer = finding.pointer if finding.pointer is not None else pointers.get(id(finding.target), "")
            if finding.key is not None:
                pointer = pointer_join(pointer, finding.key)
            out.append((Problem(pointer, finding.message), finding.line))
        return out


def json_pairs_hook(findings: Findings):
    """An ``object_pairs_hook`` that records duplicate keys (the last value is kept meanwhile)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping = dict(pairs)
        if len(mapping) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    findings.duplicate(mapping, key)
                seen.add(key)
        return mapping

    return hook


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogates(text: str, document: Any) -> list[Problem]:
    """Strings holding a lone UTF-16 surrogate (JSON ``"\\ud800"``): they cannot be written as UTF-8,
    so every report or generated file carrying them would fail.  Looked for only when the text
    has such an escape (a valid pair decodes to one character and is fine)."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return []
    problems = []
    for obj, pointer in _walk(document):
        if isinstance(obj, dict):
            problems += [Problem(pointer_join(pointer, key), "a key holds a lone UTF-16 surrogate: expected "
                                 "valid Unicode text") for key in obj if not _encodable(key)]
        elif isinstance(obj, str) and not _encodable(obj):
            problems.append(Problem(pointer, "a lone UTF-16 surrogate (\\ud800-\\udfff without its pair): "
                                    "expected valid Unicode text"))
    return problems


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def find_pointers(document: Any, wanted: set[int]) -> dict[int, str]:
    """JSON pointers of the objects whose ``id`` is in ``wanted`` (first path in document order)."""
    found: dict[int, str] = {}
    if not wanted:
        return found
    for obj, pointer in _walk(document):
        if id(obj) in wanted and id(obj) not in found:
            found[id(obj)] = pointer
            if len(found) == len(wanted):
                break
    return found


def _walk(document: Any) -> Iterator[tuple[Any, str]]:
    stack: list[tuple[Any, str]] = [(document, "")]
    visited: set[int] = set()
    while stack:
        obj, pointer = stack.pop()
        yield obj, pointer
        if isinstance(obj, (dict, list)):
            if id(obj) in visited:
                continue
            visited.add(id(obj))
            items = obj.items() if isinstance(obj, dict) else enumerate(obj)
            stack.extend(reversed([(value, pointer_join(pointer, key)) for key, value in items]))


def _abbreviated(text: str) -> str:
    return text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"
