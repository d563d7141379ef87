"""nnvts's own sandbox, where bubblewrap is missing: util-linux ``unshare`` and a small Python prologue.

Run as the sandbox's unprivileged user (``setpriv``), ``unshare --user
--map-root-user`` makes a user namespace in which that user is root, and
only there: the driver has no capability in the harness's namespaces.  The
new mount, PID, IPC, UTS (and, unless ``--allow-network``, network)
namespaces are its own.  Before nnvts's namespace init (``vts.ipc.contain``)
runs, ``_SETUP`` does what bubblewrap would:

* mounts ``view.MountPlan``: ``/`` read-only, recursively
  (``mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)``), a size-limited tmpfs
  on ``/tmp`` and ``/dev/shm``, a fresh ``/dev`` holding only the usual
  nodes, the result files masked by ``/dev/null``, the harness's temporary
  directory by an empty read-only tmpfs, needed paths bound back;
* drops every capability (bounding set, ``capset``), locks
  ``SECBIT_NOROOT`` (root in the namespace gains nothing by ``exec``), sets
  ``no_new_privs`` and installs the seccomp filter it reads from a pipe.

A step that fails ends the host (exit 125, the reason on its stderr): the
sandbox is all or nothing.
"""

from __future__ import annotations

import json
import shutil
import sys

from vts.ipc.sandbox.trial import works
from vts.ipc.sandbox.view import SCRATCH, MountPlan

__all__ = ["own_argv", "unavailable"]

_SETUP = r'''
import ctypes, json, os, stat, sys
_cfg = json.loads(sys.argv.pop(1))
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
def _fail(what):
    sys.stderr.write(f"nnvts sandbox: {what}: {os.strerror(ctypes.get_errno())}\n")
    os._exit(125)
def _ok(result, what):
    if result < 0:
        _fail(what)
    return result
_AT_FDCWD, _AT_RECURSIVE, _AT_EMPTY_PATH = -100, 0x8000, 0x1000
class _Attr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clr", "prop", "userns")]
def _readonly(fd, path, flags):
    attr = _Attr(1, 0, 0, 0)
    _ok(_libc.syscall(442, fd, path, flags | _AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr)), "read-only")
def _clone(path):
    fd = _ok(_libc.syscall(428, _AT_FDCWD, path.encode(), 1 | os.O_CLOEXEC | _AT_RECURSIVE), f"keep {path}")
    _readonly(fd, b"", _AT_EMPTY_PATH)
    return fd
def _place(fd, path, is_dir):
    if is_dir:
        os.makedirs(path, exist_ok=True)
    elif not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    _ok(_libc.syscall(429, fd, b"", _AT_FDCWD, path.encode(), 4), f"bind {path}")
    os.close(fd)
def _tmpfs(path, size, flags=0, mode="1777"):
    options = f"size={size},mode={mode}".encode()
    _ok(_libc.mount(b"tmpfs", path.encode(), b"tmpfs", 2 | 4 | flags, options), f"tmpfs on {path}")
_devices = [(f"/dev/{n}", _clone(f"/dev/{n}")) for n in ("null", "zero", "full", "random", "urandom", "tty")
            if os.path.exists(f"/dev/{n}")]
_kept = [(p, _clone(p), os.path.isdir(p)) for p, fd in _cfg["needed"]]
for _, fd in _cfg["needed"]:
    os.close(fd)
_null = _clone("/dev/null")
_masks = [(p, _clone("/dev/null")) for p in _cfg["files"]]
os.close(_null)
_readonly(_AT_FDCWD, b"/", 0)
_tmpfs("/dev", 1 << 20, mode="0755")  # not sticky: O_CREAT on a device there is refused (may_create_in_sticky)
for path, fd in _devices:
    _place(fd, path, False)
for name, target in (("fd", ""), ("stdin", "/0"), ("stdout", "/1"), ("stderr", "/2")):
    os.symlink("/proc/self/fd" + target, f"/dev/{name}")
os.mkdir("/dev/shm")
_tmpfs("/dev/shm", _cfg["scratch"])
_tmpfs(_cfg["tmp"], _cfg["scratch"])
for path in _cfg["dirs"]:
    _tmpfs(path, 1 << 16)
for path, fd, is_dir in _kept:
    _place(fd, path, is_dir)
for path in _cfg["dirs"]:
    _ok(_libc.mount(None, path.encode(), None, 32 | 1 | 2 | 4, None), f"read-only {path}")
_readonly(_AT_FDCWD, b"/dev", 0)
for path, fd in _masks:
    _place(fd, path, False)
try:
    os.chdir(_cfg["cwd"])
except OSError:
    os.chdir(_cfg["tmp"])
_ok(_libc.prctl(28, 3, 0, 0, 0), "securebits")  # SECBIT_NOROOT | SECBIT_NOROOT_LOCKED
for cap in range(64):
    if _libc.prctl(24, cap, 0, 0, 0) < 0 and ctypes.get_errno() == 22:
        break
class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
_ok(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (ctypes.c_uint32 * 6)()), "capset")
_ok(_libc.prctl(38, 1, 0, 0, 0), "no_new_privs")
if _cfg["seccomp"] >= 0:
    _program = b""
    while True:
        _chunk = os.read(_cfg["seccomp"], 65536)
        if not _chunk:
            break
        _program += _chunk
    os.close(_cfg["seccomp"])
    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    _ok(_libc.prctl(22, 2, ctypes.byref(_Prog(len(_program) // 8, _program)), 0, 0), "seccomp")
del _cfg, _libc, _devices, _kept, _masks
'''


def _prefix(network: bool) -> list[str]:
    unshare = shutil.which("unshare") or "unshare"
    argv = [unshare, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
            "--ipc", "--uts"]
    if not network:
        argv.append("--net")
    return argv


def own_argv(plan: MountPlan, network: bool, seccomp_fd: int, init_argv: list[str],
             needed_fds: list[int] | None = None) -> list[str]:
    """``unshare ...`` then ``init_argv`` (``python -S -c CODE ARGS``) with ``_SETUP`` run before its code."""
    python, flag_s, flag_c, code, *args = init_argv
    cwd = plan.workdir()
    config = json.dumps({"needed": list(zip(plan.needed, needed_fds or [], strict=True)),
                         "files": list(plan.hidden_files), "dirs": list(plan.hidden_dirs),
                         "scratch": plan.scratch, "tmp": SCRATCH, "seccomp": seccomp_fd, "cwd": cwd})
    return [*_prefix(network), python, flag_s, flag_c, _SETUP + code, config, *args]


def unavailable(drop: list[str]) -> str:
    """Why this sandbox cannot run here (empty when it can): tried once, with a plan that hides nothing."""
    if shutil.which("unshare") is None:
        return "no unshare (util-linux) on PATH"
    plan = MountPlan(1 << 20, (), (), ())
    return works([*drop, *own_argv(plan, False, -1, [sys.executable, "-S", "-c", "pass"])])
