"""A command started in the strongest confinement this machine gives: a driver host, or an imported tree's generator.

Both run code nnvts does not trust, so both get the same walls, in order:

1. the sandbox (``HostSandbox``: an unprivileged user, a read-only view of
   the filesystem, an allowlisted environment, seccomp, limits on the whole
   tree) around contain's init;
2. else contain's namespaces (PID, mount and, unless allowed, network)
   around that init;
3. else none: the caller starts the command its own way (``argv`` None).

Contain's init (``vts.ipc.contain``) runs the command with ``fd`` as its
descriptor 3, reaps what it leaves, writes its wait status and leftovers to
a pipe (``report``) and ends the whole tree when the harness goes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from vts.ipc import contain
from vts.ipc.sandbox.core import HostSandbox

__all__ = ["Launch", "confined"]


@dataclass
class Launch:
    """How to start one confined command, and what to close once it started."""

    #: The command line to run; None where this machine confines nothing (the caller's own way then).
    argv: list[str] | None
    #: Descriptors the process must inherit.
    pass_fds: list[int]
    #: The read end of contain's report pipe (-1: none); held open while the process runs (its init ends
    #: the tree when this closes).
    report: int
    #: The sandbox, to ``close`` once the process has ended (None: none).
    box: HostSandbox | None
    _report_write: int = -1

    def started(self) -> None:
        """The process started (or could not): the parent's copies of what it inherited go."""
        if self._report_write >= 0:
            os.close(self._report_write)
            self._report_write = -1
        if self.box is not None:
            self.box.started()


def confined(command: list[str], fd: int, memory_limit: int, network: bool, pythonpath: str,
             reads: Sequence[str] = ()) -> Launch:
    """``command`` confined, ``fd`` its descriptor 3; ``reads``: more paths it must see (read-only)."""
    box = None if contain.disabled() else HostSandbox.for_host(network, memory_limit, command, pythonpath, reads)
    containment = contain.Containment(()) if contain.disabled() or box else contain.probe(network)
    if box is None and not containment.available:
        return Launch(None, [fd], -1, None)
    report, report_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    os.set_blocking(report_write, True)
    pass_fds = [fd, report_write]
    if box is not None:
        argv = box.wrap(contain.contained_argv((), fd, memory_limit, report_write, command, box.rlimit_tasks))
        pass_fds += box.pass_fds
    else:
        argv = contain.contained_argv(containment.prefix, fd, memory_limit, report_write, command)
    return Launch(argv, pass_fds, report, box, report_write)
