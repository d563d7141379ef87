"""The harness's defences one by one, in this process (a SIGBUS here would kill pytest itself)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import threading
import time

import pytest

from vts import bounds
from vts.families.base import Case, Family, Outcome, RunOptions
from vts.hal import memory
from vts.hal.memory import PoolTruncated
from vts.ipc import protocol as p
from vts.ipc.client import Connection
from vts.ipc.errors import EncodingError, ProtocolViolation
from vts.results import Verdict
from vts.run.runner import Runner, run_family_case


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _answer_with(records: list[tuple[bytes, list[int]]]) -> tuple[Connection, threading.Thread]:
    """A connection whose 'driver' answers the first request with these raw records."""
    harness, driver = p.socket_pair()

    def serve() -> None:
        receiver = p.Receiver(driver)
        message = receiver.receive()
        assert message is not None
        for data, fds in records:
            ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
            driver.sendmsg([data], ancillary)
            for fd in fds:
                os.close(fd)
        driver.settimeout(10)
        with contextlib.suppress(OSError):
            driver.recv(1)  # until the harness hangs up
        driver.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    connection = Connection(harness)
    connection.deadline = time.monotonic() + 10
    return connection, thread


def test_descriptors_attached_to_replies_are_closed_at_once():
    """A driver attaching descriptors (up to more than fit) to its replies must not leak them into the harness."""
    before = _open_fds()
    for count in (1, 5, 40):
        fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(count)]
        reply = p.HEADER.pack(8, 1, p.Method.GET_TYPE | p.REPLY, 0, min(count, 253), 0) + struct.pack("<q", 2)
        connection, thread = _answer_with([(reply, fds)])
        with pytest.raises(ProtocolViolation, match="file descriptors"):
            connection.call(p.Method.GET_TYPE, None, lambda r, taken: r.i64())
        connection.close()
        thread.join(5)
    assert _open_fds() == before


@pytest.mark.parametrize(("record", "why"), [
    (b"\x00" * 5, "shorter than the 16-byte header"),
    (p.HEADER.pack(1 << 31, 1, p.Method.GET_TYPE | p.REPLY, 0, 0, 0), "limit 67108864"),
    (p.HEADER.pack(8, 1, p.Method.GET_TYPE | p.NOTIFY, 0, 0, 0) + bytes(8), "only execute_async has completions"),
    (p.HEADER.pack(8, 9, p.Method.GET_TYPE | p.REPLY, 0, 0, 0) + bytes(8), "not outstanding"),
    (p.HEADER.pack(8, 1, p.Method.GET_TYPE, 0, 0, 0) + bytes(8), "neither a reply nor a completion"),
    (p.HEADER.pack(4, 1, p.Method.GET_TYPE | p.REPLY, 0x999, 0, 0) + bytes(4), "unknown status 2457"),
])
def test_malformed_messages_are_protocol_violations(record, why):
    connection, thread = _answer_with([(record, [])])
    with pytest.raises(ProtocolViolation, match=why):
        connection.call(p.Method.GET_TYPE, None, lambda r, taken: r.i64())
    connection.close()
    thread.join(5)


def test_driver_text_is_cut_and_marked():
    w = p.Writer()
    p.write_error(w, "é" * 100_000, (), None)
    message, _, _ = p.read_error(p.Reader(bytes(w.buf)))
    assert len(message.encode()) < bounds.MAX_TEXT + 40
    assert message.endswith(f"…[cut: {200_000 - bounds.MAX_TEXT} bytes]")
    w = p.Writer()
    w.raw(b"\xff\xfe" + b"ok")  # invalid UTF-8 never reaches a report as lone surrogates
    assert p.Reader(bytes(w.buf)).text() == "\ufffd\ufffdok"


def test_output_shape_limits():
    w = p.Writer()
    w.u32(1)
    w.i64_list([1] * (bounds.MAX_RANK + 1))
    w.boolean(True)
    with pytest.raises(p.ProtocolError, match="dimensions"):
        p.read_output_shapes(p.Reader(bytes(w.buf)))


def test_sealed_pools_cannot_be_resized():
    for kind in (memory.ASHMEM, memory.HARDWARE_BUFFER_BLOB):
        pool = memory.allocate(kind, 4096)
        try:
            assert pool.sealed
            with pytest.raises(PermissionError):
                os.ftruncate(pool.fd, 0)
            with pytest.raises(PermissionError):
                os.ftruncate(pool.fd, 1 << 30)
            assert pool.read(4090, 6) == bytes(6)
        finally:
            pool.close()


def test_a_truncated_unsealed_pool_cannot_kill_the_harness():
    pool = memory.allocate(memory.MMAP_FD, 3 * 4096)
    try:
        assert not pool.sealed
        pool.write(8192, b"abc")
        os.ftruncate(pool.fd, 100)  # what a hostile driver does to its copy of the descriptor
        with pytest.raises(PoolTruncated, match="from 12288 to 100 bytes"):
            pool.read(8192, 3)
        with pytest.raises(PoolTruncated):
            pool.array(4096, "<f4", 4)
        with pytest.raises(PoolTruncated):
            pool.write(8192, b"xyz")
        with pytest.raises(PoolTruncated):
            pool.check_size()
        assert pool.read(0, 4) == bytes(4)  # what is still there reads fine
    finally:
        pool.close()


def test_harness_side_encoding_errors_are_errors_not_driver_faults():
    harness, driver = p.socket_pair()
    connection = Connection(harness)
    with pytest.raises(EncodingError, match="cannot encode the execute request"):
        connection.call(p.Method.EXECUTE, lambda w: w.i64(1 << 70))
    connection.close()
    driver.close()

    class Encoding(Family):
        name = "encoding"

        def run(self, case, device, options):
            raise EncodingError("the harness cannot encode the execute request: struct.error: argument out of range")

    outcome = run_family_case(Encoding(), Case("c", "encoding"), None, RunOptions())  # type: ignore[arg-type]
    assert outcome.verdict is Verdict.ERROR and outcome.reason.startswith("harness: ")


class _Raising(Family):
    name = "raising"

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def run(self, case, device, options):
        if self.error is None:
            os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C
            time.sleep(1)  # the handler raises here
        elif isinstance(self.error, BaseException):
            raise self.error
        return Outcome(Verdict.PASSED)


class _Sink:
    def __init__(self) -> None:
        self.results = []
        self.interrupted = None

    def add(self, result):
        self.results.append(result)

    def finish(self, interrupted):
        self.interrupted = interrupted


@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt("from the driver"), GeneratorExit(),
                                   type("DriverQuits", (BaseException,), {})("bye")],
                         ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit", "own"])
def test_a_base_exception_from_an_in_process_driver_is_a_verdict(error):
    sink = _Sink()
    cases = [(_Raising(error), Case("a", "raising")), (_Raising(RuntimeError("x")), Case("b", "raising"))]
    assert Runner(None, RunOptions(case_timeout=10)).run(cases, [sink]) is True  # type: ignore[arg-type]
    assert [r.verdict for r in sink.results] == [Verdict.FAILED, Verdict.FAILED]
    assert sink.results[0].reason.startswith(f"driver raised {type(error).__name__}")


def test_the_users_ctrl_c_still_interrupts():
    sink = _Sink()
    cases = [(_Raising(None), Case("a", "raising")), (_Raising(RuntimeError("x")), Case("b", "raising"))]
    # A suite started in the background by a shell without job control inherits SIGINT ignored; the user's
    # Ctrl-C this test sends must arrive as it would at a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert Runner(None, RunOptions(case_timeout=10)).run(cases, [sink]) is False  # type: ignore[arg-type]
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sink.interrupted is True and sink.results == []


def test_results_are_bounded():
    class Chatty(Family):
        name = "chatty"

        def run(self, case, device, options):
            return Outcome(Verdict.FAILED, "r" * 10_000_000, tuple("d" * 100_000 for _ in range(1000)))

    sink = _Sink()
    Runner(None, RunOptions(case_timeout=10)).run([(Chatty(), Case("c", "chatty"))], [sink])  # type: ignore[arg-type]
    (result,) = sink.results
    assert len(result.reason) < bounds.MAX_RESULT_TEXT + 40 and "…[cut: " in result.reason
    assert sum(map(len, result.details)) < bounds.MAX_RESULT_DETAILS_TEXT + bounds.MAX_RESULT_TEXT + 100
