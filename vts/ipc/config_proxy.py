"""AIDL v4's ``*WithConfig`` calls over the protocol, harness side (docs/protocol.md §5.5).

With ``aidl:4`` granted, ``ProxyDevice.prepare_model_with_config`` and ``ProxyPreparedModel.
execute_*_with_config`` send the ``*_WITH_CONFIG`` kinds: the older kind's body, written by the proxy's own
writer, followed by the hints trailer (``with_hints``), so the driver sees the hints and the extension table
exactly as the family gave them.  Without the grant the proxies fall back to the base classes' defaults, the
older calls (families skip a driver below AIDL v4, saying so; the kinds are never sent to it).
Driver side: ``vts.ipc.host_config``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from vts.hal.config import TokenValuePair
from vts.hal.types import ExtensionNameAndPrefix
from vts.ipc import protocol as p
from vts.ipc.protocol import Writer

if TYPE_CHECKING:
    from vts.ipc.connection import Connection

__all__ = ["has_config_calls", "with_hints"]


def has_config_calls(connection: Connection) -> bool:
    """Whether the driver granted ``aidl:4``: the ``*_WITH_CONFIG`` kinds may be sent."""
    return p.aidl_feature(p.WITH_CONFIG_AIDL) in connection.features


def with_hints(write: Callable[[Writer], None], hints: Sequence[TokenValuePair],
               table: Sequence[ExtensionNameAndPrefix]) -> Callable[[Writer], None]:
    """``write`` (an older kind's body) followed by the hints trailer."""

    def written(w: Writer) -> None:
        write(w)
        p.write_hints(w, hints, table)

    return written
