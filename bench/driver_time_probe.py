"""Measurement only: the thread CPU a process spends inside the reference driver's entry points.

Imported at start-up by a ``sitecustomize`` that ``bench.driver_share`` puts first on ``PYTHONPATH``, so it
runs in every Python process of a measured ``nnvts run``: the harness, its ``-j`` workers, each driver host
and its init.  Where ``NNVTS_DRIVER_TIME_DIR`` is set, it wraps the calls a harness makes into a device or a
prepared model (``CheckedDevice`` and ``CheckedPreparedModel``, which every reference entry point goes
through, and the reference device's own ``allocate`` and ``prepare_model_from_cache``) and, at exit, writes
one line to ``NNVTS_DRIVER_TIME_DIR/<pid>``: the seconds of thread CPU inside them (outermost calls only,
so nested entry points are counted once) and the process's own CPU from ``getrusage``.

Thread CPU, not wall time: a driver call that waits (an asynchronous execution, a deadline) counts what it
computed, not how long it took.  Work a driver does on threads of its own (the reference's asynchronous and
fenced executions) is counted where it runs inside a wrapped call only; what those threads do after the
call returned is the process's, not the driver's, in these figures: ``bench.driver_share`` says so.
"""

from __future__ import annotations

import atexit
import functools
import os
import resource
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

_spent = [0.0]
#: Where the figures go, and when they were last written: after the first call, then ``_EVERY`` seconds apart
#: at most while calls come, and at exit (a host killed after the stop grace writes no exit figures).
_directory = [""]
_written = [0.0]
_EVERY = 0.5
#: This process's file: its pid is no name, each contained host is pid 2 of a PID namespace of its own (three
#: hosts of one run wrote one file "2", the last to exit winning: a run's driver time read 0 now and then).
_NAME = f"{os.getpid()}-{uuid.uuid4().hex}"
_lock = threading.Lock()
_inside = threading.local()


def _timed(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "depth", 0):
            return call(*args, **kwargs)
        _inside.depth = 1
        start = time.thread_time()
        try:
            return call(*args, **kwargs)
        finally:
            spent = time.thread_time() - start
            _inside.depth = 0
            with _lock:
                _spent[0] += spent
                due = _directory[0] and time.monotonic() >= _written[0] + _EVERY
                if due:
                    _written[0] = time.monotonic()
            if due:  # also now and then: a host still exiting when the harness's grace ran out is killed
                _write(_directory[0])

    return timed


def _wrap(cls: type, names: tuple[str, ...]) -> None:
    for name in names:
        call = cls.__dict__.get(name)
        if call is not None:
            setattr(cls, name, _timed(call))


def _write(directory: str) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    role = " ".join(os.path.basename(a) for a in sys.argv[:2])
    with open(os.path.join(directory, _NAME), "w", encoding="utf-8") as out:
        out.write(f"{_spent[0]:.6f} {usage.ru_utime + usage.ru_stime:.6f} {role}\n")


def install() -> None:
    directory = os.environ.get("NNVTS_DRIVER_TIME_DIR")
    if not directory:
        return
    from nnvts.drivers.reference.device import ReferenceDevice
    from vts.hal.checked import CheckedDevice, CheckedPreparedModel

    _wrap(CheckedDevice, ("get_supported_operations", "prepare_model"))
    _wrap(CheckedPreparedModel, ("execute", "execute_async", "execute_fenced"))
    _wrap(ReferenceDevice, ("allocate", "prepare_model_from_cache"))
    _directory[0] = directory
    _written[0] = float("-inf")  # the first call's figures are written at once
    atexit.register(_write, directory)
