"""Hostile Python drivers: each turns on the harness itself, not just on its own answers.

Like ``tests.fakes.misbehaving``, each is the reference driver whose
prepared models of MUL-containing models misbehave, so a run over an ADD
spec and a MUL spec shows both halves: the MUL case ends in its documented
verdict (docs/protocol.md, "Hostile drivers") and the ADD case still
passes.  Every public name is a factory usable as
``--driver tests.fakes.hostile:NAME``; ``EXPECTED`` is the table the
tests check.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future

from nnvts.drivers.reference.device import ReferenceDevice
from tests.fakes.misbehaving import FaultyPrepared, MisbehavingDevice
from vts.hal.enums import ErrorStatus, MeasureTiming, OperationType
from vts.hal.errors import DriverError
from vts.hal.memory import Memory
from vts.hal.types import ExecutionResult, Model, OutputShape, Request, Timing

#: Argument every orphan process carries, so a test can look for survivors.
ORPHAN_MARK = "nnvts-hostile-orphan"
#: Environment variable marking the processes of a test's harness: what ``proc_scan_device`` hunts.
VICTIM_ENV = "NNVTS_HOSTILE_VICTIM"
#: Environment variable whose value ``escape_and_hang_device`` appends to ORPHAN_MARK (one test's own mark).
TAG_ENV = "NNVTS_HOSTILE_TAG"
#: Environment variable naming a loopback port ``network_device`` tries to reach.
PORT_ENV = "NNVTS_HOSTILE_PORT"


class AfterPrepared(FaultyPrepared):
    """Executes normally, then runs ``fault(request, result)``, which may replace the result."""

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        result = self.inner.execute(request, measure, deadline, loop_timeout)
        return self.fault(request, result) or result  # type: ignore[call-arg,func-returns-value]

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        inner = self.inner.execute_async(request, measure, deadline, loop_timeout)
        outer: Future[ExecutionResult] = Future()

        def done(finished: Future[ExecutionResult]) -> None:
            try:
                result = finished.result()
                outer.set_result(self.fault(request, result) or result)  # type: ignore[call-arg]
            except BaseException as error:
                outer.set_exception(error)

        inner.add_done_callback(done)
        return outer

    def execute_fenced(self, request: Request, *args: object, **kwargs: object):  # type: ignore[override]
        return self.inner.execute_fenced(request, *args, **kwargs)  # type: ignore[arg-type]


class AfterDevice(MisbehavingDevice):
    def prepare_model(self, model: Model, *args: object, **kwargs: object):  # type: ignore[override]
        prepared = ReferenceDevice.prepare_model(self, model, *args, **kwargs)  # type: ignore[arg-type]
        if any(op.type == OperationType.MUL for op in model.main.operations):
            return AfterPrepared(prepared, self.fault)
        return prepared


def _pools(request: Request) -> list[Memory]:
    return [pool for pool in request.pools if isinstance(pool, Memory) and pool.fd >= 0]


def _truncate(request: Request, result: ExecutionResult) -> None:
    for pool in _pools(request):
        os.ftruncate(pool.fd, 0)  # a sealed memfd refuses (EPERM); an mmap_fd file shrinks


def _scribble(request: Request, result: ExecutionResult) -> None:
    """Write one byte just past output 0's region (inside the pool: the 64-byte alignment padding)."""
    loc = request.outputs[0].location
    pool = request.pools[loc.pool_index]
    assert isinstance(pool, Memory)
    at = loc.offset + loc.length
    if at < pool.size:
        pool.write(at, b"\xab")


def _huge_error(request: Request) -> None:
    raise DriverError(ErrorStatus.GENERAL_FAILURE, "E" * (50 << 20))


def _bad_shape(request: Request, result: ExecutionResult) -> ExecutionResult:
    return ExecutionResult((OutputShape((2.5, 2), True),), Timing())  # type: ignore[arg-type]


def _system_exit(request: Request) -> None:
    raise SystemExit(3)


def _keyboard_interrupt(request: Request) -> None:
    raise KeyboardInterrupt("raised by the driver, not typed by the user")


class DriverQuits(BaseException):
    """A driver's own BaseException subclass (escapes ``except Exception``)."""


def _base_exception(request: Request) -> None:
    raise DriverQuits("the driver gives up")


