"""Concurrency and further clients over the protocol, harness side (docs/protocol.md §5.1).

Five message kinds beyond the HAL's plain calls, kept here so the framing
and the core handlers stay where they are:

* ``BURST_CONFIGURE`` / ``BURST_EXECUTE`` / ``BURST_FREE_MEMORY``: HAL 1.2
  bursts.  A burst is a handle like a prepared model (released through the
  preamble).  A burst request names each pool by an identifier (slot) and
  carries the memory only for slots the client gives now; a pool the client
  expects the burst to hold already travels as "held" (tag 0).
* ``SET_CONCURRENCY``: the harness asks the host to serve up to N calls at
  once on this connection (the concurrency family keeps several executions
  in flight on one prepared model); the reply is the previous setting.
* ``OPEN_CONNECTION``: the host opens one more connection to the *same*
  driver instance and hands the harness its end (one fd).  Each connection
  has its own pool ids and handles; the multi_client family checks that the
  driver keeps clients apart.

A driver that does not know a kind answers PROTOCOL_ERROR; the families then
say what they could not check (``Unsupported``) instead of failing.
"""

from __future__ import annotations

import socket
from typing import Any

from vts.hal.interfaces import Device
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.ipc.connection import Connection
from vts.ipc.driver_host import DriverHost
from vts.ipc.errors import ProtocolError, RequestRejected
from vts.ipc.host_sessions import MAX_CONCURRENCY, SIBLING_THREADS, serve_client
from vts.ipc.protocol import Method, Reader
from vts.ipc.proxies import ProxyDevice


class Unsupported(Exception):
    """The driver (host) does not implement a message kind this module sends."""


def set_concurrency(device: Device, calls: int) -> int | None:
    """Ask an out-of-process driver to serve ``calls`` calls at once; the previous setting.

    None in process (the harness's threads call the driver directly) and
    for a driver that does not know the message (it then serves calls as
    it always does; the families still run, with less overlap).
    """
    if not isinstance(device, ProxyDevice):
        return None
    try:
        return device.connection.call(Method.SET_CONCURRENCY, lambda w: w.u32(min(max(calls, 1), MAX_CONCURRENCY)),
                                      decode=lambda r, _taken: r.u32())
    except (ProtocolError, RequestRejected):
        return None


def open_client(device: Device) -> ProxyDevice:
    """One more client of ``device``'s driver instance, with tables of its own.

    Out of process the host opens the connection (``OPEN_CONNECTION``); in
    process the harness serves the device itself, one ``DriverHost`` per
    client on a thread, as a HAL service does for its clients.  Close the
    client with ``close_client``.
    """
    if isinstance(device, ProxyDevice):
        parent = device.connection
        try:
            fd = parent.call(Method.OPEN_CONNECTION, decode=_take_fd, fds_allowed=1)
        except (ProtocolError, RequestRejected) as error:
            raise Unsupported(f"the driver does not open further connections ({error})") from None
        # The same driver instance: opened with the options the first connection gave it.
        client = connect(socket.socket(fileno=fd), parent.describe_death, timeout=None, options=parent.options)
        client.connection.deadline = parent.deadline
        return client
    ours, theirs = p.socket_pair()
    serve_client(DriverHost, device, theirs, SIBLING_THREADS)
    return connect(ours, timeout=30.0)


def _take_fd(r: Reader, taken: set[int]) -> int:
    """Decode one descriptor and keep it (the client closes every descriptor a decoder did not take)."""
    fd = r.fd()
    taken.add(fd)
    return fd


def declared_pool_id(connection: Connection, pool: Any) -> int:
    """The id under which ``connection`` declared ``pool`` (for tests of isolation between connections)."""
    pool_id = connection.pools.last_id(pool)
    if pool_id is None:
        raise KeyError("the pool was never declared on this connection")
    return pool_id


def close_client(client: ProxyDevice) -> None:
    """Hang up (without CLOSE: the driver instance is shared and stays open)."""
    client.connection.close()
