"""Cache files and handles for the caching family (VTS CompilationCachingTests.cpp).

The HAL passes compilation caches as native handles holding one file
descriptor each; nnvts's rendering (``vts.hal.interfaces.CacheFiles``) is a
sequence of descriptors.  ``CacheDir`` is the suite's per-test temporary
directory: empty files ``model0..``, ``data0..`` and an extra ``tmp``,
opened READ_WRITE, READ_ONLY or WRITE_ONLY on demand, every descriptor closed
when the test ends, the directory removed with it.

Where the suite hands a driver a handle with two descriptors or none
(``*InvalidNumFd``), the one-descriptor rendering cannot; those tests hand
the driver a descriptor that is not a cache file at all (``/dev/null``
opened read-write): the same obligation -- check the handle before trusting
it -- in a form the rendering can carry, in process and over the protocol.

The files are the harness's, but the driver holds descriptors of them and
may know where they are: a hostile driver replaces them with symbolic links
to a file outside (or to its own), hoping the harness writes through them.
So each file is created once, ``O_EXCL | O_NOFOLLOW`` relative to the
directory's own descriptor, and kept open; everything after (a fresh
descriptor in another access mode, the suite's bit flips, appended bytes,
copied-in caches) goes through that descriptor, never through the name.
A fresh descriptor is the same file reopened through ``/proc/self/fd``
(where there is no ``/proc``: reopened by name without following links and
checked to be the same inode).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

READ_WRITE = os.O_RDWR | os.O_CREAT
READ_ONLY = os.O_RDONLY
WRITE_ONLY = os.O_WRONLY | os.O_CREAT
NOT_A_FILE = -1  # pseudo mode: /dev/null instead of the cache file
_ACCESS = os.O_RDONLY | os.O_WRONLY | os.O_RDWR


class CacheTampered(OSError):
    """A cache file's name no longer names the file the harness made (replaced by a link or another file)."""


@dataclass(frozen=True, slots=True)
class Handles:
    model: list[int]
    data: list[int]


class CacheDir:
    """A temporary cache directory with ``n_model`` + ``n_data`` files (and ``tmp``); a context manager.

    Files are named ``model0..``, ``data0..`` (with a suffix: another set, e.g. ``model0_mul``) and ``tmp``;
    each is made on first use and then known by its descriptor only.
    """

    def __init__(self, n_model: int, n_data: int, prefix: str = "") -> None:
        self.n_model, self.n_data = n_model, n_data
        self.root = tempfile.mkdtemp(prefix="nnvts-cache-")
        self.prefix = prefix
        self._fds: list[int] = []
        #: The harness's own descriptor of each file, by name: the file, whatever its name comes to name.
        self._files: dict[str, int] = {}
        self._dir = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for name in (*self.model_names(), *self.data_names(), "tmp"):
                self._file(name)
        except BaseException:
            self._close_all()
            raise

    def model_names(self, suffix: str = "") -> list[str]:
        return [f"model{i}{suffix}" for i in range(self.n_model)]

    def data_names(self, suffix: str = "") -> list[str]:
        return [f"data{i}{suffix}" for i in range(self.n_data)]

    def _file(self, name: str) -> int:
        """The harness's descriptor of ``name``, which it creates now if it has none yet (never an existing one:
        a name the driver made first, a link above all, is refused)."""
        fd = self._files.get(name)
        if fd is None:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(name, flags, 0o600, dir_fd=self._dir)
            except FileExistsError:
                raise CacheTampered(f"cache file {name!r} was made by someone else (the driver?) before the "
                                    "harness made it") from None
            self._files[name] = fd
        return fd

    def open(self, name: str, mode: int = READ_WRITE) -> int:
        """A fresh descriptor of cache file ``name`` in ``mode`` (its own file offset), or ``/dev/null``."""
        if mode == NOT_A_FILE:
            fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        else:
            fd = self._reopen(self._file(name), name, mode & _ACCESS)
        self._fds.append(fd)
        return fd

    def _reopen(self, own: int, name: str, access: int) -> int:
        try:
            return os.open(f"/proc/self/fd/{own}", access | os.O_CLOEXEC)  # the open file, not its name
        except FileNotFoundError:  # no /proc: by name, without following a link, and checked
            pass
        try:
            fd = os.open(name, access | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._dir)
        except OSError as error:
            raise CacheTampered(f"cache file {name!r} cannot be reopened ({error.strerror})") from None
        mine, found = os.fstat(own), os.fstat(fd)
        if (found.st_dev, found.st_ino) != (mine.st_dev, mine.st_ino) or not stat.S_ISREG(found.st_mode):
            os.close(fd)
            raise CacheTampered(f"cache file {name!r} was replaced by another file")
        return fd

    def handles(self, suffix: str = "", modes: dict[tuple[str, int], int] | None = None) -> Handles:
        """One fresh descriptor per cache file; ``modes[(kind, i)]`` overrides READ_WRITE for one file."""
        modes = modes or {}
        model = [self.open(n, modes.get(("model", i), READ_WRITE)) for i, n in enumerate(self.model_names(suffix))]
        data = [self.open(n, modes.get(("data", i), READ_WRITE)) for i, n in enumerate(self.data_names(suffix))]
        return Handles(model, data)

    def tmp(self) -> int:
        return self.open("tmp")

    def flip_random_bit(self, name: str, rng: np.random.Generator) -> bool:
        """Flip one random bit of one random byte of ``name`` (CorruptedModelCache); False for an empty file."""
        fd = self._file(name)
        size = os.fstat(fd).st_size
        if size == 0:
            return False
        offset = int(rng.integers(size))
        byte = os.pread(fd, 1, offset)
        if not byte:  # the driver truncated it meanwhile
            return False
        os.pwrite(fd, bytes([byte[0] ^ (1 << int(rng.integers(8)))]), offset)
        return True

    def append_random_bytes(self, name: str, rng: np.random.Generator) -> None:
        """Append 1 to 256 random bytes to ``name`` (WrongLength*Cache)."""
        fd = self._file(name)
        count = int(rng.integers(1, 257))
        os.pwrite(fd, rng.integers(0, 256, count, dtype=np.uint8).tobytes(), os.fstat(fd).st_size)

    def copy(self, sources: Sequence[str], targets: Sequence[str]) -> None:
        """Overwrite each target's content in place (same inode, as the suite's copyCacheFiles)."""
        for source, target in zip(sources, targets, strict=True):
            src, dst = self._file(source), self._file(target)
            os.ftruncate(dst, 0)
            offset = 0
            while chunk := os.pread(src, 1 << 20, offset):
                os.pwrite(dst, chunk, offset)
                offset += len(chunk)

    def close_fds(self) -> None:
        """Close the descriptors handed out (the harness's own stay open until the directory goes)."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def _close_all(self) -> None:
        self.close_fds()
        for fd in (*self._files.values(), self._dir):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._files.clear()

    def __enter__(self) -> CacheDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_all()
        shutil.rmtree(self.root, ignore_errors=True)  # never follows a link the driver left there


def files_of(handles: Handles) -> list[tuple[str, int]]:
    """(kind, index) of every cache file, model files first."""
    return [("model", i) for i in range(len(handles.model))] + [("data", i) for i in range(len(handles.data))]
