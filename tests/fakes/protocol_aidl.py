"""Driver programs of protocol revision 3 that answer the ``aidl:N`` features (docs/protocol.md §5.3) one way each.

Run as ``exec:python -m tests.fakes.protocol_aidl MODE``: the Python driver host serving the reference
device (AIDL v4 of itself), whose OPEN reply is changed by MODE:

* ``no_aidl``: a revision-3 driver built before the ``aidl`` features: it grants ``batch`` only and so
  speaks HAL 1.3 (held to it by the host, as every driver reached over the protocol without ``aidl``);
* ``two``: grants ``aidl:3`` and ``aidl:4`` (a driver speaks one version): the harness must not start it;
* ``five``: grants ``aidl:5``, which the harness never asks for: the harness must not start it;
* ``first_batch``: a driver written to ``batch``'s first text: it grants ``aidl:4`` and ``batch`` but not
  ``batch_config``, and answers ``PREPARE_MODEL_WITH_CONFIG`` inside a ``BATCH`` PROTOCOL_ERROR (alone it
  serves it);
* ``no_async``: grants ``aidl:4`` but not ``execute_async``, and serves no ``EXECUTE_ASYNC`` (AIDL has no
  asynchronous execute): the kind, if sent, is answered PROTOCOL_ERROR, as any unknown kind.

Modes combine with a comma (``no_aidl,no_async``: a HAL 1.3 driver without ``EXECUTE_ASYNC``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Sequence

from nnvts.drivers.reference.device import create_device
from vts.ipc import protocol as p
from vts.ipc.host import DriverHost
from vts.ipc.protocol import Reader, Writer

#: The features each bad mode grants besides ``batch``.
_BAD_GRANTS = {"two": ("aidl:3", "aidl:4"), "five": ("aidl:5",)}


class AidlModeHost(DriverHost):
    def __init__(self, sock: socket.socket, mode: str) -> None:
        super().__init__(create_device(), sock, owns_process=True)
        modes = set(mode.split(","))
        self.mode = next((m for m in modes if m in _BAD_GRANTS), "no_aidl" if "no_aidl" in modes else "")
        if self.mode in _BAD_GRANTS:
            self.handlers[p.Method.OPEN] = self._open_granting
        self.no_async = "no_async" in modes
        if self.no_async:
            del self.handlers[p.Method.EXECUTE_ASYNC]
        self.first_batch = "first_batch" in modes
        if self.first_batch:
            self.batch_methods = p.BATCH_METHODS - set(p.BATCHED_WITH_FEATURE)

    def features(self) -> tuple[str, ...]:
        left_out = {p.ASYNC_FEATURE} if self.no_async else set()
        if self.first_batch:
            left_out |= set(p.BATCH_EXTRA_FEATURES)
        return tuple(f for f in super().features() if f not in left_out)

    def grant_aidl(self, asked: Sequence[str]) -> str | None:
        return None if self.mode == "no_aidl" else super().grant_aidl(asked)

    def _open_granting(self, r: Reader, seq: int, taken: set[int]) -> tuple[Writer, None]:
        w, _ = self._open(r, seq, taken)
        reply = p.read_open_reply(Reader(w.buf))
        features = (*(f for f in reply.features if not f.startswith(p.AIDL_FEATURE_PREFIX)), *_BAD_GRANTS[self.mode])
        out = Writer()
        p.write_open_reply(out, p.OpenReply(reply.revision, reply.device_name, reply.accepted, features))
        return out, None


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(os.environ.get("NNVTS_SOCKET_FD", "3")))
    return AidlModeHost(sock, sys.argv[1]).serve()


if __name__ == "__main__":
    sys.exit(main())
