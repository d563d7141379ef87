"""Driver host processes: spawn, connect, kill, restart, and say why one died.

A ``HostProcess`` runs either the Python driver host (``vts.ipc.host``) for
a ``DriverRef``, or any program for ``exec:COMMAND``.  Either way the child
starts through a small launcher that, in the child and before the driver
runs:

* puts the child's end of a socketpair on descriptor 3 and names it in
  ``NNVTS_SOCKET_FD`` (docs/protocol.md, "Starting a driver");
* applies the memory limit with ``setrlimit(RLIMIT_AS)``, so a driver that
  allocates without bound fails alone instead of taking the machine down;
* asks for SIGKILL when the harness dies (``PR_SET_PDEATHSIG``), so a
  driver stuck in a loop never outlives a killed run.

The child runs in its own session: a Ctrl-C at the terminal reaches the
harness only, which then ends the run cleanly and stops the host itself.
Its stdout and stderr go to a private log whose tail is attached to crash
reports (a Python traceback, an abort message); the log is trimmed between
cases so a chatty driver cannot fill the disk.

The child is also made a child subreaper and tagged in its environment
(``vts.ipc.tree``), and the harness makes itself a subreaper: whenever a
host ends - killed after a crash or a timeout, restarted, or stopped at the
end of the run - every process its driver started is killed too, and
``take_leftovers`` names them for the case result.

Where the kernel allows it, the host runs contained (``vts.ipc.contain``):
in PID, mount and network namespaces of its own, so it cannot see or signal
the harness and its whole tree ends with it, even when the harness is
killed.  The subreaper remains for machines that refuse namespaces.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO

from vts.ipc import contain, tree
from vts.ipc.client import ProxyDevice, connect
from vts.ipc.driver_options import DriverOptionError
from vts.ipc.drivers import DriverRef
from vts.ipc.errors import DriverCrashed, DriverLost, DriverTimeout, ProtocolError
from vts.ipc.protocol import socket_pair
from vts.ipc.sandbox.core import HostSandbox
from vts.ipc.sandbox.environment import driver_environment
from vts.ipc.sandbox.launch import confined

#: The descriptor number a driver finds its socket on.
SOCKET_FD = 3
SOCKET_FD_ENV = "NNVTS_SOCKET_FD"
#: Exit status of the Python host when its driver ran out of memory (see host.py).
EXIT_OUT_OF_MEMORY = 3
STDERR_TAIL_LINES = 12
#: The host's log is cut back to its last LOG_KEEP bytes once it exceeds LOG_LIMIT (checked between cases).
LOG_LIMIT = 16 << 20
LOG_KEEP = 64 << 10

_LAUNCHER = r"""
import os, sys
fd, limit, parent = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
os.environ["NNVTS_SOCKET_FD"] = "3"
try:
    import ctypes
    libc = ctypes.CDLL(None)
    libc.prctl(1, 9)  # PR_SET_PDEATHSIG = 1, SIGKILL = 9
    libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the driver's orphans stay in its tree (kept across exec)
except Exception:
    pass
if os.getppid() != parent:  # the harness died before the request above
    sys.exit(1)
if limit > 0:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    os.execvp(sys.argv[4], sys.argv[4:])
except OSError as error:
    sys.stderr.write(f"nnvts: cannot run {sys.argv[4]!r}: {error}\n")
    sys.exit(127)
"""


class HostStartError(RuntimeError):
    """The driver program did not start or did not complete the handshake."""


#: Every host object with a process, so a tree sweep never takes another host for a leftover.
_HOSTS: weakref.WeakValueDictionary[int, HostProcess] = weakref.WeakValueDictionary()
#: Tags the trees of one run; ``set_run_tag`` gives -j workers their parent's.
_run_tag = f"{os.getpid()}-{secrets.token_hex(4)}"
_serial = iter(range(1, 1 << 62))


def set_run_tag(tag: str) -> None:
    global _run_tag
    _run_tag = tag


def run_tag() -> str:
    return _run_tag


def known_children() -> set[int]:
    """This process's own children that are not leftovers: driver hosts, multiprocessing workers."""
    pids = {host._process.pid for host in list(_HOSTS.values()) if host._process is not None}
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        with contextlib.suppress(Exception):
            pids.update(child.pid for child in mp.active_children() if child.pid)
        tracker = sys.modules.get("multiprocessing.resource_tracker")
        pid = getattr(getattr(tracker, "_resource_tracker", None), "_pid", None)
        if pid:
            pids.add(pid)
    return pids


