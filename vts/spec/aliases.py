"""A budget for YAML alias expansion, checked on the node graph before anything is constructed.

PyYAML builds an aliased value once and shares it, so constructing a
"billion laughs" document is cheap; the cost comes afterwards, when the
schema, the checks and the expansion walk the tree as if every alias were
written out.  So the composed node graph is measured first, with each node's
expanded size computed once (memoised by identity, iteratively so depth costs
no recursion): a document whose aliases add more than ``MAX_ALIAS_NODES``
nodes, or that contains itself, is refused before construction.
"""

from __future__ import annotations

from typing import Any

from vts import bounds
from vts.spec.errors import pointer_join


class AliasBudgetExceeded(Exception):
    """The node graph expands beyond the budget or is recursive; carries where."""

    def __init__(self, message: str, line: int | None, pointer: str) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.pointer = pointer


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):  # sequence: nodes; mapping: (key, value) pairs
        if value and isinstance(value[0], tuple):
            return [n for pair in value for n in pair]
        return value
    return []


def check_alias_expansion(root: Any, budget: int | None = None) -> None:
    """Raise ``AliasBudgetExceeded`` when aliases expand ``root`` by more than ``budget`` nodes."""
    budget = bounds.MAX_ALIAS_NODES if budget is None else budget
    sizes: dict[int, int] = {}
    distinct = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            sizes[key] = size
            distinct += 1
            if size - distinct > budget:
                raise AliasBudgetExceeded(
                    f"YAML aliases expand this document beyond {budget:,} extra nodes "
                    "(an alias bomb?): write the data out, or share less", _line(node), _pointer_to(root, node))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise AliasBudgetExceeded("a YAML alias refers to a node that contains it (a recursive document): "
                                      "specs hold trees of JSON data", _line(node), _pointer_to(root, node))
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _line(node: Any) -> int | None:
    mark = getattr(node, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def _pointer_to(root: Any, target: Any) -> str:
    """The JSON pointer of the first path to ``target`` (each node visited once)."""
    stack: list[tuple[Any, str]] = [(root, "")]
    seen: set[int] = set()
    while stack:
        node, pointer = stack.pop()
        if node is target:
            return pointer
        if id(node) in seen:
            continue
        seen.add(id(node))
        value = node.value
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            stack.extend(reversed([(v, pointer_join(pointer, getattr(k, "value", "?"))) for k, v in value]))
        elif isinstance(value, list):
            stack.extend(reversed([(v, pointer_join(pointer, i)) for i, v in enumerate(value)]))
    return ""
