"""Drivers that try to escape their sandbox (the probes of issue 42): each attempt that works fails its case.

Like ``tests.fakes.hostile``, each is the reference driver whose MUL cases
misbehave: on a MUL execution the driver tries one escape, and raises
``DriverError("escaped: ...")`` when it worked, so the case fails with that
reason; refused, the case passes.  ``rewriting_device`` instead makes each
MUL case fail, after rewriting every results stream it can find so that the
MUL cases before it say "passed".  Every public name is a factory usable as
``--driver tests.fakes.escape:NAME``.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import signal
import socket
import sysconfig
import tempfile
import time
from collections.abc import Callable

from tests.fakes.hostile import PORT_ENV, AfterDevice
from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.memory import Memory
from vts.hal.types import ExecutionResult, Request

#: A variable of the harness's environment that no driver should see (what a CI token is).
SECRET_ENV = "CI_JOB_TOKEN"
#: The harness's --jsonl file, which ``rewriting_device`` rewrites (an attacker guesses it; the test says it).
STREAM_ENV = "NNVTS_ESCAPE_STREAM"
#: A file outside the sandbox the driver tries to create: in the harness's home, or next to the installation.
TARGET_ENV = "NNVTS_ESCAPE_TARGET"
#: The harness's --memory-limit in MiB, which the six children of ``memory_device`` try to exceed together.
LIMIT_ENV = "NNVTS_ESCAPE_LIMIT_MIB"
#: A file only its owner (the root harness) may read, which ``root_files_device`` reads.
OWNED_ENV = "NNVTS_ESCAPE_OWNED"
#: Name of the .pth file ``pth_device`` drops into site-packages.
PTH_NAME = "nnvts-escape-probe.pth"

_libc = ctypes.CDLL(None, use_errno=True)


def _escaped(what: str) -> None:
    raise DriverError(ErrorStatus.GENERAL_FAILURE, f"escaped: {what}")


def _wrong_output(request: Request) -> None:
    loc = request.outputs[0].location
    pool = request.pools[loc.pool_index]
    assert isinstance(pool, Memory)
    pool.write(loc.offset, b"\x7f" * loc.length)


def _rewrite(request: Request, result: ExecutionResult) -> None:
    """Rewrite every stream found ("failed" -> "passed": the earlier MUL cases), then fail this case."""
    found = [os.environ.get(STREAM_ENV, ""), *glob.glob(os.path.join(tempfile.gettempdir(), "nnvts-results-*"))]
    for path in filter(None, found):
        with contextlib.suppress(OSError), open(path, "r+b") as handle:
            data = handle.read()
            handle.seek(0)
            handle.write(data.replace(b'"verdict":"failed"', b'"verdict":"passed"'))
    _wrong_output(request)


def _pth(request: Request, result: ExecutionResult) -> None:
    """Drop a .pth file into site-packages: the next Python that starts would run it."""
    path = os.path.join(sysconfig.get_paths()["purelib"], PTH_NAME)
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("import os; os.environ.setdefault('NNVTS_PTH_RAN', '1')\n")
    except OSError:
        return
    _escaped(f"wrote {path}")


def _write_target(request: Request, result: ExecutionResult) -> None:
    """Create the file the test names (in the harness's home)."""
    path = os.environ.get(TARGET_ENV, "")
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("written by the driver\n")
    except OSError:
        return
    _escaped(f"wrote {path}")


def _root_files(request: Request, result: ExecutionResult) -> None:
    """Read a file only its owner may read (what a root harness's keys are), and the machine's password hashes."""
    for path in (os.environ.get(OWNED_ENV, ""), "/etc/shadow"):
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            handle.read(1)
            _escaped(f"read {path}")


def _unmount_proc() -> None:
    """As root did in the issue: take the namespace's /proc away, hoping the harness's shows through."""
    _libc.umount2(b"/proc", 2)  # MNT_DETACH


def _secrets(request: Request, result: ExecutionResult) -> None:
    """The harness's secret, from this environment or any process's /proc/PID/environ."""
    if os.environ.get(SECRET_ENV):
        _escaped(f"{SECRET_ENV} is in the driver's environment")
    _unmount_proc()
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/environ", "rb") as handle:
                if f"{SECRET_ENV}=".encode() in handle.read():
                    _escaped(f"read {SECRET_ENV} in /proc/{name}/environ")


def _setns(request: Request, result: ExecutionResult) -> None:
    """Join any other process's network namespace (the harness's) and reach the test's loopback port."""
    _unmount_proc()
    own = os.readlink("/proc/self/ns/net") if os.path.exists("/proc/self/ns/net") else ""
    for path in glob.glob("/proc/[0-9]*/ns/net"):
        try:
            if os.readlink(path) == own:
                continue
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        joined = _libc.setns(fd, 0x40000000) == 0  # CLONE_NEWNET
        os.close(fd)
        if not joined:
            continue
        try:
            socket.create_connection(("127.0.0.1", int(os.environ[PORT_ENV])), timeout=2).close()
        except OSError:
            _escaped(f"joined the network namespace of {path}")
        _escaped(f"joined the network namespace of {path} and reached the network")


def _forks(request: Request, result: ExecutionResult) -> None:
    """Start 600 processes at once."""
    children = []
    try:
        for _ in range(600):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
    if len(children) >= 600:
        _escaped(f"{len(children)} of 600 forks succeeded")


def _memory(request: Request, result: ExecutionResult) -> None:
    """Six children, each holding a third of the memory limit: twice the limit together."""
    limit = int(os.environ.get(LIMIT_ENV, "512"))
    each = (limit // 3) << 20
    read, write = os.pipe()
    children = []
    for _ in range(6):
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                block = bytearray(each)
                for offset in range(0, each, 4096):
                    block[offset] = 1
                os.write(write, b"x")
                time.sleep(30)
            finally:
                os._exit(0)
        children.append(pid)
    os.close(write)
    holding = 0
    deadline = time.monotonic() + 5
    os.set_blocking(read, False)
    while holding < 6 and time.monotonic() < deadline:
        try:
            chunk = os.read(read, 6)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        if not chunk:
            break
        holding += len(chunk)
    os.close(read)
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    if holding * (each >> 20) > limit:
        _escaped(f"{holding} children held {holding * (each >> 20)} MiB under a limit of {limit} MiB")


def _fill_tmp(request: Request, result: ExecutionResult) -> None:
    """Fill the temporary directory (at most 256 MiB) and leave the file there."""
    block = b"\0" * (1 << 20)
    with contextlib.suppress(OSError), tempfile.NamedTemporaryFile(prefix="nnvts-escape-fill-", delete=False) as out:
        for _ in range(256):
            out.write(block)


def _once(fault: Callable[[Request, ExecutionResult], None]) -> Callable[[Request, ExecutionResult], None]:
    """``fault`` on the first MUL execution of the process only (a case executes its model many ways)."""
    done: list[bool] = []

    def first(request: Request, result: ExecutionResult) -> None:
        if not done:
            done.append(True)
            fault(request, result)

    return first


def _after(fault: Callable[..., object], name: str) -> Callable[[], AfterDevice]:
    return lambda: AfterDevice(fault, name)  # type: ignore[arg-type]


rewriting_device = _after(_rewrite, "rewriting")
pth_device = _after(_pth, "pth")
target_device = _after(_write_target, "target")
secrets_device = _after(_secrets, "secrets")
root_files_device = _after(_root_files, "root-files")
setns_device = _after(_setns, "setns")
forks_device = _after(_once(_forks), "forks")
memory_device = _after(_once(_memory), "memory")
fill_tmp_device = _after(_once(_fill_tmp), "fill-tmp")
