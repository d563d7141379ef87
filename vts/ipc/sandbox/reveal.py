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
  install, an import path, the driver's program) is opened first, while it
  can still be reached;
* each closed top folder (``/root``) is covered by an empty tmpfs (mode
  0755), so that nothing else in it, a home's keys and histories, is in
  sight at all;
* each needed path is bound back, read-only, from its descriptor (``mount
  --no-canonicalize`` follows ``/proc/self/fd/N`` to the folder itself:
  resolving its name would walk the covered folder), and the tmpfs is made
  read-only.

The sandbox made next, as the unprivileged user, copies that view.
bubblewrap cannot do this itself: run as that user, it resolves a bound
descriptor's name and is refused at the closed folder; and the descriptor
must be opened in the new namespace (a bind's source must be a mount of the
caller's namespace), hence a shell run inside it.  Costs about 8 ms per host
start (bench/sandbox_start.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence

from vts.ipc.sandbox.view import closed_ancestor

__all__ = ["MAX_PATHS", "reveal_argv"]

#: Closed paths one host may need shown: the shell's redirections reach descriptors 3 to 9 only.
MAX_PATHS = 7
_FIRST_FD = 3


def reveal_argv(closed: Sequence[str]) -> list[str] | None:
    """The command prefix showing ``closed`` (real paths, none inside another) to the sandbox's user.

    [] when nothing is closed.
    None when it cannot be done here: not root, no ``unshare``/``mount``, or more than ``MAX_PATHS``
    paths (the caller then keeps the driver root, without capabilities, and says so).
    """
    if not closed:
        return []
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if os.geteuid() != 0 or unshare is None or mount is None or len(closed) > MAX_PATHS:
        return None
    tops = [top for top in dict.fromkeys(closed_ancestor(path) for path in closed) if top is not None]
    q = shlex.quote
    lines = ["set -e"]
    lines += [f"exec {_FIRST_FD + i}<{q(path)}" for i, path in enumerate(closed)]
    lines += [f"{q(mount)} -t tmpfs -o mode=0755,size=1m nnvts-reveal {q(top)}" for top in tops]
    for i, path in enumerate(closed):
        fd = _FIRST_FD + i
        if os.path.isdir(path):
            lines.append(f"mkdir -p {q(path)}")
        else:
            lines.append(f"mkdir -p {q(os.path.dirname(path))}; : > {q(path)}")
        lines.append(f"{q(mount)} --no-canonicalize --bind /proc/self/fd/{fd} {q(path)}")
        lines.append(f"{q(mount)} --no-canonicalize -o remount,bind,ro {q(path)}")
        lines.append(f"exec {fd}<&-")
    lines += [f"{q(mount)} -o remount,ro {q(top)}" for top in tops]
    lines.append('exec "$@"')
    return [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines), "sh"]
