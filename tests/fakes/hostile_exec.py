"""A hostile driver *program* (``--driver exec:python -m tests.fakes.hostile_exec MODE``).

It serves the reference driver over the nnvts protocol with the bundled
host's pieces, answering correctly - except the answers about a model with
a MUL operation, which break the protocol in the way MODE names (see
``MODES``).  What a driver in C could send, byte for byte.
"""

from __future__ import annotations

import array
import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence

from tests.fakes.hostile import ORPHAN_MARK
from tests.fakes.misbehaving import FaultyPrepared, MisbehavingDevice
from vts.hal.enums import OperationType
from vts.hal.memory import Memory
from vts.ipc import protocol as p
from vts.ipc.host import DriverHost
from vts.ipc.protocol import Method, Reader, Writer


def _send_raw(host: DriverHost, data: bytes, fds: Sequence[int] = ()) -> None:
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
    host.sock.sendmsg([data], ancillary if fds else [])


def _memfd(size: int, content: bytes = b"") -> int:
    fd = os.memfd_create("hostile", 0)
    os.ftruncate(fd, size)
    if content:
        os.pwrite(fd, content, 0)
    return fd


def _reply(seq: int, code: int, body: bytes, status: int = 0, nfds: int = 0, flags: int = 0,
           length: int | None = None) -> bytes:
    return p.HEADER.pack(len(body) if length is None else length, seq, code, status, nfds, flags) + body


# Each mode: what to send instead of the correct reply to an execution of a MUL model.
# (host, seq, code, correct body) -> None
Hijack = Callable[[DriverHost, int, int, bytes], None]


def _garbage(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    _send_raw(host, b"\xde\xad\xbe\xef" * 7)


def _undecodable(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    _send_raw(host, _reply(seq, code, b"\x01"))  # framed exactly, but no ExecutionResult


def _extra_fds(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(5)]
    try:
        _send_raw(host, _reply(seq, code, body, nfds=len(fds)), fds)
    finally:
        for fd in fds:
            os.close(fd)


def _huge(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    size = 200 << 20  # a sparse memfd: costs the driver nothing, would cost the harness 200 MiB
    fd = _memfd(size)
    try:
        _send_raw(host, _reply(seq, code, b"", nfds=1, flags=p.BODY_IN_FD, length=size), [fd])
    finally:
        os.close(fd)


def _huge_error(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    w = Writer()
    p.write_error(w, "E" * (50 << 20), (), None)  # GENERAL_FAILURE with a 50 MiB message
    fd = _memfd(len(w.buf), bytes(w.buf))
    try:
        _send_raw(host, _reply(seq, code, b"", status=2, nfds=1, flags=p.BODY_IN_FD, length=len(w.buf)), [fd])
    finally:
        os.close(fd)


def _unterminated(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    _send_raw(host, _reply(seq, code, body[:3], length=len(body) + 1000))  # the header promises more


def _wrong_kind(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    _send_raw(host, _reply(seq, Method.GET_TYPE | p.REPLY, struct.pack("<q", 2)))


def _pipe_body(host: DriverHost, seq: int, code: int, body: bytes) -> None:
    read_end, write_end = os.pipe()  # a body "in a descriptor" that is a pipe: never ends
    try:
        _send_raw(host, _reply(seq, code, b"", nfds=1, flags=p.BODY_IN_FD, length=64), [read_end])
    finally:
        os.close(read_end)
        os.close(write_end)


MODES: dict[str, Hijack] = {
    "garbage": _garbage, "undecodable": _undecodable, "extra_fds": _extra_fds, "huge": _huge,
    "huge_error": _huge_error, "unterminated": _unterminated, "wrong_kind": _wrong_kind, "pipe_body": _pipe_body,
}
#: Modes that misbehave other than by hijacking the execution reply.
OTHER_MODES = ("bool_flags", "orphans", "truncate")


class HostileHost(DriverHost):
    def __init__(self, device: MisbehavingDevice, sock: socket.socket, mode: str) -> None:
        super().__init__(device, sock, owns_process=True)
        self.mode = mode
        self.hijacked: int | None = None

    def hello_flags(self) -> list[str]:
        # A first-protocol driver (no OPEN): the request numbers the hostile tests name stay those of revision 1.
        return [flag for flag in super().hello_flags() if not flag.startswith(p.REVISION_FLAG_PREFIX)]

    def _faulty(self, r: Reader) -> bool:
        handle = struct.unpack_from("<I", r.data, r.pos)[0]
        return isinstance(self.objects.get(handle), FaultyPrepared)

    def _execute(self, r: Reader, seq: int, taken: set[int]):  # type: ignore[override]
        faulty = self._faulty(r)
        answer = super()._execute(r, seq, taken)
        if faulty and self.mode in MODES:
            self.hijacked = seq
        elif faulty and self.mode == "orphans":
            sleeper = [sys.executable, "-c", "import time; time.sleep(1000)", ORPHAN_MARK]
            subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        return answer

    def _execute_async(self, r: Reader, seq: int, taken: set[int]):  # type: ignore[override]
        faulty = self._faulty(r)
        answer = super()._execute_async(r, seq, taken)
        if faulty and self.mode in MODES:
            self.hijacked = seq  # the launch reply
        return answer

    def _supported_operations(self, r: Reader, seq: int, taken: set[int]):  # type: ignore[override]
        writer, after = super()._supported_operations(r, seq, taken)
        if self.mode == "bool_flags" and self.mul_model:
            n = struct.unpack_from("<I", writer.buf)[0]
            writer.buf[4:] = b"\x02" * n  # "maybe": neither 0 nor 1
        return writer, after

    def _start(self, message: p.Message):  # type: ignore[override]
        reader, taken = super()._start(message)
        self.mul_model = False
        if message.code == Method.GET_SUPPORTED_OPERATIONS:
            model = p.read_model(Reader(reader.data[reader.pos:], message.fds), self.pool)
            self.mul_model = any(op.type == OperationType.MUL for op in model.main.operations)
        return reader, taken

    def send(self, seq: int, code: int, status: int, body: bytes | bytearray, fds: Sequence[int] = ()) -> None:
        if self.hijacked == seq and code & p.REPLY:
            self.hijacked = None
            with self._send_lock:
                MODES[self.mode](self, seq, code, bytes(body))
            return
        super().send(seq, code, status, body, fds)


def _truncate(request) -> None:  # type: ignore[no-untyped-def]
    for pool in request.pools:
        if isinstance(pool, Memory) and pool.fd >= 0:
            with contextlib.suppress(OSError):  # a sealed pool: a C driver would ignore the error too
                os.ftruncate(pool.fd, 0)


def main(argv: Sequence[str]) -> int:
    mode = argv[0]
    if mode not in MODES and mode not in OTHER_MODES:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fault = (lambda request: None) if mode != "truncate" else _truncate
    device = MisbehavingDevice(fault, f"hostile-exec-{mode}")
    if mode == "truncate":
        # Truncate *after* executing: the harness then reads a shrunk file.
        from tests.fakes.hostile import AfterDevice

        device = AfterDevice(lambda request, result: _truncate(request), f"hostile-exec-{mode}")  # type: ignore[arg-type]
    sock = socket.socket(fileno=int(os.environ.get("NNVTS_SOCKET_FD", "3")))
    return HostileHost(device, sock, mode).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