def describe_exit(returncode: int, python_host: bool, memory_limit: int) -> str:
    """Turn an exit status into a crash reason ("killed by SIGSEGV", "exited with status 1")."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    if python_host and returncode == EXIT_OUT_OF_MEMORY:
        limit = f" (memory limit {memory_limit // (1 << 20)} MiB)" if memory_limit else ""
        return f"ran out of memory{limit}: MemoryError"
    return f"exited with status {returncode}"


@dataclass
class HostProcess:
    """One driver host at a time for a driver spec (``name``, ``module:attr`` or ``exec:COMMAND``).

    The driver's options travel with its reference: the Python host makes
    the driver with them (``--option``), and the opening exchange gives them
    to the driver (OPEN); a driver refusing them raises ``DriverOptionError``
    from ``start``.  ``memory_limit`` is in bytes (0: none).  Spawn from a long-lived thread
    (the run's main thread): Linux delivers the parent-death signal when the
    spawning *thread* ends.
    """

    driver: DriverRef
    memory_limit: int = 0
    handshake_timeout: float = 30.0
    threads: int | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    #: The driver may reach the network (False: an empty network namespace, where namespaces exist); None
    #: reads ``NNVTS_ALLOW_NETWORK`` (``contain.network_allowed``), for callers not yet passing it.
    allow_network: bool | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _device: ProxyDevice | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)
    _killed_for: DriverLost | None = field(default=None, init=False, repr=False)
    _token: str = field(default="", init=False, repr=False)
    _started_at: int = field(default=0, init=False, repr=False)
    _swept: bool = field(default=True, init=False, repr=False)
    #: Read end of the contained host's report pipe (its driver's wait status, leftovers); -1: not contained.
    _report: int = field(default=-1, init=False, repr=False)
    _driver_status: int | None = field(default=None, init=False, repr=False)
    #: A contained host's init (first process of its namespace) and driver, pids of the harness's namespace.
    _init_pid: int = field(default=0, init=False, repr=False)
    _driver_pid: int = field(default=0, init=False, repr=False)
    #: The current host's sandbox (``vts.ipc.sandbox``); None when sandboxes are off or unavailable.
    _sandbox: HostSandbox | None = field(default=None, init=False, repr=False)
    starts: int = field(default=0, init=False)
    #: Processes of ended hosts' trees that the harness had to kill, not yet reported ("pid N (command)").
    leftovers: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.driver = DriverRef.of(self.driver)  # parsed once; text only from library callers
        if self.allow_network is None:
            self.allow_network = contain.network_allowed()

    @property
    def network(self) -> bool:
        """Whether the driver may reach the network (``allow_network``, resolved)."""
        return bool(self.allow_network)

    @property
    def is_exec(self) -> bool:
        return self.driver.is_exec

    # -- lifecycle --------------------------------------------------------------

    @property
    def device(self) -> ProxyDevice:
        """The connected device, starting the host if none runs or the last one was lost."""
        if self._device is None or self._device.connection.failure is not None or not self.alive():
            self.restart()
        assert self._device is not None
        return self._device

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def died_unnoticed(self) -> str | None:
        """Why the host ended although nobody was talking to it (None if it runs or was stopped by us).

        A driver thread can crash the process after a case has ended; the
        next case then starts on a fresh host, and this says what happened.
        """
        device = self._device
        if device is None or device.connection.failure is not None or self.alive():
            return None
        assert self._process is not None
        return self._exit_reason()

    def calls_in_flight(self) -> int:
        """Requests the current host was sent and has not answered (0 when none runs)."""
        device = self._device
        return 0 if device is None else device.connection.outstanding()

    def start(self) -> ProxyDevice:
        if self._device is not None:
            raise RuntimeError("host already started; use restart()")
        parent, child = socket_pair()
        if self._log is not None:
            self._log.close()  # the previous host's log: its tail was read when it died
        self._log = tempfile.TemporaryFile(prefix="nnvts-host-", suffix=".log")  # noqa: SIM115 - closed in stop()
        # Appending: when the harness trims the log, the driver's next line goes to its new end.
        flags = fcntl.fcntl(self._log.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(self._log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
        self._killed_for = None
        tree.become_subreaper()
        self._token = f"{_run_tag}/{os.getpid()}/{next(_serial)}"
        self._close_report()
        self._driver_status = None
        self._close_sandbox()
        launch = confined(self._command(), child.fileno(), self.memory_limit, self.network, self._pythonpath())
        box = self._sandbox = launch.box
        self._report = launch.report
        argv = launch.argv or [sys.executable, "-S", "-c", _LAUNCHER, str(child.fileno()), str(self.memory_limit),
                               str(os.getpid()), *self._command()]
        try:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, pass_fds=launch.pass_fds,
                env=self._environment(box), start_new_session=True)
        except OSError as error:
            parent.close()
            self._close_report()
            self._close_sandbox()
            raise HostStartError(f"cannot start the driver host: {error}") from error
        finally:
            child.close()
            launch.started()
        _HOSTS[id(self)] = self
        self._swept = False
        self._started_at = tree.start_time(self._process.pid)
        self.starts += 1
        self._init_pid = self._driver_pid = 0
        try:
            self._device = connect(parent, self._death, timeout=self.handshake_timeout,
                                   options=self.driver.options, driver=str(self.driver))
            if self._report >= 0:
                self._find_contained(self._process.pid)
        except DriverOptionError:
            self.kill()
            self._device = None
            raise
        except (DriverLost, ProtocolError, OSError) as error:
            reason = error.reason if isinstance(error, DriverLost) else str(error)
            tail = self.stderr_tail()
            self.kill()
            self._device = None
            details = ("\n" + "\n".join(tail)) if tail else ""
            raise HostStartError(f"driver {str(self.driver)!r} did not start: {reason}{details}") from None
        return self._device

    def restart(self) -> ProxyDevice:
        self.kill()
        self._device = None
        return self.start()

    def kill(self, failure: DriverLost | None = None) -> None:
        """End the host now (SIGKILL); pending calls raise ``failure`` (default: DriverCrashed)."""
        if failure is not None:
            self._killed_for = failure
        if self._device is not None:
            self._device.connection.abort(failure or DriverCrashed("the driver host was stopped by the harness"))
        process = self._process
        if process is not None and process.poll() is None:
            # The tree first, while the host still holds it together (orphans are re-parented to it).
            self._sweep()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
        self._sweep(final=True)
        if self._device is not None:
            self._device.connection.close()

    def _sweep(self, final: bool = False) -> None:
        """Kill what is left of the current host's process tree and remember it as leftovers."""
        process = self._process
        if process is None or self._swept:
            return
        # The namespace's own init and the driver are no leftovers: under bubblewrap they are still the
        # sandbox's children (dying) when the tree below it is swept, not gone with the namespace.
        own = (f"pid {self._init_pid} ", f"pid {self._driver_pid} ") if self._init_pid else ()
        if self._init_pid and process.poll() is None:
            self.leftovers.extend(self._end_namespace())
        killed = tree.kill_tree(process.pid, self._token, self._started_at, known_children())
        self.leftovers.extend(entry for entry in killed if not entry.startswith(own))
        if process.poll() is not None:
            self._collect_report()
        if final:
            self._swept = True
            self._close_sandbox()

    def _close_sandbox(self) -> None:
        """The ended host's sandbox goes (its cgroup, after what is left in it is killed)."""
        box, self._sandbox = self._sandbox, None
        if box is not None:
            box.close()

    def _exit_reason(self) -> str:
        """Why the ended host ended: the tree's memory limit when the kernel killed for it, else its exit status."""
        code = self._returncode()
        if self._sandbox is not None and self._sandbox.oom_killed():
            return (f"ran out of memory: the driver's process tree reached its memory limit "
                    f"({self.memory_limit >> 20} MiB) and the kernel killed it")
        return describe_exit(code, not self.is_exec, self.memory_limit)

    @property
    def sandbox(self) -> str:
        """Which sandbox ran the current (or last) host: ``bwrap 0.8.0``, ``nnvts``, ``none``."""
        from vts.ipc.sandbox.core import probe

        return probe().label() if not contain.disabled() else "none"

    def _collect_report(self) -> None:
        """Take the contained host's report: its driver's own wait status, and what its namespace still ran."""
        if self._report < 0:
            return
        status, left = contain.read_report(self._report)
        self._close_report()
        if status is not None:
            self._driver_status = status
        self.leftovers.extend(left)

    def _close_report(self) -> None:
        if self._report >= 0:
            os.close(self._report)
            self._report = -1

    def _returncode(self) -> int:
        """The driver's exit status (its own, not ``unshare``'s, when contained); call once the host ended."""
        assert self._process is not None and self._process.returncode is not None
        self._collect_report()
        if self._driver_status is not None:
            return os.waitstatus_to_exitcode(self._driver_status)
        return self._process.returncode

    def _find_contained(self, pid: int) -> None:
        """Note the contained host's init (``unshare``'s child) and driver (the init's first child)."""
        inits = contain.children_of(pid)
        drivers = contain.children_of(inits[0]) if inits else []
        if drivers:
            self._init_pid, self._driver_pid = inits[0], drivers[0]

    def _end_namespace(self) -> list[str]:
        """Name what runs in the host's namespace besides its init and driver, then end it all (SIGKILL the init)."""
        named = [tree.ProcessInfo(pid, 0, 0, 0, "", 0).describe()
                 for pid in contain.namespace_members(self._init_pid) if pid not in (self._init_pid, self._driver_pid)]
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._init_pid, signal.SIGKILL)
        self._init_pid = 0
        return named

    def driver_pid(self) -> int | None:
        """The pid (in the harness's namespace) of the driver itself: the host's, or its init's child when contained."""
        if self._process is None:
            return None
        return self._driver_pid or self._process.pid

    def take_leftovers(self) -> list[str]:
        """Processes of ended host trees killed since the last call ("pid N (command)"), then forgotten."""
        taken, self.leftovers = self.leftovers, []
        return taken

    def trim_log(self) -> None:
        """Keep the host's log small: past LOG_LIMIT bytes, only its last LOG_KEEP bytes stay."""
        if self._log is None:
            return
        fd = self._log.fileno()
        try:
            size = os.fstat(fd).st_size
            if size <= LOG_LIMIT:
                return
            tail = os.pread(fd, LOG_KEEP, size - LOG_KEEP)
            os.ftruncate(fd, 0)
            os.write(fd, f"[nnvts: {size - len(tail)} earlier bytes of driver output dropped]\n".encode() + tail)
        except OSError:
            pass

    def stop(self, timeout: float = 5.0) -> None:
        """End the run politely: ``close()`` the device, hang up, give the host ``timeout`` s to exit."""
        device, process = self._device, self._process
        if device is not None and device.connection.failure is None:
            device.connection.deadline = time.monotonic() + timeout
            device.close()
            device.connection.close()
        if process is not None and process.poll() is None:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._sweep(final=True)
        self._device = None
        self._close_report()
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- why it died ------------------------------------------------------------

    def _death(self) -> DriverCrashed:
        """Called by the connection when the stream ends: wait for the exit status and describe it."""
        if isinstance(self._killed_for, DriverCrashed):
            return self._killed_for
        if isinstance(self._killed_for, DriverTimeout):
            return DriverCrashed(self._killed_for.reason)
        process = self._process
        reason = "closed the connection"
        if process is not None:
            driver = self.driver_pid()
            if process.poll() is None and driver is not None and tree.lives_on(driver):
                # Not dying (a dying process closes its files only once marked exiting): it closed the
                # socket and lives on.  Ended now; waiting for an exit that will not come cost seconds.
                return self._closed_but_running()
            try:
                process.wait(2.0)
            except subprocess.TimeoutExpired:
                return self._closed_but_running()
            reason = self._exit_reason()
        return DriverCrashed(reason, self.stderr_tail())

    def _closed_but_running(self) -> DriverCrashed:
        """The host closed its connection and kept running: killed (its tree by ``kill`` after this)."""
        assert self._process is not None
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()
        return DriverCrashed("closed the connection but kept running (killed by the harness)", self.stderr_tail())

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> tuple[str, ...]:
        if self._log is None:
            return ()
        try:
            size = os.fstat(self._log.fileno()).st_size
            text = os.pread(self._log.fileno(), 8192, max(0, size - 8192)).decode("utf-8", "replace")
        except OSError:
            return ()
        all_lines = [line for line in text.splitlines() if line.strip()]
        # faulthandler dumps every thread, innermost frame first: report the crashing thread's frames.
        fatal = [i for i, line in enumerate(all_lines) if line.startswith("Fatal Python error")]
        if fatal:
            block = all_lines[fatal[-1]:]
            current = [i for i, line in enumerate(block) if line.startswith("Current thread")]
            frames = block[current[0]:] if current else block[1:]
            end = next((i for i, line in enumerate(frames[1:], 1) if not line.startswith(" ")), len(frames))
            return (block[0], *frames[: min(end, lines - 1)])
        return tuple(all_lines[-lines:])

    # -- how to start it --------------------------------------------------------

    def _command(self) -> list[str]:
        if self.is_exec:
            return list(self.driver.argv)
        # -P: the host's import path is the harness's own (PYTHONPATH, below), not its working directory
        # first, which would load another checkout's vts when nnvts is run from inside one.
        argv = [sys.executable, "-P", "-m", "vts.ipc.host", "--driver", self.driver.spec, "--fd", str(SOCKET_FD)]
        if self.threads is not None:
            argv += ["--threads", str(self.threads)]
        for key, value in self.driver.options:  # the host makes the driver with them (and OPEN checks them)
            argv += ["--option", f"{key}={value}"]
        return argv

    def _pythonpath(self) -> str:
        """The host's import path: whatever the harness can import (the driver may be a test module)."""
        if self.is_exec:
            return ""
        paths = [os.path.abspath(p or os.curdir) for p in sys.path if isinstance(p, str)]
        return os.pathsep.join(dict.fromkeys(paths))

    def _environment(self, box: HostSandbox | None = None) -> dict[str, str]:
        """The driver's environment: the allowlist's (``vts.ipc.sandbox.environment``), never the harness's whole."""
        env = driver_environment()
        if box is None:  # no scratch directory of its own: the harness's home and temporary directory
            env.update({k: os.environ[k] for k in ("HOME", "TMPDIR", "USER", "LOGNAME") if k in os.environ})
        env[tree.TREE_ENV] = self._token
        if not self.is_exec:
            env["PYTHONPATH"] = self._pythonpath()
        env.update(self.extra_env)
        return box.environment(env) if box is not None else env


def spawn(driver: DriverRef | str, memory_limit: int = 0, **kwargs: object) -> HostProcess:
    """Start a host for ``driver`` and return it connected."""
    host = HostProcess(driver, memory_limit, **kwargs)  # type: ignore[arg-type]
    host.start()
    return host


def command_of(driver: DriverRef | str) -> Sequence[str]:
    """The argv a host for ``driver`` runs (for messages and docs)."""
    return HostProcess(driver)._command()
