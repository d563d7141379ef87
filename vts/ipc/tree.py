"""A driver's whole process tree: found, killed and named, so nothing a driver starts outlives its host.

A driver host runs in a session of its own, is itself a *child subreaper*
(set by the launcher before the driver runs, kept across ``execve``), and
carries ``NNVTS_DRIVER_TREE=<token>`` in its environment.  So while the host
lives, every process its driver started - children, and orphaned
grandchildren, which the kernel re-parents to the host - is its descendant;
once it died, they are re-parented to the harness (a subreaper too) and
still found by their session, process group or environment token.

``kill_tree`` SIGKILLs all of them (rescanning until none is left, so a
process forking meanwhile is caught) and reaps the zombies that became the
harness's children.  What it killed is returned so the runner can name the
leftovers in the case result.  Linux only (``/proc``); elsewhere it finds
nothing and the host's process group kill remains.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

#: Environment variable tagging every process of a driver host's tree.
TREE_ENV = "NNVTS_DRIVER_TREE"
PR_SET_CHILD_SUBREAPER = 36

_subreaper = False


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (once); False where unsupported."""
    global _subreaper
    if not _subreaper:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # clock ticks after boot

    def describe(self) -> str:
        return f"pid {self.pid} ({command_of(self.pid)})"


def _stat(pid: int) -> ProcessInfo | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    try:
        return ProcessInfo(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode(), int(fields[19]))
    except (IndexError, ValueError):
        return None


#: ``PF_EXITING`` in the flags of /proc/PID/stat: set when the process starts to exit, before it closes its files.
PF_EXITING = 0x4


def lives_on(pid: int) -> bool:
    """Whether ``pid`` runs and has not begun to exit (neither a zombie nor ``PF_EXITING``).

    A process that dies closes its files only after it is marked exiting, so a socket closed by a
    process that ``lives_on`` was closed on purpose (or by a bug), not by its death: no need to wait.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        fields = data[data.rindex(b")") + 2 :].split()
        state, flags = fields[0].decode(), int(fields[6])
    except (OSError, IndexError, ValueError):
        return False
    return state not in ("Z", "X", "x") and not flags & PF_EXITING


def processes() -> dict[int, ProcessInfo]:
    """Every process visible in /proc (empty where there is no /proc)."""
    found = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if name.isdigit():
            info = _stat(int(name))
            if info is not None:
                found[info.pid] = info
    return found


def command_of(pid: int, limit: int = 120) -> str:
    """A short command line of ``pid`` for messages."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError:
        raw = b""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    if not text:
        try:
            with open(f"/proc/{pid}/comm", "rb") as handle:
                text = f"[{handle.read().strip().decode('utf-8', 'replace')}]"
        except OSError:
            text = "?"
    return text if len(text) <= limit else text[:limit] + "…"


def _carries(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read(1 << 20)
    except OSError:
        return False
    return environ.startswith(entry) or b"\0" + entry in environ


def members(root: int, token: str, root_start: int = 0, known: Iterable[int] = (),
            prefix: bool = False) -> dict[int, ProcessInfo]:
    """The processes of the tree of host ``root`` (itself excluded), alive or zombie.

    A member is a descendant of ``root``, or in its session or process
    group, or carries its token (with ``prefix``: a token starting with
    ``token``), or - when ``root_start`` is given - is an orphan re-parented
    to this process since ``root`` started that left our session and is none
    of ``known`` (this process's own children).  ``root`` 0: by token only.
    """
    table = processes()
    me = os.getpid()
    entry = f"{TREE_ENV}={token}{'' if prefix else chr(0)}".encode()
    own_session = os.getsid(0)
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    skip = {me, root, *known}
    found: dict[int, ProcessInfo] = {}

    def add(pid: int) -> None:
        stack = [pid]
        while stack:
            current = stack.pop()
            if current in found or current in skip or current not in table:
                continue
            found[current] = table[current]
            stack.extend(children.get(current, ()))

    if root > 0:
        for child in children.get(root, ()):
            add(child)
    for info in table.values():
        if info.pid in found or info.pid in skip or info.pid <= 1:
            continue
        in_group = root > 0 and root in (info.sid, info.pgid)
        orphan = info.ppid == me and root_start and info.start >= root_start and info.sid != own_session
        if in_group or orphan or (info.state != "Z" and _carries(info.pid, entry)):
            add(info.pid)
    return found


def kill_tree(root: int, token: str, root_start: int = 0, known: Iterable[int] = (),
              patience: float = 2.0, prefix: bool = False) -> list[str]:
    """SIGKILL every member of host ``root``'s tree until none is left; returns who was killed.

    Each is named as "pid N (command line)", read before the kill.  Zombies
    re-parented to this process are reaped (only those: reaping any other
    child would steal a ``subprocess`` exit status).
    """
    known = set(known)
    killed: dict[int, str] = {}
    me = os.getpid()
    deadline = time.monotonic() + patience
    while True:
        found = members(root, token, root_start, known, prefix)
        alive = [info for info in found.values() if info.state != "Z"]
        for info in found.values():
            if info.state == "Z" and info.ppid == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(info.pid, os.WNOHANG)
        if not alive or time.monotonic() > deadline:
            break
        for info in alive:
            if info.pid not in killed:
                killed[info.pid] = info.describe()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, signal.SIGKILL)
        time.sleep(0.01)
    return list(killed.values())


def start_time(pid: int) -> int:
    info = _stat(pid)
    return info.start if info is not None else 0
