"""The results stream: JSON lines, one per case, flushed as each case ends.

It is the report that survives anything: a harness killed mid-run leaves a
file whose complete lines are all valid records (a reader drops a torn last
line).  The first line is a header (``{"nnvts_results": 1, ...}``), the last
a footer with the summary, absent when the run was killed.  The JSON and
JUnit reports are rendered from this stream at the end of the run.

They are rendered from the harness's own record of it, never from a file
anyone else can reach: a memory file (``memfd_create``) that only this
process and its children can open, written alongside the user's ``--jsonl``
file.  A driver that fills the disk loses none of it; a ``--jsonl`` file
changed under the harness is found (``tampered``: its bytes against the
length and CRC-32 of what was written) and is a run error, never rendered.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from vts.report.header import clean_header, with_clean_options
from vts.report.sanitize import clean_result, clean_value
from vts.report.verbatim import EMPTY, StreamFingerprint
from vts.results import RESULTS_SCHEMA_VERSION, CaseResult, summarize

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def case_line(result: CaseResult) -> str:
    """The stream's line for ``result``: bounded and XML-safe (``clean_result``), compact, newline-ended.

    ``-j`` workers encode their results with it, so the parent can append their lines as they come
    (``vts.report.batch``); the same bytes either way.
    """
    return _ENCODE({"case": clean_result(result).to_json()}) + "\n"


class StreamError(ValueError):
    """A results stream that cannot be read (names the file and line)."""

    #: What was wrong with the line, without where it is (``unreadable_case``).
    why = ""


class ResultStream:
    """Writes the JSON-lines stream (to ``path``, or a private temporary file), or only counts.

    The user's stream (``path``) is flushed line by line: it must survive a
    kill.  A temporary one only feeds the reports rendered at ``finish``
    (which a kill prevents anyway), so it is written through the file's
    buffer; and with ``write=False`` (no report asked at all) nothing is
    written, only the verdicts counted for the summary and the exit status.
    """

    def __init__(self, path: str | None, header: dict[str, Any], write: bool = True,
                 keep_going: bool = False, footer: dict[str, Any] | None = None) -> None:
        self._file: IO[str] | None = None
        #: Footer fields that replace the stream's own (``nnvts merge``: the shards' summed duration).
        self._footer = dict(footer or {})
        #: ``(path, error)`` of every write that failed (a full disk): the file named is incomplete.
        self.failures: list[tuple[str, OSError]] = []
        #: Whether the stream must go on elsewhere when the user's file cannot be written (reports are
        #: rendered from it): in a private temporary file, which ``path`` then names.
        self._keep_going = keep_going
        #: The harness's own record of the stream, which the reports are rendered from (``render_path``).
        self._record: IO[bytes] | None = None
        if path is None:
            self.temporary = True
            if write:
                self._record = _memory_file()
        else:
            self.temporary = False
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
        self.path = path or ""
        if path is not None:
            self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in finish()
            if keep_going:
                self._record = _memory_file()
        self._flush = not self.temporary
        #: What was written, for ``fingerprint``: kept only when reports are rendered from the stream
        #: (``keep_going``); None once a write failed.
        self._written: StreamFingerprint | None = EMPTY if keep_going else None
        self.counts: dict[str, int] = {}
        #: Bytes written to the file so far.
        self._size = 0
        #: Length and CRC-32 of every byte meant for the user's file, for ``tampered``.
        self._checked = EMPTY
        self._started = time.monotonic()
        self._closed = False
        # Driver options bounded: a header re-written by ``nnvts report`` / ``merge`` comes from another file.
        self._write({"nnvts_results": RESULTS_SCHEMA_VERSION, **with_clean_options(header)})

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is not None or self._record is not None:
            self._write_text(_ENCODE(record) + "\n")

    def _write_text(self, text: str, data: bytes | None = None) -> None:
        """Write whole lines (``data``: their bytes, when the caller has them).

        The stream's own encoder escapes every character beyond ASCII, so a line's length is its size.
        """
        if self._file is None and self._record is None:
            return
        data = data if data is not None else text.encode("utf-8")
        if self._record is not None:
            self._record.write(data)
        if self._file is not None:
            try:
                self._file.write(text)
                if self._flush:
                    self._file.flush()
            except OSError as error:
                self._lost(error)
            else:
                self._size += len(data)
        if self._written is not None:
            self._written = self._written.after(data)
        self._checked = self._checked.after(data)

    def _lost(self, error: OSError) -> None:
        """The user's file cannot be written (a full disk): say which; the record goes on (reports need it)."""
        self.failures.append((self.path, error))
        failed, self._file = self._file, None
        _close_quietly(failed)

    @property
    def render_path(self) -> str:
        """What the reports are rendered from: the harness's record (``/proc/PID/fd/N``, which this process
        and its children can open), else the user's file; empty when nothing was written."""
        if self._record is not None:
            return f"/proc/{os.getpid()}/fd/{self._record.fileno()}"
        return self.path

    def tampered(self) -> str | None:
        """Why the user's stream is not what this run wrote (None: it is, or it was never whole anyway)."""
        if self.temporary or not self.path or any(path == self.path for path, _ in self.failures):
            return None
        try:
            with open(self.path, "rb") as handle:
                seen = EMPTY
                while chunk := handle.read(1 << 20):
                    seen = seen.after(chunk)
        except OSError as error:
            return f"{self.path} cannot be read back: {error.strerror or error}"
        if seen != self._checked:
            return (f"{self.path} changed under the harness ({seen.length} bytes, not the {self._checked.length} "
                    "it wrote)")
        return None

    def add(self, result: CaseResult) -> None:
        """Record one result, bounded and XML-safe (a driver's 50 MB message must not reach every report)."""
        self.counts[result.verdict.value] = self.counts.get(result.verdict.value, 0) + 1
        if self._file is not None or self._record is not None:
            self._write_text(case_line(result))

    def add_lines(self, data: bytes, counts: dict[str, int]) -> None:
        """Record results a ``-j`` worker already encoded with ``case_line`` (``counts``: per verdict)."""
        for value, count in counts.items():
            self.counts[value] = self.counts.get(value, 0) + count
        if (self._file is not None or self._record is not None) and data:
            self._write_text(data.decode("utf-8"), data)

    def finish(self, interrupted: bool) -> None:
        if self._closed:
            return
        self._closed = True
        if self._file is None and self._record is None:
            return
        self._write({"summary": self.summary(), "interrupted": interrupted,
                     "duration": round(time.monotonic() - self._started, 3),
                     "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                     **self._footer})
        if self._file is not None:
            try:
                self._file.close()
            except OSError as error:
                self.failures.append((self.path, error))
                _close_quietly(self._file)
            self._file = None
        if self._record is not None:
            self._record.flush()

    def fingerprint(self) -> StreamFingerprint | None:
        """Length and CRC-32 of what this stream wrote, for copying its cases into the JSON report
        (``vts.report.verbatim``); None when a write failed (the file then holds something else) or no
        report is rendered from it."""
        return self._written

    def summary(self) -> dict[str, int]:
        base = summarize([])
        base.update(self.counts)
        base["total"] = sum(self.counts.values())
        return base

    def discard(self) -> None:
        """Let the harness's record go (the reports are rendered)."""
        record, self._record = self._record, None
        if record is not None:
            record.close()


def _memory_file() -> IO[bytes]:
    """A file in memory only this process (and its children, by ``/proc/PID/fd``) can open: no disk to fill,
    no name in any folder a driver could find."""
    return open(os.memfd_create("nnvts-results", os.MFD_CLOEXEC), "w+b")  # closed in discard()


def _close_quietly(file: IO[str] | None) -> None:
    """Close a file whose buffer cannot be written (the close fails too, the descriptor is released)."""
    if file is None:
        return
    with contextlib.suppress(OSError):
        file.close()  # a buffered file closes its descriptor even when the last flush fails


#: A function applied to every result read (e.g. to add ``extra["baseline"]`` when re-rendering).
Annotate = Callable[[CaseResult], CaseResult]


def read_stream(path: str, annotate: Annotate | None = None
                ) -> tuple[dict[str, Any], Iterator[CaseResult], dict[str, Any] | None]:
    """(header, results, footer) of a stream; tolerates a torn last line and a missing footer.

    Results are read lazily, one line at a time: a validation sweep's stream
    holds a million records and must never be loaded whole.  Each result is
    bounded and XML-safe (``vts.report.sanitize``) whatever wrote the stream.
    """
    with open(path, encoding="utf-8", errors="replace") as handle:
        header = _parse(handle.readline()) or {}
    if "nnvts_results" not in header:
        header = {}
    footer = _footer(path)
    cases = _iter_cases(path) if annotate is None else (clean_result(annotate(r)) for r in _iter_cases(path))
    return clean_header(header), cases, clean_value(footer) if footer is not None else None


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None  # a line torn by a kill
    return record if isinstance(record, dict) else None


def _iter_cases(path: str) -> Iterator[CaseResult]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        yield from CaseLines(path, handle)


def unreadable_case(path: str, number: int, why: object) -> StreamError:
    error = StreamError(f"{path}:{number}: not a case record this nnvts can read ({why})")
    error.why = str(why)
    return error


class CaseLines:
    """The results of a stream's lines (all of them, or a part's), cleaned, in order.

    Everything before a torn line is valid and nothing after it is trusted: the results end there and
    ``torn`` says so.  ``lines`` counts the lines read.  A case record this nnvts cannot read raises
    ``StreamError`` naming its line among those given (``vts.report.parts`` offsets a part's).
    """

    def __init__(self, path: str, lines: Iterable[str]) -> None:
        self.path = path
        self._lines = lines
        self.lines = 0
        self.torn = False

    def __iter__(self) -> Iterator[CaseResult]:
        for text in self._lines:
            self.lines += 1
            record = _parse(text)
            if record is None:
                self.torn = True
                return
            if "case" in record:
                try:
                    result = CaseResult.from_json(record["case"])
                except (KeyError, TypeError, ValueError) as error:
                    raise unreadable_case(self.path, self.lines, error) from None
                yield clean_result(result)  # the stream may come from elsewhere (a merge, an older nnvts)


def _footer(path: str) -> dict[str, Any] | None:
    """The summary record, read from the end of the file without reading the rest."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 65536))
        tail = handle.read().decode("utf-8", errors="replace").splitlines()
    record = _parse(tail[-1]) if tail else None
    return record if record is not None and "summary" in record else None
