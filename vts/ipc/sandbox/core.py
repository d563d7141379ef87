"""Which sandbox runs the driver hosts here, and one host's sandbox: its command prefix, descriptors, limits.

Tried in order (``NNVTS_SANDBOX`` picks one: ``bwrap``, ``nnvts``, ``none``):

1. **bubblewrap** (``vts.ipc.sandbox.bwrap``), where ``bwrap`` is installed
   and the kernel lets an unprivileged user make a user namespace;
2. **nnvts**'s own namespace code (``vts.ipc.sandbox.own``): util-linux
   ``unshare`` and a small Python init doing the same mounts, capability
   drop and seccomp filter;
3. **none**: the namespaces of ``vts.ipc.contain`` where the kernel allows
   them, else a subreaper only; the environment is still the allowlist's.

Either sandbox runs the driver as an unprivileged user: the harness's own
when it is not root, else ``nobody`` (``NNVTS_SANDBOX_UID`` names another),
so that even a file the harness's user owns is out of reach.  A root
harness whose Python lives in a folder closed to that user (``/root``)
shows it the Python alone (``vts.ipc.sandbox.reveal``).  The tree's
limits are ``vts.ipc.sandbox.limits``'s.  ``notice()`` is the one line
saying which sandbox is in force (printed once by ``nnvts run``, shown by
``nnvts info`` and recorded in every report header).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from vts.ipc.sandbox import own, seccomp
from vts.ipc.sandbox.bwrap import bwrap_argv, bwrap_path, bwrap_version
from vts.ipc.sandbox.limits import TreeLimits, cgroup_kind, task_limit
from vts.ipc.sandbox.reveal import reveal_argv
from vts.ipc.sandbox.trial import works
from vts.ipc.sandbox.view import SCRATCH, MountPlan, closed_ancestor

__all__ = ["SANDBOX_ENV", "HostSandbox", "SandboxKind", "notice", "probe", "sandbox_uid"]

SANDBOX_ENV = "NNVTS_SANDBOX"
UID_ENV = "NNVTS_SANDBOX_UID"
NOBODY = 65534


def sandbox_uid() -> int | None:
    """The uid drivers run as: None (the harness's own, not root), else ``NNVTS_SANDBOX_UID`` or nobody."""
    if os.geteuid() != 0:
        return None
    try:
        return int(os.environ.get(UID_ENV, NOBODY))
    except ValueError:
        return NOBODY


def _python_plan() -> MountPlan:
    """The mounts a host running this Python with its import path would get."""
    return MountPlan.for_host([], os.pathsep.join(p for p in sys.path if p))


def _python_uid() -> int | None:
    """``sandbox_uid()``, unless this Python (its install, its import path) is closed to that user and cannot
    be shown to it here."""
    if sandbox_uid() is None:
        return None
    return None if reveal_argv(_python_plan().closed) is None else sandbox_uid()


def _drop_user(uid: int | None) -> list[str]:
    """``setpriv`` to ``uid`` with no groups, no capabilities, no new privileges (nothing when None)."""
    if uid is None:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs"]


@dataclass(frozen=True)
class SandboxKind:
    """The sandbox in force: ``bwrap``, ``nnvts`` or ``none``, and what it gives."""

    name: str
    version: str = ""
    #: Why a better one is not used (empty when bubblewrap is).
    reason: str = ""
    limits: str = "rlimit"

    @property
    def sandboxed(self) -> bool:
        return self.name != "none"

    def label(self) -> str:
        """Short, for report headers: ``bwrap 0.8.0``, ``nnvts``, ``none``."""
        return f"{self.name} {self.version}".strip()

    def describe(self) -> str:
        if not self.sandboxed:
            return f"none ({self.reason}): drivers share the harness's filesystem, user and limits per process"
        uid = sandbox_uid()
        closed = _python_plan().closed
        if uid is not None and not closed:
            user = f"uid {uid}"
        elif uid is not None and reveal_argv(closed) is not None:
            tops = ", ".join(dict.fromkeys(filter(None, map(closed_ancestor, closed))))
            user = f"uid {uid} (of {tops}, closed to it, only what the driver needs shown, read-only)"
        elif uid is not None:
            user = f"uid 0 without capabilities (uid {uid} cannot reach {closed[0]})"
        else:
            user = f"uid {os.geteuid()} (the harness's) without capabilities"
        tree = {"cgroup2": "cgroup v2", "cgroup1": "cgroup v1"}.get(self.limits, "rlimits, memory per process")
        filtered = "seccomp" if seccomp.supported() else "no seccomp (unknown architecture)"
        text = (f"{'bubblewrap ' + self.version if self.name == 'bwrap' else 'nnvts namespaces'}: {user}, "
                f"read-only filesystem, private /tmp, allowlisted environment, {filtered}, tree limits by {tree}")
        return text + (f" ({self.reason})" if self.reason else "")


_lock = threading.Lock()
_probed: SandboxKind | None = None
_announced = False


def probe() -> SandboxKind:
    """The sandbox this process's hosts get (found once per process)."""
    global _probed
    with _lock:
        if _probed is None:
            _probed = _probe()
        return _probed


def _probe() -> SandboxKind:
    wanted = os.environ.get(SANDBOX_ENV, "auto").strip().lower() or "auto"
    if wanted in ("none", "off", "0"):
        return SandboxKind("none", reason=f"{SANDBOX_ENV}={wanted}")
    uid = _python_uid()
    drop = _drop_user(uid)
    if uid is not None and not drop:
        return SandboxKind("none", reason="no setpriv (util-linux) to leave root")
    if uid is not None:  # tried as a host will leave root: its Python shown to that user first
        drop = [*(reveal_argv(_python_plan().closed) or []), *drop]
    reasons = []
    path = bwrap_path()
    if wanted in ("auto", "bwrap"):
        if path is None:
            reasons.append("no bwrap on PATH")
        else:
            why = works([*drop, path, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--"])
            if not why:
                return SandboxKind("bwrap", bwrap_version(path), "", cgroup_kind())
            reasons.append(f"bwrap: {why}")
    if wanted in ("auto", "nnvts", "own"):
        why = own.unavailable(drop)
        if not why:
            return SandboxKind("nnvts", "", "; ".join(reasons), cgroup_kind())
        reasons.append(f"nnvts namespaces: {why}")
    return SandboxKind("none", reason="; ".join(reasons) or f"{SANDBOX_ENV}={wanted}")


def notice() -> str:
    """``nnvts: driver sandbox: ...``: the one line saying which sandbox is in force."""
    return f"nnvts: driver sandbox: {probe().describe()}"


def announce() -> None:
    """Print ``notice()`` on stderr, once per process."""
    global _announced
    if not _announced:
        _announced = True
        print(notice(), file=sys.stderr, flush=True)


@dataclass
class HostSandbox:
    """One host's sandbox: made before the host starts, ``close``d once it has ended."""

    kind: SandboxKind
    network: bool
    memory_limit: int
    plan: MountPlan
    limits: TreeLimits = field(init=False)
    #: Descriptors the host must inherit (the seccomp program's pipe).
    pass_fds: list[int] = field(default_factory=list, init=False)
    #: The prefix showing the plan's closed paths to the sandbox's user (None: it cannot be, the driver stays
    #: root without capabilities; []: nothing closed).
    reveal: list[str] | None = field(init=False)

    def __post_init__(self) -> None:
        self.reveal = reveal_argv(self.plan.closed) if sandbox_uid() is not None else []
        self.limits = TreeLimits(self.memory_limit, task_limit())
        if self.kind.limits != "rlimit":
            self.limits.create()

    @classmethod
    def for_host(cls, network: bool, memory_limit: int, command: Sequence[str], pythonpath: str,
                 reads: Sequence[str] = ()) -> HostSandbox | None:
        """The sandbox of a host about to run ``command`` (None: sandboxes are off or unavailable here);
        ``reads``: more paths it must see, read-only."""
        kind = probe()
        if not kind.sandboxed:
            return None
        plan = MountPlan.for_host([*command, *reads], pythonpath)
        if sandbox_uid() is not None and reveal_argv(plan.closed) is not None:
            plan = plan.for_other_user()
        return cls(kind, network, memory_limit, plan)

    @property
    def uid(self) -> int | None:
        """The user the driver runs as (None: the harness's): nobody when the harness is root, unless a path
        the driver needs is closed to other users (``MountPlan.closed``) and cannot be shown to it here."""
        return None if self.reveal is None else sandbox_uid()

    @property
    def rlimit_tasks(self) -> int:
        """The task limit the driver sets on itself (RLIMIT_NPROC) where no cgroup holds the tree (0: none)."""
        return 0 if self.limits.active else self.limits.tasks

    def wrap(self, init_argv: list[str]) -> list[str]:
        """The host's argv: join the cgroup, leave root, enter the sandbox, run ``init_argv`` (contain's init)."""
        seccomp_fd = self._seccomp_fd()
        needed = self._needed_fds()
        drop = _drop_user(self.uid)
        if self.kind.name == "bwrap":
            path = bwrap_path() or "bwrap"
            inner = [*bwrap_argv(path, self.plan, self.network, seccomp_fd, self.uid is not None, needed),
                     *init_argv]
        else:
            inner = own.own_argv(self.plan, self.network, seccomp_fd, init_argv, needed)
        return self.limits.join_argv([*(self.reveal or []), *drop, *inner])

    def _needed_fds(self) -> list[int]:
        """``O_PATH`` descriptors of the plan's needed paths, opened here (root reaches them; the sandbox's
        user may not)."""
        fds = [os.open(path, os.O_PATH) for path in self.plan.needed]
        self.pass_fds.extend(fds)
        return fds

    def _seccomp_fd(self) -> int:
        if not seccomp.supported():
            return -1
        read, write = os.pipe()
        try:
            os.write(write, seccomp.filter_program())
        finally:
            os.close(write)
        self.pass_fds.append(read)
        return read

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with the scratch directory as the driver's ``TMPDIR`` and ``HOME``."""
        return {**env, "TMPDIR": SCRATCH, "HOME": SCRATCH}

    def started(self) -> None:
        """The host runs: the parent's copies of the passed descriptors go."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = []

    def oom_killed(self) -> bool:
        return self.limits.oom_killed()

    def close(self) -> None:
        self.started()
        self.limits.remove()
