"""``nnvts serve --socket``: the path appears only once it listens, and a stop signal always ends the service.

A signal sent to a process goes to any one of its threads that does not block
it; Python runs the handler in the main thread, but only the receiving
thread's system call is interrupted.  The end-to-end test makes that happen
every time: its driver blocks SIGTERM in the main thread, as native runtimes
that mask signals do, so the kernel must hand SIGTERM to a client's thread.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import sys
import threading

import pytest

from tests.ipc.conftest import serving
from vts.ipc import listener as listener_module
from vts.ipc import protocol as p
from vts.ipc.client import connect
from vts.ipc.listener import STAGING_SUFFIX, listen_on

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Unix sockets and Linux signals")


def reference_with_sigterm_blocked_in_main():
    """The reference driver, loaded by a main thread that then blocks SIGTERM (a thread started first keeps
    it unblocked, so the process can still receive it)."""
    from nnvts.drivers.reference import create_device

    idle = threading.Thread(target=threading.Event().wait, daemon=True, name="driver-idle")
    idle.start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    return create_device()


def test_the_path_appears_only_once_the_socket_listens(tmp_path, monkeypatch):
    path = str(tmp_path / "drv.sock")
    seen_at_listen = []

    class Watched(socket.socket):
        def listen(self, *args):
            seen_at_listen.append(os.path.exists(path))
            return super().listen(*args)

    monkeypatch.setattr(listener_module.socket, "socket", Watched)
    with listen_on(path) as listening:
        assert seen_at_listen == [False], "the path was there before the socket listened"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert not os.path.lexists(path + STAGING_SUFFIX)
        with socket.socket(socket.AF_UNIX, p.SOCKET_TYPE) as client:
            client.connect(path)
            listening.accept()[0].close()


def test_a_stale_socket_is_replaced_and_a_file_at_the_staging_name_is_kept(tmp_path):
    path = str(tmp_path / "drv.sock")
    stale = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
    stale.bind(path)
    stale.close()  # a socket file nobody listens on, as a killed service leaves
    with listen_on(path), socket.socket(socket.AF_UNIX, p.SOCKET_TYPE) as client:
        client.connect(path)

    os.unlink(path)
    (tmp_path / ("drv.sock" + STAGING_SUFFIX)).write_text("someone's file")
    with pytest.raises(FileExistsError):
        listen_on(path)
    assert (tmp_path / ("drv.sock" + STAGING_SUFFIX)).read_text() == "someone's file"
    assert not os.path.lexists(path)


@pytest.mark.parametrize("driver", ["reference", "tests.ipc.test_listener:reference_with_sigterm_blocked_in_main"])
def test_sigterm_ends_the_service_whichever_thread_takes_it(tmp_path, driver):
    with serving(tmp_path, driver) as (server, path):
        clients = []
        for _ in range(3):  # clients, so the service has threads besides the main one
            sock = socket.socket(socket.AF_UNIX, p.SOCKET_TYPE)
            sock.connect(path)  # at once: the path is there only once the socket listens
            clients.append(sock)
            assert connect(sock).get_capabilities() is not None
    log = (tmp_path / "serve.log").read_text()
    assert server.returncode == 0, log
    assert "stopped by SIGTERM" in log
    assert not os.path.lexists(path), "the socket path was left behind"
    for sock in clients:
        sock.close()
