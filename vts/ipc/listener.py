"""``nnvts serve --socket PATH``: the listening socket, and the accept loop that a stop signal ends.

Each of the two jobs here closes a race a client or a service manager would hit:

* **The path appears only once the socket listens.**  A socket that is bound
  but not yet listening refuses connections (``ECONNREFUSED``), so a client
  that waits for the path and then connects can be refused.  The socket is
  bound under a staging name (the path and ``~``), set to 0600 and listening
  before ``rename`` puts it at the path.
* **SIGTERM, SIGINT and SIGHUP always end the loop.**  A handler that raises
  ``KeyboardInterrupt`` in the main thread does not always do that.  When the
  kernel delivers the signal to a client's thread, only that thread's system
  call is interrupted, and the main thread stays blocked in ``accept``.  When
  the handler runs inside a finalizer (``__del__``, a weakref callback),
  Python prints the exception and drops it.  So the loop waits on the
  listener and on the signal wakeup descriptor (``signal.set_wakeup_fd``)
  together, and stops on the signal numbers read from the descriptor.  The
  C-level handler writes them there from whichever thread the signal arrived
  on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import signal
import socket
import stat
from collections.abc import Callable

from vts.ipc import protocol as p

#: The signals that end the service (each exits 0, the path removed).  One ignored when the service
#: starts (``nohup`` ignores SIGHUP; a shell ignores SIGINT for a background job) stays ignored.
STOP_SIGNALS = tuple(s for s in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)) if s is not None)

#: Appended to the path to name the socket until it listens (so a path may be one byte shorter than
#: ``sun_path`` allows).
STAGING_SUFFIX = "~"

#: Connections the kernel queues before ``accept``.
BACKLOG = 8


class StopSignals:
    """While entered (main thread only), the stop signals are noted on a wakeup descriptor.

    ``fileno()`` becomes readable when one arrives; ``received()`` then says which.  The handlers do
    nothing themselves: the signal numbers the C-level handler writes to the descriptor are the record.
    """

    def __init__(self) -> None:
        self._read_fd = -1
        self._write_fd = -1
        self._previous_handlers: dict[int, object] = {}
        self._previous_wakeup = -1

    def __enter__(self) -> StopSignals:
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)  # set_wakeup_fd requires it: a full pipe must not block a handler
        self._previous_wakeup = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                self._previous_handlers[signum] = signal.signal(signum, _noted)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._previous_wakeup)
        os.close(self._read_fd)
        os.close(self._write_fd)

    def fileno(self) -> int:
        return self._read_fd

    def received(self) -> int | None:
        """The first stop signal among those arrived since the last call (drains the descriptor)."""
        arrived = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self._read_fd, 512):
                arrived += chunk
        return next((signum for signum in arrived if signum in self._previous_handlers), None)


def _noted(signum: int, frame: object) -> None:
    """The Python-level handler: nothing to do, the wakeup descriptor holds the signal (and the process
    must not take the default action, which for SIGTERM is to die with the path left behind)."""


def listen_on(path: str) -> socket.socket:
    """A socket listening at ``path`` (a stale socket there is replaced), mode 0600 whatever the umask.

    Bound under umask 0177, so there is no moment in which another user could connect; put at ``path``
    only once it listens.  A staging name that exists and is not a socket is never deleted.
    """
    staging = path + STAGING_SUFFIX
    if os.path.lexists(staging):
        if not stat.S_ISSOCK(os.lstat(staging).st_mode):
            raise FileExistsError(errno.EEXIST, "exists and is not a socket (nnvts serve binds there first)", staging)
        os.unlink(staging)
    listener = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
    try:
        previous = os.umask(0o177)
        try:
            listener.bind(staging)
        finally:
            os.umask(previous)
        os.chmod(staging, 0o600)
        listener.listen(BACKLOG)
        os.replace(staging, path)
    except BaseException:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
        raise
    return listener


def accept_until_stopped(listener: socket.socket, stop: StopSignals, serve_one: Callable[[socket.socket], None]) -> int:
    """Hand each accepted connection (blocking) to ``serve_one`` until a stop signal; return its number."""
    listener.setblocking(False)
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        selector.register(stop, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is stop:
                    signum = stop.received()
                    if signum is not None:
                        return signum
                    continue
                conn = _accept(listener)
                if conn is not None:
                    serve_one(conn)


def _accept(listener: socket.socket) -> socket.socket | None:
    """The connection ready on a non-blocking listener, or None when it is gone (its client gave up)."""
    try:
        conn, _ = listener.accept()
    except (BlockingIOError, InterruptedError, ConnectionAbortedError):
        return None
    conn.setblocking(True)  # an accepted socket's mode may follow the listener's
    return conn
