"""Limits for a driver's whole process tree: a cgroup (v2, else v1) where the harness may make one, else rlimits.

``RLIMIT_AS`` bounds one process: six children of a driver each under
``--memory-limit 512`` held 1,850 MiB, and ``RLIMIT_NPROC`` does not bind
root, so 600 of 600 forks succeeded.  A cgroup bounds the tree: every
process the driver starts is in it, whatever it does (a child inherits its
parent's cgroup, and the sandbox's seccomp filter and user namespace leave
no way to move out).  Each host gets a cgroup of its own, a child of the
harness's (``nnvts-PID-N``), with ``memory.max``/``memory.limit_in_bytes``
set to the memory limit (swap included where the kernel counts it) and
``pids.max`` to the task limit; the host's first process writes itself into
it before it runs anything (``join_argv``), so no process of the tree
starts outside.  An out-of-memory kill in it is noticed (``oom_killed``)
and reported as the memory limit, not as a bare SIGKILL.

Where no cgroup can be made (not root, no delegated subtree), the task limit
falls back to ``RLIMIT_NPROC`` under the sandbox's unprivileged uid (which
binds: it is not root) and memory to ``RLIMIT_AS`` per process, and the
notice says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass, field

__all__ = ["DEFAULT_TASKS", "TreeLimits", "cgroup_kind", "task_limit"]

#: Tasks (processes and threads) a driver's tree may hold at once: a host's Python threads and a numeric
#: library's pool fit many times over; a fork bomb does not.
DEFAULT_TASKS = 512
TASK_LIMIT_ENV = "NNVTS_TASK_LIMIT"
_serial = itertools.count(1)
_V2_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
_V1_ROOT = "/sys/fs/cgroup"


def task_limit() -> int:
    """The tasks a driver's tree may hold (``NNVTS_TASK_LIMIT``, default ``DEFAULT_TASKS``; 0: none)."""
    try:
        return max(0, int(os.environ.get(TASK_LIMIT_ENV, DEFAULT_TASKS)))
    except ValueError:
        return DEFAULT_TASKS


def _own_paths() -> tuple[str | None, dict[str, str]]:
    """This process's cgroup: its v2 path (None: no v2 line) and its v1 path per controller."""
    v2: str | None = None
    v1: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="ascii", errors="replace") as handle:
            for line in handle:
                number, controllers, path = line.rstrip("\n").split(":", 2)
                if number == "0" and not controllers:
                    v2 = path
                for name in controllers.split(","):
                    if name:
                        v1[name] = path
    except (OSError, ValueError):
        pass
    return v2, v1


def _v2_parent() -> str | None:
    """The v2 directory under which this process may make children with the memory and pids controllers."""
    own, _ = _own_paths()
    if own is None:
        return None
    for root in _V2_ROOTS:
        if not os.path.exists(os.path.join(root, "cgroup.controllers")):
            continue
        directory = os.path.join(root, own.lstrip("/"))
        try:
            with open(os.path.join(directory, "cgroup.subtree_control"), encoding="ascii") as handle:
                enabled = handle.read().split()
            if not {"memory", "pids"} <= set(enabled):
                with open(os.path.join(directory, "cgroup.subtree_control"), "w", encoding="ascii") as handle:
                    handle.write("+memory +pids")
            return directory if os.access(directory, os.W_OK) else None
        except OSError:
            continue
    return None


def _v1_parents() -> dict[str, str] | None:
    """The v1 memory and pids directories of this process, where it may make children."""
    _, own = _own_paths()
    found = {}
    for controller in ("memory", "pids"):
        if controller not in own:
            return None
        directory = os.path.join(_V1_ROOT, controller, own[controller].lstrip("/"))
        if not os.access(directory, os.W_OK) or not os.path.exists(os.path.join(directory, "cgroup.procs")):
            return None
        found[controller] = directory
    return found


_kind: str | None = None


#: ``NNVTS_TREE_LIMITS=rlimit`` uses the rlimit fallback even where a cgroup could be made (to see what a
#: machine without one gets: the fallback is tested on this one).
TREE_LIMITS_ENV = "NNVTS_TREE_LIMITS"


