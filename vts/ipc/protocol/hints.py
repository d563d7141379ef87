"""The hints trailer of the ``*_WITH_CONFIG`` kinds (docs/protocol.md §5.5; AIDL v4, with ``aidl:4``).

Each ``*_WITH_CONFIG`` body is the body of the older kind it extends (``PREPARE_MODEL``, ``EXECUTE``,
``EXECUTE_FENCED``) followed by this trailer: the hints (``u32`` count, each an ``i64`` token and its
``bytes`` value) then the extension name-to-prefix table (``u32`` count, each a ``string`` name and an
``i64`` prefix, as a model's table).  A driver that ignores hints parses the older body, skips the
trailer, and answers as it answers the older kind; the replies are the older kinds' replies.
"""

from __future__ import annotations

from collections.abc import Sequence

from vts import bounds
from vts.hal.config import TokenValuePair
from vts.hal.types import ExtensionNameAndPrefix
from vts.ipc.protocol.primitives import Reader, Writer

__all__ = ["WITH_CONFIG_AIDL", "read_hints", "write_hints"]

#: The AIDL version that brought the ``*WithConfig`` calls (the ``*_WITH_CONFIG`` message kinds).
WITH_CONFIG_AIDL = 4


def write_hints(w: Writer, hints: Sequence[TokenValuePair], table: Sequence[ExtensionNameAndPrefix]) -> None:
    """The trailer: ``hints`` then the extension ``table``."""
    w.u32(len(hints))
    for hint in hints:
        w.i64(int(hint.token))
        w.raw(bytes(hint.value))
    w.u32(len(table))
    for entry in table:
        w.string(entry.name)
        w.i64(int(entry.prefix))


def read_hints(r: Reader) -> tuple[tuple[TokenValuePair, ...], tuple[ExtensionNameAndPrefix, ...]]:
    """The trailer at ``r``: (hints, extension table), each list at most ``bounds.MAX_LIST_ITEMS`` long."""
    hints = tuple(TokenValuePair(r.i64(), r.raw()) for _ in range(r.count(12, bounds.MAX_LIST_ITEMS)))
    table = tuple(ExtensionNameAndPrefix(r.string(), r.i64()) for _ in range(r.count(12, bounds.MAX_LIST_ITEMS)))
    return hints, table
