"""The driver host process: serves any Python ``Device`` over the nnvts protocol.

Run as ``nnvts serve --driver X --socket PATH`` (listen on a path) or, as
the harness does, ``python -m vts.ipc.host --driver X --fd 3`` on an
inherited socket.  One connection is served by a ``DriverHost``
(``vts.ipc.driver_host``); this module loads the driver and runs the process
around it.

Exit status: 0 when the harness closed the connection (or, serving a path,
on SIGTERM, SIGINT or SIGHUP), 2 when the driver cannot be loaded, 3 when
the driver ran out of memory (``MemoryError`` usually means the memory limit
was hit; the process is no longer trustworthy, so it ends and the harness
reports the case as crashed), 4 when the path cannot be listened on.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import itertools
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence

from vts.hal.interfaces import Device
from vts.ipc.driver_host import DEFAULT_THREADS, DriverHost, hold_to_protocol
from vts.ipc.driver_options import accepted_options, parse_driver_option
from vts.ipc.drivers import DriverNotFound, DriverRef
from vts.ipc.errors import ProtocolError
from vts.ipc.host_calls import ForeignPreparedModel, OpenedWith
from vts.ipc.host_exit import (
    EXIT_CANNOT_LISTEN,
    EXIT_DRIVER_NOT_LOADED,
    EXIT_OK,
    EXIT_OUT_OF_MEMORY,
    STUCK_EXIT_GRACE,
    exit_after_grace,
    log,
    out_of_memory,
)
from vts.ipc.host_limits import ServiceLimits
from vts.ipc.host_sessions import serve_client
from vts.ipc.listener import StopSignals, accept_until_stopped, listen_on

__all__ = [
    "DEFAULT_THREADS",
    "EXIT_CANNOT_LISTEN",
    "EXIT_DRIVER_NOT_LOADED",
    "EXIT_OK",
    "EXIT_OUT_OF_MEMORY",
    "PROFILE_ENV",
    "STUCK_EXIT_GRACE",
    "TRACEMALLOC_ENV",
    "DriverHost",
    "ForeignPreparedModel",
    "main",
    "serve",
    "serve_socket",
]


def serve_socket(device: Device, sock: socket.socket, threads: int = DEFAULT_THREADS,
                 owns_process: bool = False) -> int:
    return DriverHost(device, sock, threads, owns_process).serve()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nnvts-host", description="Serve a Python nnvts driver over a socket.")
    parser.add_argument("--driver", required=True, help="installed driver name or module:attr")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="an inherited, connected Unix stream socket")
    where.add_argument("--socket", help="listen on this Unix socket path (every connection a client of one driver)")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="concurrent calls served")
    parser.add_argument("--memory-limit", type=int, default=0, help="RLIMIT_AS in bytes (0: unlimited)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a driver option, passed to the driver's factory (repeatable)")
    args = parser.parse_args(argv)
    try:
        args.driver = _with_options(args.driver, args.option)
    except DriverNotFound as error:
        log(str(error))
        return EXIT_DRIVER_NOT_LOADED
    trace_to = os.environ.get(TRACEMALLOC_ENV)
    if trace_to:
        _trace_allocations(trace_to)
    profile_to = os.environ.get(PROFILE_ENV)
    if profile_to:
        return _profiled(profile_to, serve, args)
    return serve(args.driver, fd=args.fd, path=args.socket, threads=args.threads, memory_limit=args.memory_limit)


#: ``NNVTS_HOST_PROFILE=PREFIX``: run the host's serving thread under cProfile and write its statistics to
#: ``PREFIX.PID.prof`` when the host ends normally (the harness hangs up); a development aid for measuring
#: what the driver host costs (bench/README.md, issue 23).  Reader threads beyond the first are not profiled.
PROFILE_ENV = "NNVTS_HOST_PROFILE"


def _profiled(prefix: str, run: Callable[..., int], args: argparse.Namespace) -> int:
    import cProfile

    profile = cProfile.Profile(time.process_time)  # CPU time: waiting for the harness is not the host's cost
    try:
        return profile.runcall(run, args.driver, fd=args.fd, path=args.socket, threads=args.threads,
                               memory_limit=args.memory_limit)
    finally:
        profile.dump_stats(f"{prefix}.{os.getpid()}.prof")


#: ``NNVTS_HOST_TRACEMALLOC=PREFIX``: trace the host's Python allocations (tracemalloc, 8 frames) and write a
#: snapshot to ``PREFIX.PID.N.snap`` on each SIGUSR1 and when the host ends normally; diff two of them
#: (``tracemalloc.Snapshot.load``, ``compare_to``) to see what a long run accumulates (bench/README.md, issue 23).
#: A development aid: tracing makes the host several times slower.
TRACEMALLOC_ENV = "NNVTS_HOST_TRACEMALLOC"


def _trace_allocations(prefix: str) -> None:
    import atexit
    import tracemalloc

    tracemalloc.start(8)
    taken = itertools.count(1)

    def dump(*_: object) -> None:
        tracemalloc.take_snapshot().dump(f"{prefix}.{os.getpid()}.{next(taken)}.snap")

    signal.signal(signal.SIGUSR1, dump)
    atexit.register(dump)


def _with_options(driver: str, options: Sequence[str]) -> DriverRef:
    """The driver reference with the ``--option KEY=VALUE`` texts added to its own options."""
    ref = DriverRef.of(driver)
    return ref.with_options(ref.options + tuple(parse_driver_option(text) for text in options)) if options else ref


def serve(driver: DriverRef | str, *, fd: int | None = None, path: str | None = None,
          threads: int = DEFAULT_THREADS, memory_limit: int = 0, handshake_timeout: float | None = None,
          idle_timeout: float | None = None) -> int:
    """Load ``driver`` (with its options) and serve it on an inherited descriptor or a listening path.

    Serving a path, a connection that has not said HELLO within ``handshake_timeout`` seconds, or a greeted
    one silent for ``idle_timeout`` with nothing in flight, is closed (None: ``vts.bounds``'s).
    """
    if fd is not None:
        # Spawned by the harness, which owns the terminal: Ctrl-C is its to handle.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A driver that dies by a signal leaves its Python stack in the log the harness reports.
    faulthandler.enable()
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    try:
        ref = DriverRef.of(driver)
        device = ref.load()
        hold_to_protocol(device)  # served only over the protocol: HAL 1.3 until an OPEN grants its aidl:N
        opened_with = OpenedWith(ref.options, accepted_options(ref))
    except DriverNotFound as error:
        log(str(error))
        return EXIT_DRIVER_NOT_LOADED
    except MemoryError:
        out_of_memory()
        return EXIT_OUT_OF_MEMORY
    if fd is not None:
        sock = socket.socket(fileno=fd)
        try:
            return DriverHost(device, sock, threads, owns_process=True, opened_with=opened_with).serve()
        finally:
            sock.close()
    assert path is not None
    service = ServiceLimits()
    if handshake_timeout is not None:
        service.handshake_timeout = handshake_timeout
    if idle_timeout is not None:
        service.idle_timeout = idle_timeout

    def serve_one(conn: socket.socket) -> None:
        # Every connection is served at once with tables of its own (pool ids, handles): the driver must
        # keep clients apart.  Connections of one peer process are one client's (its bounds and shares).
        try:
            limits = service.open(peer=peer_of(conn))
        except ProtocolError as error:
            log(f"refused a client: {error}")
            conn.close()
            return
        serve_client(DriverHost, device, conn, threads, limits, opened_with)

    with StopSignals() as stop:  # before the path appears: a manager may signal as soon as it sees it
        try:
            listener = listen_on(path)
        except OSError as error:
            log(f"cannot listen on {path}: {error}")
            return EXIT_CANNOT_LISTEN
        log(f"serving {driver} on {path}")
        try:
            signum = accept_until_stopped(listener, stop, serve_one)
            log(f"stopped by {signal.Signals(signum).name}")
        finally:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    # Clients' calls may still be in the driver; a thread of the driver's own must not keep the process
    # alive past a stop (the interpreter waits for non-daemon threads before it exits).
    exit_after_grace()
    return EXIT_OK

def peer_of(conn: socket.socket) -> tuple[int, int] | None:
    """The ``(uid, pid)`` of the process at the other end of a Unix socket (``SO_PEERCRED``; None elsewhere)."""
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except (OSError, struct.error):
        return None
    return (uid, pid) if pid > 0 else None


if __name__ == "__main__":
    sys.exit(main())
