"""Writing a report atomically: a reader (a CI artifact upload, a browser) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import IO


def atomic_write(path: str, render: Callable[[IO[str]], None]) -> None:
    """Render into a temporary file beside ``path``, then rename it into place (removed on any failure)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".nnvts-", suffix=".tmp")
    try:
        # "strict": every string was cleaned (vts.report.sanitize); an encoding error here is a bug to see.
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            render(out)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; a report is as readable as any file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
