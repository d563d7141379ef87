"""Drivers that misbehave at the process level: crash, hang, exhaust memory, raise, read past a pool.

Each is the reference driver with one fault that strikes only when a model
contains a MUL operation, so one run over an ADD spec and a MUL spec shows
both halves of the isolation contract: the faulty cases end with the right
verdict (CRASH, TIMEOUT, FAILED) and the ADD cases around them still pass.
The faults are real (a null-pointer read, a mapping read past the end of
its file), not simulated exceptions, because what is under test is how the
harness survives a driver process dying.

Every public name is a factory usable as ``--driver tests.fakes.misbehaving:NAME``.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import ExecutionPreference, MeasureTiming, OperationType, Priority
from vts.hal.interfaces import CacheFiles, FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.memory import Memory
from vts.hal.types import ExecutionResult, Model, Request

Fault = Callable[[Request], None]


class FaultyPrepared(PreparedModel):
    """Runs ``fault`` before every execution path, then delegates to the reference prepared model."""

    def __init__(self, inner: PreparedModel, fault: Fault) -> None:
        self.inner = inner
        self.fault = fault

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        self.fault(request)
        return self.inner.execute(request, measure, deadline, loop_timeout)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        self.fault(request)
        return self.inner.execute_async(request, measure, deadline, loop_timeout)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        self.fault(request)
        return self.inner.execute_fenced(request, wait_for, measure, deadline, loop_timeout, timeout_after_fence)


class MisbehavingDevice(ReferenceDevice):
    """The reference device whose prepared models of MUL-containing models (or ``operation``) run ``fault`` first.

    ``every_model``: every prepared model runs it, those prepared from cache too (a build broken
    everywhere, ``tests.fakes.crash_storm``).
    """

    def __init__(self, fault: Fault, name: str, every_model: bool = False,
                 operation: OperationType = OperationType.MUL) -> None:
        super().__init__()
        self.fault = fault
        self.name = f"nnvts-{name}"
        self.every_model = every_model
        self.operation = operation

    def prepare_model(self, model: Model,
                      preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority | int = Priority.MEDIUM, deadline: int | None = None,
                      model_cache: CacheFiles = (), data_cache: CacheFiles = (),
                      token: bytes = bytes(32)) -> PreparedModel:
        prepared = super().prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
        if self.every_model or any(op.type == self.operation for op in model.main.operations):
            return FaultyPrepared(prepared, self.fault)
        return prepared

    def prepare_model_from_cache(self, deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                                 token: bytes) -> PreparedModel:
        prepared = super().prepare_model_from_cache(deadline, model_cache, data_cache, token)
        return FaultyPrepared(prepared, self.fault) if self.every_model else prepared


# -- the faults ----------------------------------------------------------------


def _segfault(request: Request) -> None:
    ctypes.string_at(0)  # a read of address 0: SIGSEGV, as a C driver's null dereference


def _hang(request: Request) -> None:
    while True:  # spins in the interpreter, ignoring everything
        time.sleep(0.01)


def _exhaust_memory(request: Request) -> None:
    hoard: list[bytearray] = []
    while True:  # touched memory, 32 MiB at a time, until the address-space limit says no
        hoard.append(bytearray(32 << 20))


def _raise(request: Request) -> None:
    raise RuntimeError("driver bug: unexpected state in MUL kernel")


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)


def _read_past_pool(request: Request) -> None:
    """Map the input pool with a length beyond its size and read past the end: SIGBUS.

    This is what a driver that trusts a wrong length does with an ashmem or
    memfd pool: the pages beyond the file's end are mapped but not backed.
    """
    pool = request.pools[0]
    assert isinstance(pool, Memory)
    page = os.sysconf("SC_PAGE_SIZE")
    past = (pool.size + page - 1) // page * page + page  # the first byte of the second page past the end
    address = _libc.mmap(None, past + page, 1, 1, pool.fd, 0)  # PROT_READ, MAP_SHARED
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    ctypes.string_at(address + past, 1)


def _slow(request: Request) -> None:
    time.sleep(0.3)


def _crash_once(request: Request) -> None:
    """Crash only the first time per marker file: the re-run alone on a fresh host then passes."""
    marker = os.environ.get("NNVTS_TEST_CRASH_MARKER", "")
    if marker and not os.path.exists(marker):
        with open(marker, "w"):
            pass
        ctypes.string_at(0)


def _crash_later(request: Request) -> None:
    """Answer normally, then crash from a driver thread 0.3 s later (after the case has ended)."""
    import threading

    threading.Timer(0.3, ctypes.string_at, (0,)).start()


# -- factories (module:attr) -----------------------------------------------------------------


def segfault_device() -> MisbehavingDevice:
    return MisbehavingDevice(_segfault, "segfault")


def hang_device() -> MisbehavingDevice:
    return MisbehavingDevice(_hang, "hang")


def memory_hog_device() -> MisbehavingDevice:
    return MisbehavingDevice(_exhaust_memory, "memory-hog")


def raising_device() -> MisbehavingDevice:
    return MisbehavingDevice(_raise, "raising")


def overread_device() -> MisbehavingDevice:
    return MisbehavingDevice(_read_past_pool, "overread")


def slow_device() -> MisbehavingDevice:
    """Every MUL execution takes 0.3 s: for interrupting a run in the middle."""
    return MisbehavingDevice(_slow, "slow")


def crash_once_device() -> MisbehavingDevice:
    return MisbehavingDevice(_crash_once, "crash-once")


def late_crash_device() -> MisbehavingDevice:
    return MisbehavingDevice(_crash_later, "late-crash")


def faults() -> dict[str, Any]:
    """Factory name -> the verdict its MUL cases must get (the tests' table)."""
    return {"segfault_device": "crash", "hang_device": "timeout", "memory_hog_device": "crash",
            "raising_device": "failed", "overread_device": "crash"}
