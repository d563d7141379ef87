"""Containment of a driver host: its own PID, mount and network namespaces (docs/protocol.md §1).

A subreaper (``vts.ipc.tree``) finds what a driver leaves behind, but it
cannot stop a driver that signals the harness (``kill(getppid(), SIGSTOP)``
freezes the run), a tree that escapes it (double fork, ``setsid``, an empty
environment, re-exec) or helpers that outlive a harness killed by SIGKILL.
The kernel can: a host started by util-linux ``unshare --pid --fork
--kill-child --mount-proc`` lives in a PID namespace of its own, where

* the harness does not exist (no pid of it can be named, ``/proc`` is the
  namespace's own), so it cannot be signalled or frozen;
* every process the driver starts, however it detaches, is in the namespace,
  and the kernel kills all of them when its first process (our ``_INIT``)
  ends;
* that first process dies when ``unshare`` does (``--kill-child``), and
  when the harness does: it watches the read end of a pipe only the harness
  holds, and exits when it closes (a parent-death signal that also covers a
  harness that died before the host started).

``--net`` adds an empty network namespace (only a loopback that is down), so
a driver has no network unless the user asks (``--allow-network``).  The
socket to the harness is inherited as a descriptor, so none of this touches
the protocol or the memory pools that travel over it.

The namespace's first process is ``_INIT``, not the driver: a namespace's
init ignores every signal it has no handler for (the driver's own
``os.kill(os.getpid(), SIGSEGV)`` would do nothing) and its exit status is
all ``unshare`` passes on.  ``_INIT`` forks the driver, reaps orphans, and
when the driver ends writes its wait status and the processes still running
("pid N (command)", pids of the namespace) to a pipe to the harness, then
exits, which ends them.

Where the kernel refuses namespaces (no ``unshare`` binary, an unprivileged
container without user namespaces), ``probe()`` says so once on stderr and
hosts run as before, under the subreaper.  Cgroups are not used: this
machine's kind (cgroup v1, root in a container) offers a PID namespace to
everyone, which already ends the whole tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

#: The wait status and leftovers report of ``_INIT`` is at most this long (read bound).
MAX_REPORT = 64 << 10
#: Leftover processes ``_INIT`` names at most.
MAX_NAMED = 100

_INIT = r"""
import os, sys
fd, report = int(sys.argv[1]), int(sys.argv[3])
limit, _, tasks = sys.argv[2].partition(":")
limit, tasks = int(limit), int(tasks or 0)
argv = sys.argv[4:]
pid = os.fork()
if pid == 0:
    os.close(report)
    if fd != 3:
        os.dup2(fd, 3)
        os.close(fd)
    os.set_inheritable(3, True)
    os.environ["NNVTS_SOCKET_FD"] = "3"
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG: SIGKILL when this init ends
    except Exception:
        pass
    import resource
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if tasks > 0:  # the sandbox's fallback where no cgroup holds the tree (binds: the user is not root)
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        sys.stderr.write(f"nnvts: cannot run {argv[0]!r}: {error}\n")
        os._exit(127)
os.close(fd)
# Wait for the driver; reap orphans meanwhile; end everything when the harness is gone (the report
# pipe's read end closed: POLLERR), which also covers a harness that died before this started.
import select
watch = select.poll()
driver = os.pidfd_open(pid)
watch.register(driver, select.POLLIN)
watch.register(report, select.POLLERR)
status = None
while status is None:
    for ready, events in watch.poll(1000):
        if ready == report:
            os._exit(137)
    while True:
        try:
            child, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            child = 0
        if child == 0:
            break
        if child == pid:
            status = wait_status
left = []
for name in os.listdir("/proc"):
    if name.isdigit() and name != "1" and len(left) < MAX_NAMED:
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read(121).rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        left.append(f"pid {name} ({command[:120] or '?'}) [driver namespace]")
try:
    os.write(report, (f"{status}\n" + "".join(line.replace("\n", " ") + "\n" for line in left)).encode())
