"""Writing a report atomically: a reader (a CI artifact upload, a browser) never sees half a file.

And where a report keeps its working files meanwhile (``scratch_directory``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import IO


class AtomicFile:
    """A temporary file beside ``path``, renamed into place by ``commit`` or removed by ``discard``."""

    def __init__(self, path: str) -> None:
        self.path = path
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        handle, self._tmp = tempfile.mkstemp(dir=directory, prefix=".nnvts-", suffix=".tmp")
        # "strict" encoding: every string was cleaned (vts.report.sanitize); an encoding error here is a bug to see.
        self.file: IO[str] = os.fdopen(handle, "w", encoding="utf-8")

    def commit(self) -> None:
        self.file.close()
        os.chmod(self._tmp, 0o666 & ~_umask())  # mkstemp makes it private; a report is as readable as any file
        os.replace(self._tmp, self.path)

    def discard(self) -> None:
        self.file.close()
        if os.path.exists(self._tmp):
            os.unlink(self._tmp)


def atomic_write(path: str, render: Callable[[IO[str]], None]) -> None:
    """Render into a temporary file beside ``path``, then rename it into place (removed on any failure)."""
    target = AtomicFile(path)
    try:
        render(target.file)
        target.commit()
    except BaseException:
        target.discard()
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def scratch_directory(given: str | None, prefix: str) -> tuple[tempfile.TemporaryDirectory[str] | None, str]:
    """(a temporary directory the caller owns and removes, or None; the path to use).

    A report renders its case lists in scratch files: in a directory of its own by default, or in
    ``given``, which its owner keeps and removes (a stream part's, ``vts.report.parts``).
    """
    if given is not None:
        return None, given
    owned = tempfile.TemporaryDirectory(prefix=prefix)
    return owned, owned.name