def _orphans(request: Request, result: ExecutionResult) -> None:
    """Start two processes that would outlive the driver: one in its process group, one double-forked
    into a session of its own with an empty environment (found as an orphan re-parented to the host)."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(1000)", ORPHAN_MARK]
    subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.Popen(sys.argv[1:], "
                      "start_new_session=True, env={})", *sleeper],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()


def _orphan_then_crash(request: Request) -> None:
    """Start a process in the host's group, then die of SIGSEGV: the orphan must die with the host."""
    import ctypes

    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", ORPHAN_MARK],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctypes.string_at(0)


def _signal_parent(signum: int) -> Callable[[Request, ExecutionResult], None]:
    """Send ``signum`` to the process that started the driver (the harness, unless contained)."""
    def fault(request: Request, result: ExecutionResult) -> None:
        os.kill(os.getppid(), signum)
    return fault


def _proc_scan(request: Request, result: ExecutionResult) -> None:
    """Find the harness by scanning /proc (every process whose environment carries VICTIM_ENV), stop and kill it."""
    entry = f"{VICTIM_ENV}={os.environ.get(VICTIM_ENV, '')}\0".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid() or not os.environ.get(VICTIM_ENV):
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if entry not in handle.read() + b"\0":
                    continue
            os.kill(int(name), signal.SIGSTOP)
            os.kill(int(name), signal.SIGKILL)
        except OSError:
            continue


def _escape_and_hang(request: Request) -> None:
    """Double fork, setsid, re-exec with an empty environment (an escapee), then hang in the call."""
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            mark = ORPHAN_MARK + os.environ.get(TAG_ENV, "")  # read before the environment is dropped
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(1000)", mark], {})
        os._exit(0)
    os.wait()
    import time

    time.sleep(1000)


def _reach_network(request: Request, result: ExecutionResult) -> None:
    """Connect to the test's loopback listener: a reached network fails the case, so the test can tell."""
    import socket

    try:
        socket.create_connection(("127.0.0.1", int(os.environ[PORT_ENV])), timeout=5).close()
    except OSError:
        return
    raise DriverError(ErrorStatus.GENERAL_FAILURE, "the driver reached the network")


def _slow(request: Request, result: ExecutionResult) -> None:
    """Take half a second per MUL execution: a run long enough for a test to kill one of its -j workers."""
    import time

    time.sleep(0.5)


class YesFlagsDevice(ReferenceDevice):
    """Answers ``"yes"`` instead of True for every operation of a model with a MUL."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "nnvts-yes-flags"

    def get_supported_operations(self, model: Model) -> list[bool]:
        flags = super().get_supported_operations(model)
        if any(op.type == OperationType.MUL for op in model.main.operations):
            return ["yes"] * len(flags)  # type: ignore[list-item]
        return flags


def _after(fault: Callable[..., object], name: str) -> Callable[[], AfterDevice]:
    return lambda: AfterDevice(fault, name)  # type: ignore[arg-type]


truncating_device = _after(_truncate, "truncating")
scribbling_device = _after(_scribble, "scribbling")
bad_shape_device = _after(_bad_shape, "bad-shape")
orphan_device = _after(_orphans, "orphans")
stop_parent_device = _after(_signal_parent(signal.SIGSTOP), "stop-parent")
kill_parent_device = _after(_signal_parent(signal.SIGKILL), "kill-parent")
proc_scan_device = _after(_proc_scan, "proc-scan")
network_device = _after(_reach_network, "network")
slow_device = _after(_slow, "slow")


def escape_and_hang_device() -> MisbehavingDevice:
    return MisbehavingDevice(_escape_and_hang, "escape-and-hang")


def huge_error_device() -> MisbehavingDevice:
    return MisbehavingDevice(_huge_error, "huge-error")


def orphan_then_crash_device() -> MisbehavingDevice:
    return MisbehavingDevice(_orphan_then_crash, "orphan-then-crash")


def system_exit_device() -> MisbehavingDevice:
    return MisbehavingDevice(_system_exit, "system-exit")


def keyboard_interrupt_device() -> MisbehavingDevice:
    return MisbehavingDevice(_keyboard_interrupt, "keyboard-interrupt")


def base_exception_device() -> MisbehavingDevice:
    return MisbehavingDevice(_base_exception, "base-exception")


def yes_flags_device() -> YesFlagsDevice:
    return YesFlagsDevice()


def _close_protocol_socket(request: Request) -> None:
    """Close every socket of the process (the host's protocol socket among them) and live on, the call
    never answered: the harness must end the host at once and report the case within a second (issue 43)."""
    import socket
    import stat
    import time

    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            continue
    while True:
        time.sleep(1)


def closes_socket_device() -> MisbehavingDevice:
    return MisbehavingDevice(_close_protocol_socket, "closes-socket")
