"""The harness side of the protocol: connect to a driver host and get a ``Device`` back.

``connect`` opens the driver on a connected socket (``vts.ipc.opening``:
HELLO, then OPEN with the driver options) and returns a ``ProxyDevice``
(``vts.ipc.proxies``) over a ``Connection`` (``vts.ipc.connection``).  The
pieces live in modules of their own: ``connection`` (requests and answers),
``reply_reader`` (reading the socket, leader/follower), ``pool_table``
(pool ids and releases), ``sent_models`` (encoding a model once),
``remote_future`` (asynchronous executions), ``output_guard`` (writes outside
the output regions) and ``remote_exceptions`` (a driver's exceptions by type
name).  This module names them all for the callers that import them from here.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

from vts.ipc.connection import MAX_AHEAD_BODY, Connection, Decode, PendingCall
from vts.ipc.errors import DriverCrashed, DriverTimeout, ProtocolViolation
from vts.ipc.opening import hello, open_driver
from vts.ipc.output_guard import GUARD_LIMIT, OutputGuard
from vts.ipc.proxies import ProxyBuffer, ProxyDevice, ProxyFencedCallback, ProxyPreparedModel
from vts.ipc.remote_exceptions import RemoteDriverException, remote_exception
from vts.ipc.remote_future import RemoteFuture

__all__ = [
    "GUARD_LIMIT",
    "MAX_AHEAD_BODY",
    "Connection",
    "Decode",
    "DriverCrashed",
    "DriverTimeout",
    "OutputGuard",
    "PendingCall",
    "ProtocolErrorLost",
    "ProtocolViolation",
    "ProxyBuffer",
    "ProxyDevice",
    "ProxyFencedCallback",
    "ProxyPreparedModel",
    "RemoteDriverException",
    "RemoteFuture",
    "connect",
    "remote_exception",
]

#: The name this exception had; kept for code that catches it.
ProtocolErrorLost = ProtocolViolation


def connect(sock: socket.socket, describe_death: Callable[[], DriverCrashed] | None = None,
            timeout: float | None = 30.0, options: Sequence[tuple[str, str]] = (),
            driver: str = "the driver") -> ProxyDevice:
    """Open the driver on a connected socket (HELLO, then OPEN with ``options``) and return its device.

    ``timeout`` bounds the opening exchange (a program that never answers is
    not a driver); afterwards calls are bounded by the connection's deadline.
    ``DriverOptionError`` when the driver (named ``driver`` in messages) does
    not accept ``options`` (docs/protocol.md §5.3).
    """
    connection = Connection(sock, describe_death)
    connection.call_timeout = timeout
    hello(connection)
    open_driver(connection, options, driver)
    connection.call_timeout = None
    return ProxyDevice(connection)
