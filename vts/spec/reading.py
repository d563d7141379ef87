"""Reading a spec file's bytes safely: regular files only, bounded size, streamed decompression.

A FIFO, device or socket named ``x.yaml`` would block ``open`` or ``read``
forever (or read without end), so the file type is checked with ``stat``
before the file is opened, and again on the open descriptor (opened with
``O_NONBLOCK``) in case the path changed in between.  Gzip data is inflated
chunk by chunk and abandoned as soon as it passes ``MAX_SPEC_BYTES``: a
gzip bomb never inflates fully.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib

from vts import bounds
from vts.spec.errors import SpecError

_CHUNK = 1 << 20


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def not_regular_error(path: str, mode: int) -> SpecError:
    return SpecError(path, None, "", f"{file_kind(mode)}, not a regular file: a spec must be a regular file "
                     "(nnvts never opens pipes, sockets or devices)")


def check_regular(path: str) -> None:
    """Raise ``SpecError`` unless ``path`` is (a symlink to) a regular file; never opens it."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise SpecError(path, None, "", f"cannot read the file: {e.strerror or e}") from None
    except ValueError as e:  # an embedded NUL byte
        raise SpecError(repr(path), None, "", f"not a usable path: {e}") from None
    if not stat.S_ISREG(mode):
        raise not_regular_error(path, mode)


def read_bounded(path: str, limit: int | None = None) -> bytes:
    """The bytes of regular file ``path``, gunzipped when its name ends in ``.gz``; at most ``limit``."""
    limit = bounds.MAX_SPEC_BYTES if limit is None else limit
    check_regular(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise SpecError(path, None, "", f"cannot read the file: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as raw:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between stat and open
            raise not_regular_error(path, mode)
        if path.endswith(".gz"):
            return _gunzip(raw, path, limit)
        try:
            data = raw.read(limit + 1)
        except OSError as e:
            raise SpecError(path, None, "", f"cannot read the file: {e.strerror or e}") from None
        if len(data) > limit:
            raise _too_big(path, limit, "")
        return data


def _gunzip(raw: object, path: str, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as inflated:  # type: ignore[arg-type]
            while True:
                chunk = inflated.read(min(_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                parts.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise _too_big(path, limit, " once decompressed")
    except (OSError, EOFError, zlib.error) as e:
        raise SpecError(path, None, "", f"cannot decompress: expected gzip data ({e})") from None
    return b"".join(parts)


def _too_big(path: str, limit: int, how: str) -> SpecError:
    return SpecError(path, None, "", f"the file is larger than {bounds.describe_bytes(limit)}{how}: "
                     "a spec may hold at most that much text (vts/bounds.py)")
