"""The sandbox's seccomp filter: a classic BPF program refusing what a driver never needs.

bubblewrap loads a compiled program from a descriptor (``--seccomp FD``),
and nnvts's own namespace code installs the same bytes with
``prctl(PR_SET_SECCOMP)``; either way the program is assembled here, by a
dozen lines of BPF, rather than by libseccomp (a C library with no wheel
on PyPI).  The instructions are the kernel's ``struct sock_filter``
(``linux/filter.h``) and the data they read is ``struct seccomp_data``
(``linux/seccomp.h``): syscall number at offset 0, architecture at 4, the
arguments from 16.

What it refuses (``EPERM``): mounting and the new mount API, namespaces
(``setns``, ``unshare``, and ``clone`` with any ``CLONE_NEW*`` flag),
``ptrace`` and reading another process's memory, ``kexec``, kernel
modules, the kernel keyring, ``bpf``, ``pivot_root``/``chroot``, swap,
reboot.  ``clone3`` answers ``ENOSYS``: its flags sit in a structure the
filter cannot read, and every libc falls back to ``clone`` on ``ENOSYS``
(Flatpak and container runtimes do the same).  A process of another
architecture (x32 or 32-bit calls on x86-64) is killed: its numbers are not
the ones listed.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["REFUSED", "filter_program", "supported"]

# BPF opcodes (linux/bpf_common.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x05 | 0x40 | 0x00  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000

_CLONE_NEW = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
              | 0x00000080)  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET NEWTIME

#: Per machine: the audit architecture, and each refused system call's number.  Generic numbers
#: (asm-generic/unistd.h) for arm64; x86-64's own table.
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "swapon": 167, "swapoff": 168,
        "reboot": 169, "init_module": 175, "delete_module": 176, "finit_module": 313, "kexec_load": 246,
        "kexec_file_load": 320, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
        "setns": 308, "unshare": 272, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "clone": 56, "clone3": 435,
    }),
    "aarch64": (0xC00000B7, {
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "swapon": 224, "swapoff": 225,
        "reboot": 142, "init_module": 105, "delete_module": 106, "finit_module": 273, "kexec_load": 104,
        "kexec_file_load": 294, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
        "setns": 268, "unshare": 97, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "clone": 220, "clone3": 435,
    }),
}

#: The system calls refused outright (``clone`` only with a namespace flag; ``clone3`` with ENOSYS).
REFUSED = tuple(name for name in _ARCHES["x86_64"][1] if name not in ("clone", "clone3"))


def supported() -> bool:
    """Whether this machine's architecture has a table here (else the sandbox runs without the filter)."""
    return platform.machine() in _ARCHES


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one) as ``struct sock_filter`` bytes."""
    arch, numbers = _ARCHES[machine or platform.machine()]
    refused = [numbers[name] for name in REFUSED]
    ops = [_op(_LD_W_ABS, 4), _op(_JEQ_K, arch, 1, 0), _op(_RET_K, _RET_KILL_PROCESS), _op(_LD_W_ABS, 0)]
    if arch == 0xC000003E:  # x32 calls carry bit 30: another table, refused whole
        ops += [_op(_JGE_K, 0x40000000, 0, 1), _op(_RET_K, _RET_ERRNO | errno.ENOSYS)]
    # Each refused number: equal -> jump to the EPERM return, placed right after the list.
    count = len(refused)
    for index, number in enumerate(refused):
        ops.append(_op(_JEQ_K, number, count - index + 4, 0))
    # clone: refuse namespace flags (first argument, low word on a little-endian machine); clone3: ENOSYS.
    ops += [
        _op(_JEQ_K, numbers["clone3"], 5, 0),
        _op(_JEQ_K, numbers["clone"], 0, 2),
        _op(_LD_W_ABS, 16),
        _op(_JSET_K, _CLONE_NEW, 1, 0),
        _op(_RET_K, _RET_ALLOW),
        _op(_RET_K, _RET_ERRNO | errno.EPERM),
        _op(_RET_K, _RET_ERRNO | errno.ENOSYS),
    ]
    return b"".join(ops)
