"""The harness side of the protocol: connect to a driver host and get a ``Device`` back.

``connect`` says HELLO on a connected socket and returns a ``ProxyDevice``
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
from collections.abc import Callable

from vts.ipc import protocol as p
from vts.ipc.connection import MAX_AHEAD_BODY, Connection, Decode, PendingCall
from vts.ipc.errors import DriverCrashed, DriverTimeout, ProtocolError, ProtocolViolation
from vts.ipc.output_guard import GUARD_LIMIT, OutputGuard
from vts.ipc.protocol import Method, Writer
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
            timeout: float | None = 30.0) -> ProxyDevice:
    """Say HELLO on a connected socket and return the device behind it.

    ``timeout`` bounds the handshake (a program that never answers is not
    a driver); afterwards calls are bounded by the connection's deadline.
    """
    connection = Connection(sock, describe_death)
    connection.call_timeout = timeout

    def hello(w: Writer) -> None:
        w.u32(p.PROTOCOL_VERSION)
        w.string("nnvts")

    version, connection.device_name, connection.device_flags = connection.call(
        Method.HELLO, hello, lambda r, taken: (r.u32(), r.text(), tuple(r.text() for _ in range(r.count(4, 64)))))
    connection.call_timeout = None
    if version != p.PROTOCOL_VERSION:
        raise ProtocolError(f"the driver speaks protocol version {version}, the harness {p.PROTOCOL_VERSION}")
    return ProxyDevice(connection)
