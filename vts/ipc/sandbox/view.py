"""What a sandboxed driver sees of the filesystem: the plan both sandboxes mount.

Everything read-only (``/`` bound read-only, recursively), except:

* ``/tmp``: a private tmpfs of ``scratch`` bytes, the driver's ``TMPDIR`` and
  ``HOME``; whatever it leaves there goes with its sandbox;
* ``/dev``: the usual device nodes only (``null``, ``zero``, ``random``, ...)
  and a private ``/dev/shm``;
* ``/proc``: the driver's PID namespace's own;
* ``hidden``: the harness's result files (``--jsonl`` and the reports, once
  they exist) masked by ``/dev/null``, and the harness's temporary directory
  (when it is not ``/tmp``) masked by an empty directory, so the driver
  cannot even read them (``hide_outputs``);
* ``needed``: what the driver's own code needs that a mask would cover (an
  import path or a program under ``/tmp``), bound back read-only.

The cache files of the caching family and the memory pools of every request
reach the driver as descriptors, over its socket: nothing to mount.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

__all__ = ["DEFAULT_SCRATCH_MIB", "HIDE_ENV", "SCRATCH", "MountPlan", "closed_ancestor", "hidden_paths", "hide_outputs",
           "scratch_bytes"]

#: Where the scratch directory is mounted in the sandbox (also the driver's TMPDIR and HOME).
SCRATCH = "/tmp"
DEFAULT_SCRATCH_MIB = 256
SCRATCH_ENV = "NNVTS_SCRATCH_MIB"
#: Paths the harness writes results to (``os.pathsep``-separated), hidden from every driver; an environment
#: variable so ``-j`` workers, which start their own hosts, hide them too.  Never passed to a driver.
HIDE_ENV = "NNVTS_SANDBOX_HIDE"


def scratch_bytes() -> int:
    """The scratch directory's size (``NNVTS_SCRATCH_MIB``, default ``DEFAULT_SCRATCH_MIB`` MiB)."""
    try:
        return max(1, int(os.environ.get(SCRATCH_ENV, DEFAULT_SCRATCH_MIB))) << 20
    except ValueError:
        return DEFAULT_SCRATCH_MIB << 20


def hide_outputs(paths: Iterable[str | None], create: Iterable[str | None] = ()) -> None:
    """Hide ``paths`` (the run's result files) from every driver this process or its workers start.

    ``create``: those made now, empty, when missing (the stream, opened before the driver starts), so that
    there is a file to mask; the others are masked if they exist when a host starts.
    """
    for path in create:
        if path:
            try:  # as the stream itself will: its folder made; a failure is the stream's to report
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                with open(path, "a", encoding="utf-8"):
                    pass
            except OSError:
                continue
    kept = [p for p in os.environ.get(HIDE_ENV, "").split(os.pathsep) if p]
    kept += [os.path.abspath(p) for p in paths if p]
    os.environ[HIDE_ENV] = os.pathsep.join(dict.fromkeys(kept))


def hidden_paths() -> list[str]:
    """The result files named by ``hide_outputs`` that exist now, real paths."""
    found = []
    for path in os.environ.get(HIDE_ENV, "").split(os.pathsep):
        if path and os.path.isfile(path):
            found.append(os.path.realpath(path))
    return list(dict.fromkeys(found))


def closed_ancestor(path: str) -> str | None:
    """The highest folder above ``path`` that other users cannot search (None: they reach it)."""
    parts = os.path.realpath(path).split("/")[1:-1]
    probe = ""
    for part in parts:
        probe += "/" + part
        try:
            if not os.stat(probe).st_mode & 0o001:
                return probe
        except OSError:
            return None
    return None


def _searchable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o001)
    except OSError:
        return False


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


@dataclass(frozen=True)
class MountPlan:
    """The mounts of one host's sandbox (see the module's docstring)."""

    scratch: int
    hidden_files: tuple[str, ...]
    hidden_dirs: tuple[str, ...]
    needed: tuple[str, ...]
    #: Paths the driver needs that other users cannot reach (a pyenv Python under ``/root``): a root harness
    #: then cannot run the driver as ``nobody``.
    closed: tuple[str, ...] = ()

    @classmethod
    def for_host(cls, command: Sequence[str], pythonpath: str, scratch: int | None = None) -> MountPlan:
        """The plan for a host running ``command`` with ``pythonpath``."""
        harness_tmp = os.path.realpath(tempfile.gettempdir())
        dirs = [] if _under(harness_tmp, SCRATCH) or harness_tmp == "/" else [harness_tmp]
        wanted = [p for p in pythonpath.split(os.pathsep) if p]
        wanted += [sys.executable, sys.prefix, sys.base_prefix]
        wanted += [word for word in command if word.startswith("/")]
        needed, closed = [], []
        for path in dict.fromkeys(os.path.realpath(p) for p in wanted):
            if not os.path.exists(path):
                continue
            if closed_ancestor(path) is not None:
                closed.append(path)
            if any(_under(path, top) for top in (SCRATCH, "/dev", *dirs)):
                needed.append(path)
        needed = [p for p in needed if not any(_under(p, q) and p != q for q in needed)]
        closed = [p for p in closed if not any(_under(p, q) and p != q for q in closed)]
        hidden = [p for p in hidden_paths() if not any(_under(n, p) for n in needed)]
        return cls(scratch if scratch is not None else scratch_bytes(), tuple(hidden), tuple(dirs), tuple(needed),
                   tuple(closed))

    def for_other_user(self) -> MountPlan:
        """This plan for a driver run as another user than the harness's: what that user cannot reach anyway
        (a result file in a folder closed to others) needs no mask, and bubblewrap, run as that user, could
        not even look at it; the closed paths the driver needs are shown to it first (``reveal``)."""
        def reachable(path: str) -> bool:
            return closed_ancestor(path) is None

        def shown(path: str) -> bool:  # a closed path the driver needs is shown to it (``reveal``)
            return any(_under(path, closed) for closed in self.closed)

        return replace(self, hidden_files=tuple(filter(reachable, self.hidden_files)),
                       hidden_dirs=tuple(p for p in self.hidden_dirs if reachable(p) and _searchable(p)),
                       needed=tuple(p for p in self.needed if reachable(p) or shown(p)))

    def workdir(self) -> str:
        """The driver's working directory: the harness's where the sandbox shows it, else the scratch one."""
        try:
            cwd = os.getcwd()
        except OSError:
            return SCRATCH
        masked = any(_under(cwd, top) for top in (SCRATCH, "/dev", *self.hidden_dirs))
        if masked and not any(_under(cwd, path) for path in self.needed):
            return SCRATCH
        return cwd

    def describe(self) -> str:
        return (f"read-only filesystem, {self.scratch >> 20} MiB scratch /tmp"
                + (f", {len(self.hidden_files)} result files hidden" if self.hidden_files else ""))

    def quoted(self) -> str:  # for debugging messages
        return " ".join(shlex.quote(p) for p in (*self.hidden_files, *self.hidden_dirs, *self.needed))
