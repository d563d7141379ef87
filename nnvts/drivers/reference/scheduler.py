"""The reference driver's execution queue: asynchronous executions run by priority, within each client.

The HAL lets a driver favour higher-priority prepared models; the reference
driver does, with one device-wide worker and a priority queue (HIGH before
MEDIUM before LOW, first come first served within a priority), so the
priority family has a real scheduler to measure.  Priorities are compared
only within one client (NNAPI: relative to the models of the same
application): each client (``vts.hal.CALLING_CLIENT``, set by the service
serving several) has a queue of its own, and the worker takes from the
clients' queues in turn, so one client's HIGH never waits out another's
LOW, nor the reverse.  Synchronous executions run on the caller's thread,
as in the sample driver.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from vts.hal import CALLING_CLIENT


class PriorityScheduler:
    def __init__(self, workers: int = 1) -> None:
        #: Per client (``CALLING_CLIENT`` at submit): its heap of (-priority, order, job, future).
        self._queues: dict[object, list[tuple[int, int, Callable[[], Any], Future[Any]]]] = {}
        #: Clients with work queued, in the order the worker serves them (round robin).
        self._turns: deque[object] = deque()
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._workers = [threading.Thread(target=self._work, daemon=True, name=f"nnvts-reference-exec-{i}")
                         for i in range(workers)]
        for worker in self._workers:
            worker.start()

    def submit(self, priority: int, job: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        client = CALLING_CLIENT.get()
        with self._ready:
            queue = self._queues.get(client)
            if queue is None:
                queue = self._queues[client] = []
                self._turns.append(client)
            heapq.heappush(queue, (-priority, next(self._order), job, future))
            self._ready.notify()
        return future

    def _next(self) -> tuple[Callable[[], Any], Future[Any]]:
        """The next job: the highest priority of the client whose turn it is (call with ``_ready`` held)."""
        client = self._turns.popleft()
        queue = self._queues[client]
        _, _, job, future = heapq.heappop(queue)
        if queue:
            self._turns.append(client)
        else:
            del self._queues[client]
        return job, future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._turns:
                    self._ready.wait()
                job, future = self._next()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as error:
                future.set_exception(error)
