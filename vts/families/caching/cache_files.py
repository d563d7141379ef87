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
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

READ_WRITE = os.O_RDWR | os.O_CREAT
READ_ONLY = os.O_RDONLY
WRITE_ONLY = os.O_WRONLY | os.O_CREAT
NOT_A_FILE = -1  # pseudo mode: /dev/null instead of the cache file


@dataclass(frozen=True, slots=True)
class Handles:
    model: list[int]
    data: list[int]


class CacheDir:
    """A temporary cache directory with ``n_model`` + ``n_data`` files (and ``tmp``); a context manager."""

    def __init__(self, n_model: int, n_data: int, prefix: str = "") -> None:
        self.n_model, self.n_data = n_model, n_data
        self.root = tempfile.mkdtemp(prefix="nnvts-cache-")
        self.prefix = prefix
        self._fds: list[int] = []
        for path in (*self.model_paths(), *self.data_paths(), self.path("tmp")):
            open(path, "wb").close()

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def model_paths(self, suffix: str = "") -> list[str]:
        return [self.path(f"model{i}{suffix}") for i in range(self.n_model)]

    def data_paths(self, suffix: str = "") -> list[str]:
        return [self.path(f"data{i}{suffix}") for i in range(self.n_data)]

    def open(self, path: str, mode: int = READ_WRITE) -> int:
        fd = os.open(os.devnull, os.O_RDWR) if mode == NOT_A_FILE else os.open(path, mode, 0o600)
        self._fds.append(fd)
        return fd

    def handles(self, suffix: str = "", modes: dict[tuple[str, int], int] | None = None) -> Handles:
        """One fresh descriptor per cache file; ``modes[(kind, i)]`` overrides READ_WRITE for one file."""
        modes = modes or {}
        model = [self.open(p, modes.get(("model", i), READ_WRITE)) for i, p in enumerate(self.model_paths(suffix))]
        data = [self.open(p, modes.get(("data", i), READ_WRITE)) for i, p in enumerate(self.data_paths(suffix))]
        return Handles(model, data)

    def tmp(self) -> int:
        return self.open(self.path("tmp"))

    def close_fds(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def __enter__(self) -> CacheDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_fds()
        shutil.rmtree(self.root, ignore_errors=True)


def files_of(handles: Handles) -> list[tuple[str, int]]:
    """(kind, index) of every cache file, model files first."""
    return [("model", i) for i in range(len(handles.model))] + [("data", i) for i in range(len(handles.data))]


def flip_random_bit(path: str, rng: np.random.Generator) -> bool:
    """Flip one random bit of one random byte (CorruptedModelCache); False for an empty file."""
    size = os.path.getsize(path)
    if size == 0:
        return False
    with open(path, "r+b") as handle:
        offset = int(rng.integers(size))
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ (1 << int(rng.integers(8)))]))
    return True


def append_random_bytes(path: str, rng: np.random.Generator) -> None:
    """Append 1 to 256 random bytes (WrongLength*Cache)."""
    count = int(rng.integers(1, 257))
    with open(path, "ab") as handle:
        handle.write(rng.integers(0, 256, count, dtype=np.uint8).tobytes())


def copy_files(sources: Sequence[str], targets: Sequence[str]) -> None:
    """Overwrite each target's content in place (same inode, as the suite's copyCacheFiles)."""
    for source, target in zip(sources, targets, strict=True):
        shutil.copyfile(source, target)
