"""Exceptions a driver raised in its host, raised again in the harness under the driver's type name.

A Python driver that raises something other than ``DriverError`` answers
``DRIVER_EXCEPTION`` (docs/protocol.md §2.1) with its exception's type name,
message and traceback.  The harness raises a subclass of
``RemoteDriverException`` named like the original, so reports read "driver
raised ValueError: ..." alike in and out of process.
"""

from __future__ import annotations

__all__ = ["RemoteDriverException", "remote_exception"]


class RemoteDriverException(Exception):
    """An exception the driver raised in its host (not a HAL status).

    ``remote_type`` is the driver's exception type name; instances are
    created through ``remote_exception`` as a subclass of that name, so
    reports read "driver raised ValueError: ..." in and out of process.
    """

    remote_type = "Exception"

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback


_REMOTE_TYPES: dict[str, type[RemoteDriverException]] = {}


#: Remote exception classes kept for reuse; a driver inventing a type per call gets fresh ones, not a leak.
_MAX_REMOTE_TYPES = 256


def remote_exception(type_name: str, message: str, remote_traceback: str) -> RemoteDriverException:
    """A ``RemoteDriverException`` subclass instance named ``type_name`` (classes cached, within a bound)."""
    cls = _REMOTE_TYPES.get(type_name)
    if cls is None:
        name = type_name if type_name.isidentifier() else "RemoteDriverException"
        cls = type(name, (RemoteDriverException,), {"remote_type": type_name, "__module__": "driver"})
        if len(_REMOTE_TYPES) < _MAX_REMOTE_TYPES:
            _REMOTE_TYPES[type_name] = cls
    return cls(message, remote_traceback)
