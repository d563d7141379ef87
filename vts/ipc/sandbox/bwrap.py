"""The sandbox built on bubblewrap (``bwrap``), the tool Flatpak runs every application in.

bwrap is run as an unprivileged user (``setpriv``, when the harness is
root), so the user namespace it makes maps the driver to that user alone:
the driver is not root of anything outside it, and has no capability in
the harness's namespaces (no ``setns`` into them, no ``umount`` of their
mounts, no ``ptrace``).  ``--unshare-all`` gives it its own PID, IPC, UTS,
cgroup and (unless ``--allow-network``) network namespaces; the mounts are
``view.MountPlan``'s; ``--seccomp`` loads ``seccomp.filter_program``;
``--as-pid-1`` makes nnvts's namespace init (``vts.ipc.contain``) the first
process, as under ``unshare``; ``--die-with-parent`` ends it with the
harness.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from vts.ipc.sandbox.view import SCRATCH, MountPlan

__all__ = ["bwrap_argv", "bwrap_path", "bwrap_version"]


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def bwrap_version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().removeprefix("bubblewrap ").strip()


def bwrap_argv(path: str, plan: MountPlan, network: bool, seccomp_fd: int, other_user: bool,
               needed_fds: Sequence[int]) -> list[str]:
    """bwrap's own arguments, up to and including ``--`` (the command follows).

    ``needed_fds``: descriptors (``O_PATH``) of ``plan.needed``, opened by the harness: bwrap runs as the
    sandbox's user, who may not reach them by name.
    """
    argv = [path, "--unshare-all"] if other_user else [path, "--unshare-user", "--unshare-all"]
    if network:
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
             "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--size", str(plan.scratch), "--perms", "1777", "--tmpfs", SCRATCH,
             "--size", str(plan.scratch), "--tmpfs", "/dev/shm"]
    for directory in plan.hidden_dirs:
        argv += ["--perms", "0755", "--tmpfs", directory]
    for path, fd in zip(plan.needed, needed_fds, strict=True):
        argv += ["--ro-bind-fd", str(fd), path]
    for directory in plan.hidden_dirs:
        argv += ["--remount-ro", directory]
    for file in plan.hidden_files:
        argv += ["--ro-bind", "/dev/null", file]
    if seccomp_fd >= 0:
        argv += ["--seccomp", str(seccomp_fd)]
    cwd = plan.workdir()
    argv += ["--chdir", cwd if not other_user or reachable_by_others(cwd) else SCRATCH]
    return [*argv, "--"]


def reachable_by_others(path: str) -> bool:
    """Whether any user may enter ``path`` (every folder on the way searchable by others): the driver's
    working directory stays the harness's when it can reach it, else it is its scratch directory."""
    probe = os.path.abspath(path)
    try:
        while True:
            if not os.stat(probe).st_mode & 0o001:
                return False
            parent = os.path.dirname(probe)
            if parent == probe:
                return True
            probe = parent
    except OSError:
        return False
