"""Shared memory pools: the Python analogue of the HAL's ``hidl_memory``.

Tensors never travel as bare arrays: a request names byte ranges inside
pools, and a pool is real operating-system memory that another process can
map.  Three kinds carry the HAL's names so a driver can map by name and
refuse names it does not support, as a HAL driver must:

* ``ashmem``: anonymous shared memory (a Linux memfd);
* ``mmap_fd``: a mapped regular file;
* ``hardware_buffer_blob``: a BLOB-format hardware buffer (also a memfd here,
  with its own name so drivers see a distinct kind).

Every pool owns a file descriptor, so the out-of-process protocol can pass
it with SCM_RIGHTS and both sides see the same bytes.

A pool is shared with a driver that is, by definition, not yet trusted.  A
mapping of a file that another process shrinks raises SIGBUS on the next
access, which would kill the harness; so:

* memfd pools (``ashmem``, ``hardware_buffer_blob``) are created with
  ``MFD_ALLOW_SEALING`` and sealed ``F_SEAL_SHRINK | F_SEAL_GROW |
  F_SEAL_SEAL``: nobody can change their size (a driver's ``ftruncate``
  fails with EPERM), so the mapping is safe to touch by construction;
* a pool that cannot be sealed (``mmap_fd``: a regular file) is *sealed*
  False, and ``read``, ``write`` and ``array`` never touch its mapping: they
  use ``pread``/``pwrite`` at the offset, which return short instead of
  faulting, and a short file raises ``PoolTruncated``.  ``buffer`` (the raw
  mapping, for drivers) is the one accessor that is not protected.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import tempfile

import numpy as np

ASHMEM = "ashmem"
MMAP_FD = "mmap_fd"
HARDWARE_BUFFER_BLOB = "hardware_buffer_blob"
HARDWARE_BUFFER = "hardware_buffer"
POOL_KINDS = (ASHMEM, MMAP_FD, HARDWARE_BUFFER_BLOB)

#: The seals of every memfd pool: no size change, and no further seals (a driver adding
#: F_SEAL_WRITE or F_SEAL_FUTURE_WRITE could otherwise stop the harness writing inputs).
POOL_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


class PoolTruncated(Exception):
    """A pool's file is no longer the size it was declared with: the other side resized it.

    Only possible for pools that cannot be sealed (``mmap_fd``).  ``reason``
    names the pool and both sizes; the runner reports it as the driver's
    failure.
    """

    def __init__(self, pool: Memory, actual: int) -> None:
        self.reason = (f"the driver resized a shared {pool.name} pool from {pool.size} to {actual} bytes "
                       "(a pool's size is fixed by the harness)")
        super().__init__(self.reason)
        self.actual = actual


def _seals_of(fd: int) -> int:
    try:
        return fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        return 0  # not a memfd (a regular file), or sealing not allowed: no seals


class Memory:
    """A mapped pool of ``size`` bytes backed by file descriptor ``fd``.

    ``sealed``: the file's size cannot change (a sealed memfd), so the
    mapping can be read and written directly; otherwise every access goes
    through ``pread``/``pwrite`` and cannot fault.
    """

    __slots__ = ("__weakref__", "_lazy", "_map", "fd", "name", "read_only", "sealed", "size")

    def __init__(self, name: str, size: int, fd: int, *, sealed: bool | None = None, lazy: bool = False,
                 read_only: bool | None = None) -> None:
        """``sealed``: known by whoever made the pool (None: ask the file).  ``lazy``: a sealed pool
        mapped only when a view of it is asked for (``buffer``, ``array``); until then ``read`` and
        ``write`` are one ``pread``/``pwrite`` each, which is all the harness does with most request
        pools (issue 23: five system calls fewer per pool than mapping it)."""
        self.name = name
        self.size = size
        self.fd = fd
        if sealed is None:
            sealed = fd >= 0 and _seals_of(fd) & fcntl.F_SEAL_SHRINK != 0
        self.sealed = sealed
        #: The descriptor was opened read-only (AIDL input memory, ``read_only_view``): the mapping is
        #: PROT_READ, so a write through ``buffer`` or ``write`` fails instead of changing the client's data.
        #: ``read_only`` None: ask the descriptor (a pool received from the other side).
        if read_only is None:
            read_only = fd >= 0 and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
        self.read_only = read_only
        self._lazy = lazy and sealed and size > 0 and fd >= 0
        # mmap refuses length 0; a zero-sized pool maps nothing.
        self._map = self._mmap() if size > 0 and not self._lazy else None

    def _mmap(self) -> mmap.mmap:
        return mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ if self.read_only else mmap.ACCESS_DEFAULT)

    def _mapping(self) -> mmap.mmap | None:
        if self._lazy:
            self._map = self._mmap()
            self._lazy = False
        return self._map

    @property
    def buffer(self) -> memoryview:
        """Writable view of the whole mapping (for drivers).

        Harness code uses ``read``/``write``/``array``: for an unsealed pool
        a driver may shrink the file, and touching this view then raises
        SIGBUS.
        """
        mapping = self._mapping()
        if mapping is None:
            return memoryview(bytearray(0))
        return memoryview(mapping)

    def current_size(self) -> int:
        """The size of the file now (``fstat``); differs from ``size`` only if someone resized it."""
        if self.fd < 0:
            return self.size
        return os.fstat(self.fd).st_size

    def check_size(self) -> None:
        """Raise ``PoolTruncated`` when an unsealed pool's file no longer has its declared size."""
        if not self.sealed and self.fd >= 0 and self._map is not None:
            actual = self.current_size()
            if actual != self.size:
                raise PoolTruncated(self, actual)

    def read(self, offset: int, length: int) -> bytes:
        if self._lazy:
            return self._pread(offset, length)
        if self.sealed or self._map is None:
            return bytes(self.buffer[offset : offset + length])
        return self._pread(offset, length)

    def write(self, offset: int, data: bytes | memoryview) -> None:
        if self.read_only:
            raise PermissionError(f"write of {len(data)} bytes into a read-only {self.name} pool (input memory)")
        if (self.sealed or self._map is None) and not self._lazy:
            self.buffer[offset : offset + len(data)] = data
            return
        length = len(data)
        if offset < 0 or offset + length > self.size:
            raise ValueError(f"write of {length} bytes at {offset} outside a {self.size}-byte pool")
        if not self._lazy:
            actual = self.current_size()
            if actual < offset + length:
                raise PoolTruncated(self, actual)  # pwrite would silently grow the file back
        view = memoryview(data).cast("B")
        done = 0
        while done < length:
            done += os.pwrite(self.fd, view[done:], offset + done)

    def array(self, offset: int, dtype: np.dtype | str, count: int) -> np.ndarray:
        """``count`` elements at ``offset``: a view for a sealed pool, a copy for an unsealed one."""
        if self._mapping() is None:
            return np.zeros(0, dtype=dtype)
        if self.sealed:
            return np.frombuffer(self._map, dtype=dtype, count=count, offset=offset)
        itemsize = np.dtype(dtype).itemsize
        if count < 0:
            count = max(self.size - offset, 0) // max(itemsize, 1)
        data = self._pread(offset, count * itemsize)
        if len(data) < count * itemsize:
            raise ValueError(f"{count} elements of {itemsize} bytes at {offset} run past a {self.size}-byte pool")
        return np.frombuffer(bytearray(data), dtype=dtype, count=count)

    def _pread(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset``, clamped to the declared size like a slice of the mapping."""
        start = min(max(offset, 0), self.size)
        want = max(min(length, self.size - start), 0)
        if want == 0:
            return b""
        out = bytearray(want)
        view = memoryview(out)
        got = 0
        while got < want:
            n = os.preadv(self.fd, [view[got:]], start + got)
            if n <= 0:
                raise PoolTruncated(self, self.current_size())
            got += n
        return bytes(out)

    def close(self) -> None:
        self._lazy = False
        if self._map is not None:
            # A numpy view may still reference the map; the OS then frees it with
            # the last reference, which is what the HAL allows too.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __repr__(self) -> str:
        return f"Memory({self.name!r}, size={self.size}, fd={self.fd})"


def _memfd(label: str, size: int) -> int:
    fd = os.memfd_create(label, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, POOL_SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def allocate(kind: str, size: int) -> Memory:
    """Allocate a zero-filled pool of ``kind`` and ``size`` bytes (memfd kinds sealed at that size)."""
    if kind in (ASHMEM, HARDWARE_BUFFER_BLOB):
        return Memory(kind, size, _memfd(f"nnvts-{kind}", size), sealed=True, lazy=True, read_only=False)
    if kind == MMAP_FD:
        handle, path = tempfile.mkstemp(prefix="nnvts-pool-")
        os.unlink(path)  # the descriptor keeps the file alive
        os.ftruncate(handle, size)
        return Memory(kind, size, handle, read_only=False)
    raise ValueError(f"unknown memory pool kind {kind!r}; expected one of {POOL_KINDS}")


def unmapped(name: str, size: int, fd: int = -1) -> Memory:
    """A pool that has a name and a size but no bytes (closed, or one that could not be mapped)."""
    pool = Memory.__new__(Memory)
    pool.name, pool.size, pool.fd, pool._map, pool.sealed, pool._lazy = name, size, fd, None, False, False
    pool.read_only = False
    return pool


def read_only_view(pool: Memory) -> Memory:
    """The same bytes as ``pool`` through a descriptor opened read-only: what an AIDL driver gets for input memory.

    IPreparedModel.aidl gives a driver its inputs read-only (Android's VTS maps input ashmem read-only); the
    view's mapping is PROT_READ, so a driver writing into it fails (in process: ``TypeError`` or
    ``PermissionError``; over the protocol the host maps the read-only descriptor it receives read-only and a
    C driver's PROT_WRITE mapping is refused).  The harness keeps writing through ``pool``; the view is closed
    on its own.  A guard against a driver's mistakes, not against a hostile one that reopens the file.
    """
    fd = os.open(f"/proc/self/fd/{pool.fd}", os.O_RDONLY | os.O_CLOEXEC)
    return Memory(pool.name, pool.size, fd, sealed=pool.sealed, lazy=pool.sealed, read_only=True)


def from_fd(name: str, size: int, fd: int) -> Memory:
    """Map a pool received from another process (takes ownership of ``fd``)."""
    return Memory(name, size, fd)
