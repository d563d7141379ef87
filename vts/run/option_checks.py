"""What a run's options may be, checked once for both ways in: ``nnvts run`` and the pytest plugin.

The two faces (``vts.cli``, ``vts.pytest_plugin``) sit on one floor and may
not import each other, so the bounds and the checks of the options they share
live here, below both: ``nnvts run --timeout nan`` and ``pytest
--nnvts-timeout nan`` are refused by the same code, in the same words.  The
file checks never block: a FIFO or a device given as a list is refused by
``fstat`` on a descriptor opened without waiting, never read.

Standard library only: ``nnvts --help`` imports it.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat

#: Upper bounds of numeric options: a huge value is a usage error, not hours of spawning.
MAX_TIMEOUT = 7 * 24 * 3600.0  # seconds per case
MAX_MEMORY_MIB = 1 << 30  # 1 EiB: any real limit fits; larger would overflow rlimit arithmetic
MAX_RERUNS = 100
MAX_CRASHES = 1_000_000
#: Bytes read of a list (expected failures, extension allowlist): read whole by the option's user.
MAX_INPUT_BYTES = 16 << 20


class OptionValueError(ValueError):
    """An option value that is not allowed; ``str`` is the reason, without the option's name."""


def finite_float(value: object, low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 high_open: bool = False) -> float:
    """``value`` as a finite float within ``[low, high]`` (ends open when asked); NaN and infinities refused."""
    if isinstance(value, float) and math.isfinite(value):
        number = value
    else:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise OptionValueError(f"{value!r} is not a number") from None
        if not math.isfinite(number):
            raise OptionValueError(f"{value!r} is not a finite number")
    too_low = low is not None and (number <= low if low_open else number < low)
    too_high = high is not None and (number >= high if high_open else number > high)
    if too_low or too_high:
        raise OptionValueError(f"{value} is not in the range {describe_range(low, high, low_open, high_open)}")
    return number


def describe_range(low: float | None, high: float | None, low_open: bool = False, high_open: bool = False) -> str:
    parts = []
    if low is not None:
        parts.append(f"{low:g} {'<' if low_open else '<='} x")
    if high is not None:
        parts.append(f"x {'<' if high_open else '<='} {high:g}")
    return " and ".join(parts) or "of finite numbers"


def bounded_int(value: object, low: int, high: int) -> int:
    """``value`` as an integer within ``[low, high]`` (click's ``IntRange`` words, as ``nnvts run`` says it)."""
    if isinstance(value, bool):
        raise OptionValueError(f"{value!r} is not a valid integer")
    try:
        number = value if isinstance(value, int) else int(str(value).strip())
    except ValueError:
        raise OptionValueError(f"{value!r} is not a valid integer") from None
    if not low <= number <= high:
        raise OptionValueError(f"{value} is not in the range {low}<=x<={high}.")  # click.IntRange's words
    return number


def regular_file(path: str) -> os.stat_result:
    """``stat`` of an existing regular file (never opened: a FIFO or device would block or never end)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as error:
        raise OptionValueError(f"{path!r}: {getattr(error, 'strerror', None) or error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise OptionValueError(f"{path!r} is not a regular file")
    return info


def read_input_file(path: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular UTF-8 text file of at most ``max_bytes``, read without ever blocking.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` on that descriptor: a FIFO swapped in after a
    ``stat`` is refused, not waited on (a FIFO with no writer would hold the run forever).
    """
    regular_file(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise OptionValueError(f"{path!r}: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OptionValueError(f"{path!r} is not a regular file")
        if info.st_size > max_bytes:
            raise OptionValueError(f"{path!r} is larger than {max_bytes >> 20} MiB")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise OptionValueError(f"{path!r}: {error.strerror or error}") from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise OptionValueError(f"{path!r} is larger than {max_bytes >> 20} MiB")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise OptionValueError(f"{path!r} line {line}: expected UTF-8 text, got byte 0x{data[error.start]:02x}") \
            from None
    return data


def output_file(path: str) -> str:
    """``path`` if a report can be written there: not a directory, nor an existing FIFO, device or other
    non-regular file (opening one to write would block or write elsewhere); its directory exists or can be
    made, and can be written."""
    if os.path.isdir(path):
        raise OptionValueError(f"{path!r} is a directory")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise OptionValueError(f"{path!r} exists and is not a regular file")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):  # created at write time; the first existing ancestor decides
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OptionValueError(f"{path!r}: {parent!r} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OptionValueError(f"{path!r}: cannot write in {parent!r}")
    return path


def check_outputs_spare_inputs(outputs: dict[str, str | None], inputs: list[str], command: str = "run") -> None:
    """Refuse (``OptionValueError``) two outputs naming one file, or an output naming an input (a spec, a list,
    a shard): writing the report would overwrite what the command reads, or one report the other.

    A file is known by its real path and, when it exists, by its device and inode as well: a symbolic
    link, a hard link or a bind mount naming an input is that input (``nnvts merge S --jsonl L``, ``L`` a
    link to ``S``, would empty ``S`` before reading it).
    """
    seen: dict[object, str] = {}
    protected: set[object] = set()
    for path in inputs:
        protected.update(_identities(path))
    for option, path in outputs.items():
        if path is None:
            continue
        names = _identities(path)
        clash = next((seen[name] for name in names if name in seen), None)
        if clash is not None:
            raise OptionValueError(f"{clash} and {option} name the same file {path!r}")
        if protected.intersection(names):
            raise OptionValueError(f"{option} {path!r} is an input of this {command}: writing it would destroy it")
        seen.update(dict.fromkeys(names, option))


def _identities(path: str) -> list[object]:
    """What names one file: its real path, and ``(device, inode)`` when it exists (followed through links)."""
    names: list[object] = [os.path.realpath(path)]
    with contextlib.suppress(OSError, ValueError):
        info = os.stat(path)
        names.append((info.st_dev, info.st_ino))
    return names
