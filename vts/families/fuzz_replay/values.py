"""JSON forms of the few HAL values an edit may put into a model or request.

Edits are JSON so a failing input can be saved and replayed; most values
are ints, floats and lists, and these tagged objects stand for the rest:
``{"extension": [name, prefix]}``, ``{"channel_quant": [scales, dim]}``,
``{"bytes": HEX}``, ``{"token": N}`` (a driver-buffer request pool).
"""

from __future__ import annotations

from typing import Any

from vts.hal.types import ExtensionNameAndPrefix, MemoryToken, SymmPerChannelQuantParams


def decode(value: Any) -> Any:
    """The HAL object a JSON edit value stands for (plain values pass through)."""
    if isinstance(value, dict) and len(value) == 1:
        (tag, payload), = value.items()
        if tag == "extension":
            return ExtensionNameAndPrefix(str(payload[0]), int(payload[1]))
        if tag == "channel_quant":
            return SymmPerChannelQuantParams([float(s) for s in payload[0]], int(payload[1]))
        if tag == "bytes":
            return bytes.fromhex(payload)
        if tag == "token":
            return MemoryToken(int(payload))
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value
