"""A driver program built against the first protocol: HELLO version 1 only, no revision flag, no OPEN.

Run as ``exec:python -m tests.fakes.protocol_v1``: the Python driver host
serving the reference device, less what revision 2 added, so the harness's
opening exchange can be tested against a driver that predates it (it
refuses a HELLO whose version is not 1, or with trailing bytes, as today's
drivers do).
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from nnvts.drivers.reference.device import create_device
from vts.ipc import protocol as p
from vts.ipc.host import DriverHost


class FirstProtocolHost(DriverHost):
    """A host that names no revision in HELLO and does not know OPEN."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(create_device(), sock, owns_process=True)
        del self.handlers[p.Method.OPEN]

    def hello_flags(self) -> list[str]:
        return [flag for flag in super().hello_flags() if not flag.startswith(p.REVISION_FLAG_PREFIX)]


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(os.environ.get("NNVTS_SOCKET_FD", "3")))
    return FirstProtocolHost(sock).serve()


if __name__ == "__main__":
    sys.exit(main())
