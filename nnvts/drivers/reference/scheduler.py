"""The reference driver's execution queue: asynchronous executions run by priority.

The HAL lets a driver favour higher-priority prepared models; the reference
driver does, with one device-wide worker and a priority queue (HIGH before
MEDIUM before LOW, first come first served within a priority), so the
priority family has a real scheduler to measure.  Synchronous executions
run on the caller's thread, as in the sample driver.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class PriorityScheduler:
    def __init__(self, workers: int = 1) -> None:
        self._queue: list[tuple[int, int, Callable[[], Any], Future[Any]]] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._workers = [threading.Thread(target=self._work, daemon=True, name=f"nnvts-reference-exec-{i}")
                         for i in range(workers)]
        for worker in self._workers:
            worker.start()

    def submit(self, priority: int, job: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._ready:
            heapq.heappush(self._queue, (-priority, next(self._order), job, future))
            self._ready.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                _, _, job, future = heapq.heappop(self._queue)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as error:
                future.set_exception(error)
