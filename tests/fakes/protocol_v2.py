"""A driver program built against revision 2 of the protocol: HELLO names ``protocol:2``, OPEN has no features.

Run as ``exec:python -m tests.fakes.protocol_v2``: the Python driver host
serving the reference device as it was before revision 3, so the harness's
opening exchange can be tested against a driver that takes options but
knows neither features nor ``BATCH``.  Its OPEN refuses any revision but 2,
and decodes the revision-2 body exactly (trailing feature bytes would be a
protocol error), as a driver of that revision does.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from nnvts.drivers.reference.device import create_device
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.ipc import protocol as p
from vts.ipc.host import DriverHost
from vts.ipc.protocol import Reader, Writer


class SecondRevisionHost(DriverHost):
    """A host that speaks revision 2: ``protocol:2`` in HELLO, OPEN with options only, no BATCH."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(create_device(), sock, owns_process=True)
        del self.handlers[p.Method.BATCH]
        self.handlers[p.Method.OPEN] = self._open_v2

    def hello_flags(self) -> list[str]:
        flags = [flag for flag in super().hello_flags() if not flag.startswith(p.REVISION_FLAG_PREFIX)]
        return [*flags, p.revision_flag(2)]

    def _open_v2(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        revision = r.u32()
        if revision != 2:
            raise p.ProtocolError(f"OPEN for revision {revision}; this driver speaks revision 2")
        options = [(r.text(), r.text()) for _ in range(r.count(8))]
        r.end()
        if options:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "this driver takes no options")
        w = Writer()
        p.write_open_reply(w, p.OpenReply(2, self.device.name, ()))
        return w, None


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(os.environ.get("NNVTS_SOCKET_FD", "3")))
    return SecondRevisionHost(sock).serve()


if __name__ == "__main__":
    sys.exit(main())
