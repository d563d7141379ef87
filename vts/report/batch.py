"""Results that reach the ``-j`` parent together, prepared by the worker that ran them.

The parent of a ``-j`` run is one process for every worker's results: at
about 70 µs a result (decode, rebuild, clean, encode, count), a corpus of
900k results needed a minute of one core, the whole budget of a 16-core
run.  Most of those results are plain passes that the parent only writes
to the stream and counts.  So a worker that runs no driver code (its
driver is out of process) does that work itself, on its own core:

* each result becomes the exact line the stream would write for it
  (``vts.report.stream.case_line``: cleaned, compact), so the parent
  appends a batch's lines to the stream with one write;
* the *plain* results of a batch (``is_plain``: not failing, not flaky,
  nothing in ``extra``: all a summary needs is their count, family, labels
  and duration) are tallied (``PlainTally``), so the terminal merges one
  tally per batch instead of 256 results;
* every other result travels as its line too, and the parent decodes it
  and hands it to each sink as before: failures keep their full detail.

A sink that cannot take a batch as a whole (a baseline comparison needs
every result) gets each result decoded from its line: ``ResultBatch.results``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from vts.report.digest import grid_key, keep_slowest
from vts.results import CaseResult, Verdict


def is_plain(result: CaseResult) -> bool:
    """Whether a summary needs nothing of ``result`` beyond its verdict, family, labels and duration."""
    return not result.extra and not result.verdict.is_failure and result.verdict is not Verdict.FLAKY


#: A tally cell: (family, operation label, operand type label, verdict value).
Cell = tuple[str, str, str, str]


@dataclass
class PlainTally:
    """Counts and seconds of plain results by cell, and the slowest of them: a batch, summarized."""

    cells: dict[Cell, list[float]] = field(default_factory=dict)  # cell -> [count, seconds]
    slowest: list[tuple[float, str, str, str]] = field(default_factory=list)  # (seconds, name, family, verdict)
    count: int = 0

    def add(self, result: CaseResult) -> None:
        """Tally a plain result, cleaned (``clean_result``), with its duration as its line rounds it."""
        family, operation, types = grid_key(result)
        value = result.verdict.value
        duration = round(result.duration, 6)
        cell = self.cells.get((family, operation, types, value))
        if cell is None:
            self.cells[(family, operation, types, value)] = [1, duration]
        else:
            cell[0] += 1
            cell[1] += duration
        keep_slowest(self.slowest, (duration, result.name, family, value))
        self.count += 1

    def counts(self) -> dict[str, int]:
        """Results per verdict value."""
        totals: dict[str, int] = {}
        for (_, _, _, value), (count, _) in self.cells.items():
            totals[value] = totals.get(value, 0) + int(count)
        return totals


@dataclass
class ResultBatch:
    """Consecutive results of one worker: their stream lines in order, the plain ones tallied."""

    #: The stream lines of every result, in the order the worker ran them (UTF-8, each ending in a newline).
    text: bytes
    #: The plain results, summarized.
    tally: PlainTally
    #: Every other result, decoded, in order.
    others: list[CaseResult]
    #: Results per verdict value, all of them.
    counts: dict[str, int]
    #: Every line, for ``results``.
    lines: list[bytes] = field(repr=False)

    @classmethod
    def of(cls, lines: Iterable[tuple[bytes, bool]], tally: PlainTally) -> ResultBatch:
        """The batch of ``lines`` ((line, plain) in order) whose plain ones ``tally`` summarizes."""
        kept: list[bytes] = []
        others: list[CaseResult] = []
        counts = tally.counts()
        plain_lines = 0
        for line, plain in lines:
            kept.append(line)
            if plain:
                plain_lines += 1
                continue
            result = decode_line(line)
            others.append(result)
            counts[result.verdict.value] = counts.get(result.verdict.value, 0) + 1
        if plain_lines != tally.count:
            raise ValueError(f"a batch of {plain_lines} plain results came with a tally of {tally.count}")
        return cls(b"".join(kept), tally, others, counts, kept)

    def results(self) -> list[CaseResult]:
        """Every result of the batch, decoded from its line, in order (for a sink that needs each)."""
        return [decode_line(line) for line in self.lines]


def decode_line(line: bytes) -> CaseResult:
    """The result of one stream line (``{"case": {...}}``) a worker wrote."""
    return CaseResult.from_json(json.loads(line)["case"])
