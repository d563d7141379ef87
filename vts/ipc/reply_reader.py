"""The harness's reading side of one connection: who reads the socket, and who gets each message.

Speed matters (a sweep makes millions of calls), so the calling thread reads
its own reply (leader/follower): a thread hand-off costs ~80 us in CPython,
the whole round trip ~15 us.  The reader keeps the socket until its own
answer is in, waking only the callers a message answers, and then hands the
socket to one caller still waiting (waking every waiting thread on every
message cost the concurrency family 8% of its CPU).  Only when nobody is
calling and an asynchronous execution is outstanding does a background
thread (the pump) read.

Nothing the driver sends is trusted (docs/protocol.md §8.1): a message must
be the reply or completion of an outstanding request; anything else fails
the connection with ``ProtocolViolation``.  Once failed, every waiting and
later call raises the same ``DriverLost``.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from vts import bounds
from vts.ipc import protocol as p
from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout, ProtocolError, ProtocolViolation
from vts.ipc.protocol import Method

if TYPE_CHECKING:
    from vts.ipc.remote_future import RemoteFuture

__all__ = ["CALL_NAMES", "BatchSlot", "ReplyReader", "Slot"]

#: "execute", "prepare_model"...: what a timeout or a crash reason names.
CALL_NAMES = {method: method.name.lower() for method in Method}

#: How long the background reader waits before taking the socket, so a thread
#: about to wait for its own answer reads it itself (no hand-off).
_PUMP_GRACE = 0.002


class Slot:
    """Where the reply to one request lands (``message``), and what the request was."""

    __slots__ = ("message", "method", "what")

    def __init__(self, method: Method) -> None:
        self.message: p.Message | None = None
        self.method = method
        self.what = CALL_NAMES[method]


class BatchSlot(Slot):
    """Where a ``BATCH``'s reply lands: split into one answer per call, each put in that call's slot."""

    __slots__ = ("items",)

    def __init__(self, items: list[Slot]) -> None:
        super().__init__(Method.BATCH)
        self.items = items


class ReplyReader:
    """Reads one connection's messages and hands each to the call or future it answers."""

    def __init__(self, sock: socket.socket, describe_death: Callable[[], DriverCrashed]) -> None:
        self._receiver = p.Receiver(sock, bounds.DRIVER_FD_SPACE, bounds.MAX_DRIVER_BODY)
        self._readable = select.poll()
        self._readable.register(sock, select.POLLIN)
        self.describe_death = describe_death
        #: Set once the host is lost; every later call raises it.
        self.failure: DriverLost | None = None
        #: Re-entrant: a failure found while it is held (a caller's timeout) fails the connection under it.
        self._lock = threading.RLock()
        #: The background reader's condition; each waiting caller has one of its own (``_waiting``).
        self._cond = threading.Condition(self._lock)
        self._reader_active = False
        #: Callers waiting while another thread reads: each one's ``done`` and its own condition.
        self._waiting: list[tuple[Callable[[], bool], threading.Condition]] = []
        self._replies: dict[int, Slot] = {}
        self._futures: dict[int, RemoteFuture] = {}
        self._pump: threading.Thread | None = None
        #: Whether the stream reported a reset once (``_read_one``).
        self._reset_seen = False

    def expect(self, seq: int, slot: Slot, future: RemoteFuture | None = None) -> None:
        """Request ``seq`` is about to be sent: its reply goes to ``slot``, its completion to ``future``."""
        with self._cond:
            self._replies[seq] = slot
            if future is not None:
                self._futures[seq] = future

    def forget(self, seq: int) -> None:
        """Request ``seq`` was not sent after all, or its launch failed: expect nothing more for it."""
        with self._cond:
            self._replies.pop(seq, None)
            self._futures.pop(seq, None)

    def outstanding(self) -> int:
        """Requests sent and not answered yet."""
        with self._cond:
            return len(self._replies)

    def wait(self, done: Callable[[], bool], deadline: float | None, what: str,
             caller_deadline: float | None = None) -> None:
        """Read messages (or let another thread read them) until ``done()``.

        A caller waiting while another thread reads sleeps on a condition of
        its own, woken when a message makes its ``done()`` true, when the
        reader hands it the socket, or when the connection fails.
        ``deadline`` is the connection's limit (DriverTimeout, and the
        connection is given up: a stuck host may never answer again);
        ``caller_deadline`` a ``Future.result(timeout)`` limit (TimeoutError).
        """
        until = deadline if caller_deadline is None else (
            caller_deadline if deadline is None else min(deadline, caller_deadline))
        while True:
            if self._take_socket_or_return(done, deadline, caller_deadline, until, what):
                return
            try:
                while True:
                    self._read_one(until)
                    if done() or self.failure is not None or (until is not None and time.monotonic() >= until):
                        break
            finally:
                with self._lock:
                    self._reader_active = False
                    self._hand_off()

    def _take_socket_or_return(self, done: Callable[[], bool], deadline: float | None,
                               caller_deadline: float | None, until: float | None, what: str) -> bool:
        """Sleep until ``done()`` (True) or until this thread may read (False, the socket taken)."""
        with self._lock:
            waiter: tuple[Callable[[], bool], threading.Condition] | None = None
            try:
                while True:
                    if done():
                        return True
                    if self.failure is not None:
                        raise self.failure
                    now = time.monotonic()
                    if caller_deadline is not None and now >= caller_deadline:
                        raise FutureTimeout()
                    if deadline is not None and now >= deadline:
                        self.fail(DriverTimeout(f"no answer to {what} within the time limit"))
                        assert self.failure is not None
                        raise self.failure
                    if not self._reader_active:
                        self._reader_active = True
                        return False
                    if waiter is None:
                        waiter = (done, threading.Condition(self._lock))
                        self._waiting.append(waiter)
                    waiter[1].wait(None if until is None else until - now)
            finally:
                if waiter is not None:
                    self._waiting.remove(waiter)

    def _hand_off(self) -> None:
        """Give the socket (the lock held, no reader) to one caller still waiting, else to the background reader."""
        for done, waiter in self._waiting:
            if not done():
                waiter.notify()
                return
        if self._futures:
            self._cond.notify()

    def _wake_answered(self) -> None:
        """Wake the callers (the lock held) whose answer a message just delivered; nobody else."""
        for done, waiter in self._waiting:
            if done():
                waiter.notify()

    def _read_one(self, until: float | None) -> None:
        """Read one message (as the active reader) and deliver it; return early when ``until`` passes."""
        try:
            wait = None if until is None else max(until - time.monotonic(), 0.0) * 1000
            if not self._readable.poll(wait):
                return
            message = self._receiver.receive()
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionResetError as error:
            # The host ended with requests of ours still unread (calls sent ahead, or in flight on another
            # thread).  Linux says so once, before the answers the host did send, which are still queued:
            # read them first (each is its call's own answer), then the end of the stream.
            if self._reset_seen:
                self.lose(error)
            self._reset_seen = True
            return
        except (OSError, ProtocolError) as error:
            self.lose(error)
            return
        if message is None:
            self.lose()
            return
        self._deliver(message)

    def _deliver(self, message: p.Message) -> None:
        """Hand a message to the call or future it answers; anything else is a protocol violation."""
        kind = message.code & (p.NOTIFY | p.REPLY)
        with self._cond:
            if kind == p.REPLY:
                problem = self._deliver_reply(message)
                if problem is None:
                    return
                future = None
            elif kind == p.NOTIFY:
                future, problem = self._completed_future(message)
            else:
                future, problem = None, f"a message with code {message.code:#x}, neither a reply nor a completion"
        if problem is not None:
            p.close_fds(message.fds)
            self.violation(problem)
            return
        assert future is not None
        future.complete(message)
        with self._lock:
            self._wake_answered()

    def _deliver_reply(self, message: p.Message) -> str | None:
        """Put a reply in its slot and wake its caller (the lock held); what is wrong with it, if anything."""
        method = message.code & ~(p.NOTIFY | p.REPLY)
        slot = self._replies.get(message.seq)
        if slot is None:
            return f"a reply (code {message.code:#x}) to request {message.seq}, which is not outstanding"
        if method != slot.method:
            return (f"the reply to {slot.what} (request {message.seq}) carries code {message.code:#x}, "
                    f"expected {slot.method | p.REPLY:#x}")
        if isinstance(slot, BatchSlot):
            problem = _split_batch(message, slot)
            if problem is not None:
                return problem
        del self._replies[message.seq]
        slot.message = message
        self._wake_answered()
        return None

    def _completed_future(self, message: p.Message) -> tuple[RemoteFuture | None, str | None]:
        """The future a completion completes (the lock held), or what is wrong with the completion."""
        method = message.code & ~(p.NOTIFY | p.REPLY)
        if method != Method.EXECUTE_ASYNC:
            return None, f"a completion with code {message.code:#x} (only execute_async has completions)"
        if message.seq in self._replies:
            return None, f"the completion of request {message.seq} arrived before its launch reply"
        future = self._futures.pop(message.seq, None)
        if future is None:
            return None, f"a completion of request {message.seq}, which has none outstanding"
        return future, None

    def violation(self, what: str) -> DriverLost:
        """The driver broke the protocol: fail the connection (pending and later calls) and return why."""
        self.fail(ProtocolViolation(f"protocol violation: {what}"))
        assert self.failure is not None
        return self.failure

    def lose(self, error: BaseException | None = None) -> None:
        """The byte stream ended or broke: the host is gone (or beyond trust)."""
        if self.failure is not None:
            self.fail(self.failure)
            return
        if isinstance(error, ProtocolError):
            self.violation(f"malformed message from the driver: {error}")
            return
        with self._cond:
            calls = [slot.what for slot in self._replies.values()]
            calls += [future.what for future in self._futures.values()]
        death = self.describe_death()
        if calls:
            death = DriverCrashed(f"{death.reason} during {calls[0]}", death.stderr_tail)
        self.fail(death)

    def fail(self, failure: DriverLost) -> None:
        """Fail the connection with ``failure`` (the first failure stays): wake every waiter, fail every future."""
        with self._cond:
            if self.failure is None:
                self.failure = failure
            futures = list(self._futures.values())
            self._futures.clear()
            for _, waiter in self._waiting:
                waiter.notify()
            self._cond.notify_all()
        for future in futures:
            if not future.done():
                future.set_exception(self.failure)

    def start_pump(self) -> None:
        """Start the background reader (once): completions arrive while no caller reads."""
        with self._cond:
            if self._pump is None:
                self._pump = threading.Thread(target=self._pump_loop, daemon=True, name="nnvts-ipc-pump")
                self._pump.start()

    def _pump_loop(self) -> None:
        while True:
            with self._cond:
                while self.failure is None and (not self._futures or self._reader_active):
                    self._cond.wait(1.0)
                if self.failure is not None:
                    return
                # Leave the socket to a thread about to wait for its own answer.
                self._cond.wait(_PUMP_GRACE)
                if self._reader_active or not self._futures or self.failure is not None:
                    continue
                self._reader_active = True
            try:
                self._read_one(time.monotonic() + 0.05)
            finally:
                with self._lock:
                    self._reader_active = False
                    self._hand_off()


def _split_batch(message: p.Message, slot: BatchSlot) -> str | None:
    """Put each answer of a ``BATCH`` reply in its call's slot; what is wrong with the reply, if anything.

    A batch refused as a whole (a status other than NONE: a driver that cannot decode it) answers each
    of its calls with that status and body, so each call's case reads the refusal as its own.
    """
    if message.fds:
        return f"{len(message.fds)} file descriptors attached to the answer to a batch"
    if message.status != 0:
        answers = [(message.status, bytes(message.body))] * len(slot.items)
    else:
        try:
            answers = p.read_batch_reply(p.Reader(message.body), len(slot.items))
        except ProtocolError as error:
            return f"malformed answer to a batch: {error}"
    for item, (status, body) in zip(slot.items, answers, strict=True):
        item.message = p.Message(message.seq, item.method | p.REPLY, status, body)
    return None
