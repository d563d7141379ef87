"""A large stream's HTML and JUnit reports rendered on several cores: each process reads one part of it.

The reports are the last thing a run does.  Rendered in one process each,
the HTML and JUnit reports of the whole corpus (900k cases) took 23 s and
20 s of one core, most of it decoding the same lines twice, while every
other core idled: the serial part of a run on many cores.  Here the stream
is cut at line boundaries into parts of at least ``PART_BYTES``, one per
usable core; each part is read once, by a process of its own that feeds
both reports' partial forms (``HtmlReport.export``, ``JunitReport.export``:
a digest, case lists and testcase files on disk), and this process merges
them in order (``HtmlReport.merged``, ``JunitReport.merged``).

The files are the same, byte for byte, as one process fed every case would
write:

* a part is read as the whole stream is (``vts.report.stream.CaseLines``):
  a torn line ends the results, so the parts after the first torn one are
  dropped; a case record that cannot be read is named by its line in the
  whole stream;
* JUnit's testcases are concatenated per family in stream order, and its
  counts summed;
* the HTML digest merges exactly unless a part had to pool grid cells or
  failure reasons itself (more than its caps in one part: a hostile or
  enormous stream); the HTML report is then rendered here the serial way.

A part's process that dies or cannot start leaves both reports to this
process, rendered the serial way: every report is still written.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import BinaryIO

from vts.report.html import HtmlPart, HtmlReport
from vts.report.junit import JunitPart, JunitReport
from vts.report.stream import CaseLines, StreamError, unreadable_case

#: The smallest part worth a process of its own (its start costs about a third of a second).
PART_BYTES = 8 << 20
#: Bytes read at a time looking for the end of a line.
_SCAN = 1 << 16


def part_count(size: int) -> int:
    """Parts for a stream of ``size`` bytes: one per usable core, each at least ``PART_BYTES``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, -(-size // PART_BYTES)))


def line_ranges(path: str, count: int) -> list[tuple[int, int]]:
    """``count`` (or fewer) consecutive byte ranges covering the file, each starting at a line's start.

    A range boundary comes right after a ``\\n``, so the lines (in universal-newline text mode, which
    also ends a line at ``\\r``) and the UTF-8 decoding of each range are those of the whole file.
    """
    size = os.path.getsize(path)
    starts = [0]
    with open(path, "rb") as handle:
        for index in range(1, count):
            start = _line_start(handle, max(size * index // count, starts[-1] + 1) - 1, size)
            if start >= size:
                break
            if start > starts[-1]:
                starts.append(start)
    return list(zip(starts, [*starts[1:], size], strict=True))


def _line_start(handle: BinaryIO, at: int, size: int) -> int:
    """The offset just after the first ``\\n`` at or after ``at`` (``size`` if none), read in bounded blocks."""
    handle.seek(at)
    while True:
        block = handle.read(_SCAN)
        if not block:
            return size
        found = block.find(b"\n")
        if found >= 0:
            return at + found + 1
        at += len(block)


class _Range(io.RawIOBase):
    """Bytes ``[start, end)`` of a file, read as a file of their own."""

    def __init__(self, handle: BinaryIO, start: int, end: int) -> None:
        super().__init__()
        self._handle = handle
        handle.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._left)
        if want <= 0:
            return 0
        got = self._handle.readinto(memoryview(buffer)[:want])  # type: ignore[attr-defined]
        self._left -= got or 0
        return got or 0


@dataclass
class PartResult:
    """What a part's process sends back: how its lines read, and each report's partial form."""

    lines: int = 0
    #: The part ended in a torn line: the stream's results end there.
    torn: bool = False
    #: (line within the part, why) of a case record that could not be read.
    unreadable: tuple[int, str] | None = None
    html: HtmlPart | None = None
    junit: JunitPart | None = None
    #: Reports whose part could not be written (a full disk), with why.
    failures: dict[str, OSError] = field(default_factory=dict)


def render_part(path: str, start: int, end: int, kinds: tuple[str, ...], scratch: str) -> PartResult:
    """Read the lines in bytes ``[start, end)`` of the stream once, feeding the partial form of each report
    of ``kinds`` ("html", "junit"), whose files go to ``scratch`` (a directory of this part's own)."""
    live: dict[str, HtmlReport | JunitReport] = {}
    if "html" in kinds:
        live["html"] = HtmlReport("", {}, None, False, scratch=scratch)
    if "junit" in kinds:
        live["junit"] = JunitReport("", {}, None, False, scratch=scratch)
    outcome = PartResult()
    with open(path, "rb") as raw:
        text = io.TextIOWrapper(io.BufferedReader(_Range(raw, start, end)), encoding="utf-8", errors="replace")
        reader = CaseLines(path, text)
        try:
            for result in reader:
                for kind, report in list(live.items()):
                    try:
                        report.add(result)
                    except OSError as error:  # this report's part cannot be written: the other goes on
                        outcome.failures[kind] = error
                        del live[kind]
                        report.discard()
        except StreamError as error:
            outcome.unreadable = (reader.lines, error.why)
    outcome.lines, outcome.torn = reader.lines, reader.torn
    for kind, report in live.items():
        try:
            setattr(outcome, kind, report.export())
        except OSError as error:
            outcome.failures[kind] = error
    return outcome


def results_in_order(path: str, parts: list[PartResult]) -> list[PartResult]:
    """The parts whose results the stream holds, in order: up to the first that ended in a torn line.

    A case record that cannot be read, before any torn line, raises ``StreamError`` naming its line in
    the whole stream, as reading it whole would.
    """
    kept: list[PartResult] = []
    before = 0
    for part in parts:
        if part.unreadable is not None:
            number, why = part.unreadable
            raise unreadable_case(path, before + number, why)
        kept.append(part)
        if part.torn:
            break
        before += part.lines
    return kept
