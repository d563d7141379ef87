"""What a root harness's drivers need from folders closed to other users, shown to the sandbox's user alone.

A root harness runs its drivers as ``nobody``; but its Python may live under
a folder only root may search (a pyenv Python under ``/root``, mode 0700),
which ``nobody`` cannot even start.  Running the driver as root instead (in
a user namespace, without capabilities) still leaves it the owner of every
root-owned file: it read ``/etc/shadow``.

So, before the host leaves root, its first process enters a mount namespace
of its own (util-linux ``unshare --mount``, still root, no user namespace:
the mounts are made with the harness's privileges) in which

* each closed path the driver needs (``MountPlan.closed``: the Python's
  install, an import path, the driver's program) is first bound, while it
  can still be reached, to a staging tmpfs (on ``/dev/shm``, unmounted
  once they are placed);
* each closed top folder (``/root``) is covered by an empty tmpfs (mode
  0755), so that nothing else in it, a home's keys and histories, is in
  sight at all;
* each needed path is moved from the stage to its own name, made
  read-only, and the stage and the covering tmpfs go read-only or away.

The sandbox made next, as the unprivileged user, copies that view.
bubblewrap cannot do this itself: run as that user, it resolves a bound
descriptor's name and is refused at the closed folder (and a bind's source
must be a mount of the caller's namespace, so a descriptor the harness
opened would not do either).  Costs about 8 ms per host start
(bench/sandbox_start.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence

from vts.ipc.sandbox.view import closed_ancestor

__all__ = ["MAX_PATHS", "reveal_argv"]

#: Where closed paths are staged, on a tmpfs unmounted once they are placed: a folder every Linux has.
STAGES = ("/dev/shm", "/mnt")
#: Closed paths one host may have shown (an import path of a few entries and a Python need two or three).
MAX_PATHS = 16


def reveal_argv(closed: Sequence[str]) -> list[str] | None:
    """The command prefix showing ``closed`` (real paths, none inside another) to the sandbox's user.

    [] when nothing is closed.  None when it cannot be done here: not root, no ``unshare``/``mount``, no
    staging folder, or more than ``MAX_PATHS`` paths (the caller then keeps the driver root, without
    capabilities, and says so).
    """
    if not closed:
        return []
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    stage = next((folder for folder in STAGES if os.path.isdir(folder)), None)
    if os.geteuid() != 0 or unshare is None or mount is None or stage is None or len(closed) > MAX_PATHS:
        return None
    tops = [top for top in dict.fromkeys(closed_ancestor(path) for path in closed) if top is not None]
    q = shlex.quote
    m = q(mount)
    lines = ["set -e", f"{m} -t tmpfs -o mode=0700,size=64k nnvts-stage {q(stage)}"]
    for i, path in enumerate(closed):
        staged = q(f"{stage}/{i}")
        lines.append(f"mkdir {staged}" if os.path.isdir(path) else f": > {staged}")
        lines.append(f"{m} --bind {q(path)} {staged}")
    lines += [f"{m} -t tmpfs -o mode=0755,size=1m nnvts-reveal {q(top)}" for top in tops]
    for i, path in enumerate(closed):
        if os.path.isdir(path):
            lines.append(f"mkdir -p {q(path)}")
        else:
            lines.append(f"mkdir -p {q(os.path.dirname(path))}; : > {q(path)}")
        lines.append(f"{m} --move {q(f'{stage}/{i}')} {q(path)}")
        lines.append(f"{m} -o remount,bind,ro {q(path)}")
    lines.append(f"umount {q(stage)}")
    lines += [f"{m} -o remount,ro {q(top)}" for top in tops]
    lines.append('exec "$@"')
    return [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines), "sh"]
