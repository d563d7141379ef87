"""Edits: the fuzzer's unit of change to a HAL model or request, as plain JSON-able data.

A fuzzed input is a valid model (and request) plus a list of edits, so it
can be written next to a concrete spec of the valid model and replayed
exactly: the spec format cannot spell an out-of-range operand index or a
pool offset past the end, an edit list can.  Paths walk attributes and list
indices of the HAL dataclasses (``["main", "operands", 3, "location",
"offset"]``).  Applying an edit whose path no longer exists (an earlier edit
removed it) does nothing: shrinking may drop edits in any order.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vts.families.fuzz_replay.values import decode

Path = tuple[str | int, ...]

#: ``set`` a field, ``append`` to a list, ``delete`` a list element, ``duplicate`` a list element
#: (appended), ``swap`` an element with the last.  Values are JSON (``vts.families.fuzz_replay.values``).
OPS = ("set", "append", "delete", "duplicate", "swap")


@dataclass(frozen=True, slots=True)
class Edit:
    op: str
    path: Path
    value: Any = None

    def to_json(self) -> list[Any]:
        return [self.op, list(self.path), self.value]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Edit:
        op, path, value = data
        if op not in OPS:
            raise ValueError(f"unknown edit {op!r}")
        return cls(str(op), tuple(path), _tuples_to_lists(value))

    def __str__(self) -> str:
        where = ".".join(str(p) for p in self.path)
        return f"{self.op} {where}" + (f" = {self.value!r}" if self.op in ("set", "append") else f" [{self.value}]")


def _tuples_to_lists(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _step(obj: Any, key: str | int) -> Any:
    if isinstance(key, int):
        if not isinstance(obj, list) or not -len(obj) <= key < len(obj):
            raise LookupError(key)
        return obj[key]
    if not hasattr(obj, key):
        raise LookupError(key)
    return getattr(obj, key)


def apply_edit(root: Any, edit: Edit) -> bool:
    """Apply ``edit`` to ``root`` in place; False when its path does not exist (nothing changed)."""
    try:
        parent: Any = root
        for key in edit.path[:-1]:
            parent = _step(parent, key)
        last = edit.path[-1]
        if edit.op == "set":
            _step(parent, last)
            value = decode(edit.value)
            if isinstance(last, int):
                parent[last] = value
            else:
                setattr(parent, last, value)
            return True
        target = _step(parent, last)
        if edit.op == "append" and isinstance(target, list):
            target.append(decode(edit.value))
            return True
        if not isinstance(target, list) or not target:
            return False
        index = edit.value if isinstance(edit.value, int) else 0
        if not 0 <= index < len(target):
            return False
        if edit.op == "delete":
            del target[index]
        elif edit.op == "duplicate":
            target.append(copy.deepcopy(target[index]))
        else:  # swap element ``index`` with the last
            target[index], target[-1] = target[-1], target[index]
        return True
    except (LookupError, AttributeError, TypeError):
        return False


def apply_edits(root: Any, edits: Sequence[Edit]) -> int:
    """Apply every edit in order; returns how many changed something."""
    return sum(apply_edit(root, e) for e in edits)


def dumps(edits: Sequence[Edit]) -> str:
    return json.dumps([e.to_json() for e in edits])


def loads(text: str) -> list[Edit]:
    return [Edit.from_json(item) for item in json.loads(text)]
