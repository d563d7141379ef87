"""What one client of ``nnvts serve`` can make the service hold, and its release (docs/protocol.md §5.2).

A *client* is one peer process (``SO_PEERCRED``: uid and pid): every
connection accepted from it, and the connections ``OPEN_CONNECTION`` gave
them.  Its connections and its asynchronous executions are bounded together,
so four connections of one process are one client's, not four clients'
shares; and each connected client keeps a guaranteed share of the
executions (``SERVE_EXECUTIONS_GUARANTEED``) that no other can take.
``ServiceLimits`` counts what all connections hold together,
``ConnectionLimits`` what one holds; every bound is in ``vts.bounds``.  A
spawned driver host (one harness, its own process) has no limits object:
its only client is the harness that started it.
"""

from __future__ import annotations

import resource
import threading
from collections.abc import Callable

from vts import bounds
from vts.ipc.errors import ProtocolError
from vts.ipc.protocol import Method
from vts.ipc.protocol.framing import Refused

_MODEL_KINDS = frozenset({Method.PREPARE_MODEL, Method.PREPARE_MODEL_FROM_CACHE, Method.PREPARE_MODEL_WITH_CONFIG})
_REQUEST_KINDS = frozenset({Method.EXECUTE, Method.EXECUTE_ASYNC, Method.EXECUTE_FENCED, Method.BURST_EXECUTE,
                            Method.ALLOCATE, Method.BUFFER_COPY_TO, Method.BUFFER_COPY_FROM,
                            Method.REUSABLE_CREATE, Method.EXECUTE_WITH_CONFIG, Method.EXECUTE_FENCED_WITH_CONFIG,
                            Method.BURST_EXECUTE_WITH_CONFIG})


def max_body(code: int) -> int:
    """The largest body a request of kind ``code`` may declare."""
    if code in _MODEL_KINDS:
        return bounds.SERVE_MAX_MODEL_BODY
    if code in _REQUEST_KINDS:
        return bounds.SERVE_MAX_REQUEST_BODY
    return bounds.SERVE_MAX_SMALL_BODY


def _pool_budget() -> int:
    """Service-wide pools: ``SERVE_MAX_POOLS``, or fewer where the descriptor limit is lower.

    The soft limit is raised to the hard one first; room is kept for every connection's socket and
    for the descriptors of messages being received.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        wanted = 1 << 16 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    reserve = 2 * bounds.SERVE_MAX_CONNECTIONS + 2 * 253 + 64
    return max(16, min(bounds.SERVE_MAX_POOLS, soft - reserve))


class _Client:
    __slots__ = ("connections", "executions", "peer")

    def __init__(self, peer: object = None) -> None:
        #: The peer's ``(uid, pid)`` (None: a client known by its connection alone).
        self.peer = peer
        self.connections = 0
        self.executions = 0


class ServiceLimits:
    """What every connection of one ``nnvts serve`` holds together."""

    def __init__(self, pool_budget: int | None = None) -> None:
        self._lock = threading.Lock()
        self.connections = 0
        self.pools = 0
        self.executions = 0
        self.bytes_in_flight = 0
        self.max_pools = _pool_budget() if pool_budget is None else pool_budget
        #: Every client with a connection open (a peer's entry goes with its last connection).
        self.clients: set[_Client] = set()
        self._peers: dict[object, _Client] = {}
        self.handshake_timeout = bounds.SERVE_HANDSHAKE_TIMEOUT
        self.idle_timeout = bounds.SERVE_IDLE_TIMEOUT
        #: Connections that have not said HELLO yet, oldest first: the first to go when the service is full.
        self._ungreeted: dict[ConnectionLimits, None] = {}

    def open(self, client: _Client | None = None, peer: object = None) -> ConnectionLimits:
        """Limits for one more connection (of ``client``, of the client of ``peer``, or of a new client);
        ProtocolError when beyond a bound."""
        if self.connections >= bounds.SERVE_MAX_CONNECTIONS:
            self._evict_one()
        with self._lock:
            if self.connections >= bounds.SERVE_MAX_CONNECTIONS:
                raise ProtocolError(f"the service has {self.connections} connections open "
                                    f"(limit {bounds.SERVE_MAX_CONNECTIONS})")
            if client is None:
                client = self._peers.get(peer) if peer is not None else None
                client = client or _Client(peer)
            if client.connections >= bounds.SERVE_MAX_CONNECTIONS_PER_CLIENT:
                raise ProtocolError(f"this client has {client.connections} connections open "
                                    f"(limit {bounds.SERVE_MAX_CONNECTIONS_PER_CLIENT})")
            self.connections += 1
            client.connections += 1
            self.clients.add(client)
            if client.peer is not None:
                self._peers[client.peer] = client
            limits = ConnectionLimits(self, client)
            self._ungreeted[limits] = None
        return limits

    def _evict_one(self) -> None:
        """Make room by closing the oldest connection that has not said HELLO (it is served nothing yet):
        silent connections, from however many processes, cannot keep a client that speaks out."""
        with self._lock:
            oldest = next(iter(self._ungreeted), None)
        if oldest is not None:
            oldest.evict()

    def greeted(self, limits: ConnectionLimits) -> None:
        with self._lock:
            self._ungreeted.pop(limits, None)

    def _closed(self, limits: ConnectionLimits, client: _Client) -> None:
        """One of ``client``'s connections ended (its executions end on their own)."""
        with self._lock:
            self._ungreeted.pop(limits, None)
            self.connections -= 1
            client.connections -= 1
            if client.connections == 0:
                self.clients.discard(client)
                if client.peer is not None and self._peers.get(client.peer) is client:
                    del self._peers[client.peer]

    def _begin_execution(self, client: _Client) -> None:
        """Admit one more asynchronous execution of ``client``, or refuse it (ProtocolError).

        Within its guarantee a client is always admitted (the guarantees of all clients fit in the
        service's budget).  Beyond it, only while what stays free covers every other connected client's
        unused guarantee: a client holding much cannot leave another without its share.
        """
        with self._lock:
            if client.executions >= bounds.SERVE_MAX_EXECUTIONS_PER_CLIENT:
                raise ProtocolError(f"this client has {client.executions} executions in flight "
                                    f"(limit {bounds.SERVE_MAX_EXECUTIONS_PER_CLIENT})")
            guaranteed = bounds.SERVE_EXECUTIONS_GUARANTEED
            if client.executions >= guaranteed:
                owed = sum(max(0, guaranteed - other.executions) for other in self.clients if other is not client)
                if self.executions + 1 + owed > bounds.SERVE_MAX_EXECUTIONS:
                    raise ProtocolError(f"the service holds {self.executions} executions in flight (limit "
                                        f"{bounds.SERVE_MAX_EXECUTIONS}, {owed} kept for other clients' shares); "
                                        f"this client has {client.executions}")
            self.executions += 1
            client.executions += 1

    def _end_execution(self, client: _Client) -> None:
        with self._lock:
            self.executions -= 1
            client.executions -= 1

    def _take(self, what: str, amount: int, limit: int) -> None:
        with self._lock:
            held = getattr(self, what)
            if held + amount > limit:
                raise ProtocolError(f"the service holds {held} {what.replace('_', ' ')} (limit {limit})")
            setattr(self, what, held + amount)

    def _give(self, what: str, amount: int) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) - amount)


