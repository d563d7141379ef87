"""CPU pinning for ``nnvts run -j N``: each worker, and the driver host it starts, on cores of their own.

A worker and its driver host take turns (the worker sends a request and
waits, the host computes and answers), so each pair keeps about one core
busy.  Left to the scheduler, the two halves of a pair and the other pairs
are spread over all cores: every answer then wakes a process on another
core, caches are shared by everyone, and on a 2-core machine ``-j 2`` spent
as much CPU as a third more work (measured: 104.7 s of CPU against 91.0 s
pinned, for the same 50,908 cases).  Pinned, a pair hands over on its own
core and the pairs do not disturb each other.

Only when the cores can be shared out: ``jobs`` at least 2 and at most the
CPUs this process may use; each worker then gets ``cpus // jobs`` of them
(a multithreaded driver keeps that many).  ``-j 1`` is never pinned, and
``--no-pin-cpus`` turns pinning off (to let a driver's threads use every
core, say, or when the machine runs other jobs on some cores).
"""

from __future__ import annotations

import os


def default_jobs(limit: int) -> int:
    """``nnvts run``'s ``-j`` when none is given: the CPUs this process may use (at most ``limit``).

    deqp-runner and pytest-xdist's ``-n auto`` do the same: a run of a conformance suite is many small
    independent cases, and each worker with its driver keeps about one core busy.
    """
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, limit))


def worker_cpus(slot: int, jobs: int, allowed: list[int] | None = None) -> set[int] | None:
    """The CPUs of worker ``slot`` of ``jobs``, or None when the cores cannot be shared out."""
    if allowed is None:
        if not hasattr(os, "sched_getaffinity"):
            return None  # not Linux: leave placement to the scheduler
        allowed = sorted(os.sched_getaffinity(0))
    if jobs < 2 or jobs > len(allowed):
        return None
    share = len(allowed) // jobs
    return set(allowed[slot * share:(slot + 1) * share])


def pin_worker(slot: int, jobs: int) -> set[int] | None:
    """Pin this process (and so the driver host it starts later) to its share; returns the CPUs or None."""
    cpus = worker_cpus(slot, jobs)
    if cpus is None:
        return None
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        return None  # a container may forbid it: the run goes on unpinned
    return cpus