def cgroup_kind() -> str:
    """``cgroup2``, ``cgroup1`` or ``rlimit``: what this process can bound a tree with (found once)."""
    global _kind
    if os.environ.get(TREE_LIMITS_ENV, "").strip().lower() == "rlimit":
        return "rlimit"
    if _kind is None:
        probe = TreeLimits(1 << 30, 16)
        _kind = probe.kind if probe.create() else "rlimit"
        probe.remove()
    return _kind


@dataclass
class TreeLimits:
    """One host tree's cgroup (``create`` before the host starts, ``remove`` once it has ended)."""

    memory: int
    tasks: int
    kind: str = "rlimit"
    #: The directories made, one per hierarchy (one for v2).
    directories: list[str] = field(default_factory=list)

    def create(self) -> bool:
        """Make the cgroup and set its limits; False (nothing left behind) where none can be made."""
        name = f"nnvts-{os.getpid()}-{next(_serial)}"
        parent = _v2_parent()
        if parent is not None and self._make([(parent, name)], self._limit_v2):
            self.kind = "cgroup2"
            return True
        parents = _v1_parents()
        if parents is not None and self._make([(parents["memory"], name), (parents["pids"], name)],
                                              self._limit_v1):
            self.kind = "cgroup1"
            return True
        return False

    def _make(self, places: list[tuple[str, str]], limit) -> bool:
        try:
            for parent, name in places:
                _sweep_stale(parent)
                directory = os.path.join(parent, name)
                os.mkdir(directory)
                self.directories.append(directory)
            limit()
            return True
        except OSError:
            self.remove()
            return False

    def _limit_v2(self) -> None:
        (directory,) = self.directories
        if self.memory > 0:
            _write(directory, "memory.max", self.memory)
            with contextlib.suppress(OSError):
                _write(directory, "memory.swap.max", 0)
        if self.tasks > 0:
            _write(directory, "pids.max", self.tasks)

    def _limit_v1(self) -> None:
        memory, pids = self.directories
        if self.memory > 0:
            _write(memory, "memory.limit_in_bytes", self.memory)
            with contextlib.suppress(OSError):  # swap accounting off: no memsw files
                _write(memory, "memory.memsw.limit_in_bytes", self.memory)
        if self.tasks > 0:
            _write(pids, "pids.max", self.tasks)

    @property
    def active(self) -> bool:
        return bool(self.directories)

    def procs_files(self) -> list[str]:
        """The files a process writes its pid to, to join (every hierarchy)."""
        return [os.path.join(directory, "cgroup.procs") for directory in self.directories]

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the cgroup (exec: same pid, nothing forked)."""
        if not self.active:
            return argv
        files = self.procs_files()
        script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 126; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *files, "--", *argv]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the tree for the memory limit."""
        if not self.active:
            return False
        if self.kind == "cgroup2":
            return _counter(os.path.join(self.directories[0], "memory.events"), "oom_kill") > 0
        control = os.path.join(self.directories[0], "memory.oom_control")
        return _counter(control, "oom_kill") > 0 or _counter(control, "under_oom") > 0

    def peak_tasks(self) -> int:
        """The most tasks the tree held at once (0: unknown)."""
        if not self.active:
            return 0
        path = os.path.join(self.directories[-1], "pids.peak")
        try:
            with open(path, encoding="ascii") as handle:
                return int(handle.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def remove(self) -> None:
        """Kill what is left in the cgroup and remove it (best effort: a busy one is swept later)."""
        for directory in reversed(self.directories):
            _kill_members(directory)
            for _ in range(50):
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.directories = []


def _write(directory: str, name: str, value: int) -> None:
    with open(os.path.join(directory, name), "w", encoding="ascii") as handle:
        handle.write(str(value))


def _counter(path: str, key: str) -> int:
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                words = line.split()
                if len(words) == 2 and words[0] == key:
                    return int(words[1])
    except (OSError, ValueError):
        pass
    return 0


def _kill_members(directory: str) -> None:
    kill = os.path.join(directory, "cgroup.kill")
    if os.path.exists(kill):
        with contextlib.suppress(OSError):
            _write(directory, "cgroup.kill", 1)
        return
    try:
        with open(os.path.join(directory, "cgroup.procs"), encoding="ascii") as handle:
            pids = [int(word) for word in handle.read().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _sweep_stale(parent: str) -> None:
    """Remove empty ``nnvts-PID-N`` cgroups of harnesses that are gone (killed before they could)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != "nnvts" or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or os.path.exists(f"/proc/{pid}"):
            continue
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(parent, name))