except OSError:
    pass
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
""".replace("MAX_NAMED", str(MAX_NAMED))


@dataclass(frozen=True, slots=True)
class Containment:
    """What this machine allows: the command prefix of a contained host, or why there is none."""

    prefix: tuple[str, ...]
    reason: str = ""

    @property
    def available(self) -> bool:
        return bool(self.prefix)


_probed: dict[bool, Containment] = {}
_lock = threading.Lock()
_warned = False


def _prefix(network: bool) -> list[str]:
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    argv = [unshare]
    if os.geteuid() != 0:
        argv += ["--user", "--map-root-user"]
    argv += ["--pid", "--fork", "--kill-child", "--mount-proc"]
    if not network:
        argv.append("--net")
    return argv


def probe(network: bool = False) -> Containment:
    """Whether hosts can be contained here (tried once per process); says so once when they cannot."""
    global _warned
    with _lock:
        if network in _probed:
            return _probed[network]
        prefix = _prefix(network)
        reason = "" if prefix else "no unshare (util-linux) on PATH"
        if prefix:
            try:
                done = subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, timeout=10, check=False)
                if done.returncode != 0:
                    reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["refused"]
                    reason = f"unshare: {reason[0][:200]}"
            except (OSError, subprocess.TimeoutExpired) as error:
                reason = f"unshare: {error}"
        result = Containment(tuple(prefix) if not reason else (), reason)
        _probed[network] = result
        if not result.available and not _warned:
            _warned = True
            sys.stderr.write(f"nnvts: driver hosts run without namespaces ({reason}); "
                             "a subreaper keeps their process trees instead\n")
        return result


def disabled() -> bool:
    """``NNVTS_NO_NAMESPACES=1`` turns containment off (debugging a driver with the host's tools)."""
    return os.environ.get("NNVTS_NO_NAMESPACES", "") not in ("", "0")


def contained_argv(prefix: tuple[str, ...], socket_fd: int, memory_limit: int, report_fd: int,
                   command: list[str], tasks: int = 0) -> list[str]:
    """The argv of a contained host: ``prefix``, then ``_INIT`` (Python, no site), then the driver's command.

    ``tasks``: RLIMIT_NPROC for the driver (0: none), the sandbox's task limit where no cgroup holds it.
    """
    limits = f"{memory_limit}:{tasks}" if tasks else str(memory_limit)
    return [*prefix, sys.executable, "-S", "-c", _INIT, str(socket_fd), limits, str(report_fd), *command]


def read_report(fd: int) -> tuple[int | None, list[str]]:
    """``_INIT``'s report from the read end ``fd`` (non-blocking): (driver's wait status or None, leftovers)."""
    data = b""
    try:
        while len(data) < MAX_REPORT:
            chunk = os.read(fd, MAX_REPORT - len(data))
            if not chunk:
                break
            data += chunk
    except (BlockingIOError, OSError):
        pass
    lines = data.decode("utf-8", "replace").splitlines()
    if not lines:
        return None, []
    try:
        status = int(lines[0])
    except ValueError:
        return None, []
    return status, [line for line in lines[1:MAX_NAMED + 1] if line]


#: Set (to 1) by ``--allow-network``; an environment variable so ``-j`` workers and every host see it.
NETWORK_ENV = "NNVTS_ALLOW_NETWORK"


def network_allowed() -> bool:
    """Whether the user let drivers reach the network (``--allow-network``)."""
    return os.environ.get(NETWORK_ENV, "") not in ("", "0")


def children_of(pid: int) -> list[int]:
    """The children of ``pid`` in creation order (``/proc/PID/task/*/children``); empty when gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.extend(int(word) for word in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def namespace_members(init: int) -> list[int]:
    """Every process in the PID namespace whose first process is ``init`` (pids of the harness's namespace)."""
    try:
        target = os.readlink(f"/proc/{init}/ns/pid")
    except OSError:
        return []
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/ns/pid") == target:
                    members.append(int(name))
            except OSError:
                continue
    return members
