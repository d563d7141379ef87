"""Run driver calls from several harness threads at once, bounded by the case's time.

The HAL lets a client issue requests on one prepared model from many threads
("Multiple requests can be initiated in parallel on the same
IPreparedModel", driver guide), so the concurrency, burst and multi-client
families must too.  Threads here are daemons: a driver call that never
returns must not keep the harness process alive, and the case ends when
its time is up whatever the threads do.

Every task's result or exception is kept for the family to judge.  A lost
out-of-process driver (``DriverLost``) is re-raised on the calling thread,
so the runner reports the case as crashed or timed out, as for any family.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vts.families.base import CaseFailure
from vts.ipc.errors import DriverLost


@dataclass(slots=True)
class Finished:
    value: Any = None
    error: BaseException | None = None


def run_concurrently(tasks: Sequence[Callable[[], Any]], threads: int, timeout: float) -> list[Finished]:
    """Run ``tasks`` on ``threads`` daemon threads that start together; results in task order.

    CaseFailure when they have not all finished within ``timeout`` seconds
    (a deadlock or a lost request is the driver's failure).
    """
    pending: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(tasks)):
        pending.put(index)
    results: list[Finished | None] = [None] * len(tasks)
    done = threading.Condition()
    gate = threading.Event()

    def worker() -> None:
        gate.wait()
        while True:
            try:
                index = pending.get_nowait()
            except queue.Empty:
                return
            try:
                outcome = Finished(value=tasks[index]())
            except BaseException as error:  # judged by the family, re-raised if the driver was lost
                outcome = Finished(error=error)
            with done:
                results[index] = outcome
                done.notify_all()

    for number in range(max(1, min(threads, len(tasks)))):
        threading.Thread(target=worker, daemon=True, name=f"nnvts-concurrent-{number}").start()
    gate.set()
    until = time.monotonic() + timeout
    with done:
        while any(r is None for r in results):
            left = until - time.monotonic()
            if left <= 0:
                missing = sum(r is None for r in results)
                raise CaseFailure(f"{missing} of {len(tasks)} concurrent calls did not return within {timeout:g} s "
                                  "(a deadlock, or a request lost under concurrency)")
            done.wait(left)
    finished = [r for r in results if r is not None]
    for outcome in finished:
        if isinstance(outcome.error, DriverLost):
            raise outcome.error
    return finished
