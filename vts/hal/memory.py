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
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile

import numpy as np

ASHMEM = "ashmem"
MMAP_FD = "mmap_fd"
HARDWARE_BUFFER_BLOB = "hardware_buffer_blob"
HARDWARE_BUFFER = "hardware_buffer"
POOL_KINDS = (ASHMEM, MMAP_FD, HARDWARE_BUFFER_BLOB)


class Memory:
    """A mapped pool of ``size`` bytes backed by file descriptor ``fd``."""

    __slots__ = ("__weakref__", "_map", "fd", "name", "size")

    def __init__(self, name: str, size: int, fd: int) -> None:
        self.name = name
        self.size = size
        self.fd = fd
        # mmap refuses length 0; a zero-sized pool maps nothing.
        self._map = mmap.mmap(fd, size) if size > 0 else None

    @property
    def buffer(self) -> memoryview:
        """Writable view of the whole pool."""
        if self._map is None:
            return memoryview(bytearray(0))
        return memoryview(self._map)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self.buffer[offset : offset + length])

    def write(self, offset: int, data: bytes | memoryview) -> None:
        self.buffer[offset : offset + len(data)] = data

    def array(self, offset: int, dtype: np.dtype | str, count: int) -> np.ndarray:
        """A numpy view of ``count`` elements at ``offset`` (no copy)."""
        if self._map is None:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(self._map, dtype=dtype, count=count, offset=offset)

    def close(self) -> None:
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
    fd = os.memfd_create(label, os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    return fd


def allocate(kind: str, size: int) -> Memory:
    """Allocate a zero-filled pool of ``kind`` and ``size`` bytes."""
    if kind in (ASHMEM, HARDWARE_BUFFER_BLOB):
        return Memory(kind, size, _memfd(f"nnvts-{kind}", size))
    if kind == MMAP_FD:
        handle, path = tempfile.mkstemp(prefix="nnvts-pool-")
        os.unlink(path)  # the descriptor keeps the file alive
        os.ftruncate(handle, size)
        return Memory(kind, size, handle)
    raise ValueError(f"unknown memory pool kind {kind!r}; expected one of {POOL_KINDS}")


def from_fd(name: str, size: int, fd: int) -> Memory:
    """Map a pool received from another process (takes ownership of ``fd``)."""
    return Memory(name, size, fd)