class ConnectionLimits:
    """What one connection holds; ``close`` gives all of it back (the host calls it when the peer goes)."""

    def __init__(self, service: ServiceLimits, client: _Client) -> None:
        self.service = service
        self.client = client
        self.max_threads = bounds.SERVE_MAX_THREADS_PER_CONNECTION
        self._lock = threading.Lock()
        self.pools = 0
        self.handles = 0
        self.executions = 0
        #: Bytes admitted by the last ``admit`` (read under the host's read lock, released after the call).
        self.admitted = 0
        self._closed = False
        #: Set by the host serving the connection: hang it up (the service is full and it is silent).
        self.on_evict: Callable[[], None] | None = None

    def sibling(self) -> ConnectionLimits:
        """Limits for a connection this one opened (OPEN_CONNECTION): the same client."""
        return self.service.open(self.client)

    # -- bodies --------------------------------------------------------------------

    def admit(self, seq: int, code: int, length: int) -> None:
        """Called from the header alone, before the body is allocated: refuse or count it."""
        limit = max_body(code)
        if length > limit:
            raise Refused(seq, code, f"a {length}-byte body for request kind {code} (limit {limit} for that kind)")
        try:
            self.service._take("bytes_in_flight", length, bounds.SERVE_MAX_BYTES_IN_FLIGHT)
        except ProtocolError as error:
            raise Refused(seq, code, str(error)) from None
        self.admitted = length

    def release_bytes(self, length: int) -> None:
        if length:
            self.service._give("bytes_in_flight", length)

    # -- pools, handles, executions ---------------------------------------------------------

    def take_pools(self, count: int) -> None:
        with self._lock:
            if self.pools + count > bounds.SERVE_MAX_POOLS_PER_CONNECTION:
                raise ProtocolError(f"this connection holds {self.pools} pools "
                                    f"(limit {bounds.SERVE_MAX_POOLS_PER_CONNECTION}); release some first")
            self.service._take("pools", count, self.service.max_pools)
            self.pools += count

    def give_pools(self, count: int) -> None:
        with self._lock:
            self.pools -= count
            self.service._give("pools", count)

    def take_handle(self) -> None:
        with self._lock:
            if self.handles >= bounds.SERVE_MAX_HANDLES_PER_CONNECTION:
                raise ProtocolError(f"this connection holds {self.handles} handles "
                                    f"(limit {bounds.SERVE_MAX_HANDLES_PER_CONNECTION}); release some first")
            self.handles += 1

    def give_handles(self, count: int) -> None:
        with self._lock:
            self.handles -= count

    def begin_execution(self) -> None:
        with self._lock:
            if self.executions >= bounds.SERVE_MAX_EXECUTIONS_PER_CONNECTION:
                raise ProtocolError(f"{self.executions} executions in flight on this connection "
                                    f"(limit {bounds.SERVE_MAX_EXECUTIONS_PER_CONNECTION})")
            self.service._begin_execution(self.client)
            self.executions += 1

    def end_execution(self) -> None:
        with self._lock:
            self.executions -= 1
            self.service._end_execution(self.client)

    def evict(self) -> None:
        """Give the connection's place back now and hang it up (its host then ends and releases the rest)."""
        self.close()
        if self.on_evict is not None:
            self.on_evict()

    def close(self) -> None:
        """The connection ended: give back its pools, handles and its place (executions end on their own)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pools, self.pools, self.handles = self.pools, 0, 0
        self.service._give("pools", pools)
        self.service._closed(self, self.client)
