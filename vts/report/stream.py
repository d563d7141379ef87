"""The results stream: JSON lines, one per case, flushed as each case ends.

It is the report that survives anything: a harness killed mid-run leaves a
file whose complete lines are all valid records (a reader drops a torn last
line).  The first line is a header (``{"nnvts_results": 1, ...}``), the last
a footer with the summary, absent when the run was killed.  The JSON and
JUnit reports are rendered from this stream at the end of the run.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from vts.results import RESULTS_SCHEMA_VERSION, CaseResult, summarize


class ResultStream:
    """Writes the JSON-lines stream (to ``path``, or a private temporary file)."""

    def __init__(self, path: str | None, header: dict[str, Any]) -> None:
        if path is None:
            handle, path = tempfile.mkstemp(prefix="nnvts-results-", suffix=".jsonl")
            os.close(handle)
            self.temporary = True
        else:
            self.temporary = False
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
        self.path = path
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in finish()
        self.counts: dict[str, int] = {}
        self._write({"nnvts_results": RESULTS_SCHEMA_VERSION, **header})

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()

    def add(self, result: CaseResult) -> None:
        self.counts[result.verdict.value] = self.counts.get(result.verdict.value, 0) + 1
        self._write({"case": result.to_json()})

    def finish(self, interrupted: bool) -> None:
        if self._file.closed:
            return
        self._write({"summary": self.summary(), "interrupted": interrupted})
        self._file.close()

    def summary(self) -> dict[str, int]:
        base = summarize([])
        base.update(self.counts)
        base["total"] = sum(self.counts.values())
        return base

    def discard(self) -> None:
        if self.temporary and os.path.exists(self.path):
            os.unlink(self.path)


def read_stream(path: str) -> tuple[dict[str, Any], Iterator[CaseResult], dict[str, Any] | None]:
    """(header, results, footer) of a stream; tolerates a torn last line and a missing footer.

    Results are read lazily, one line at a time: a validation sweep's stream
    holds a million records and must never be loaded whole.
    """
    with open(path, encoding="utf-8") as handle:
        header = _parse(handle.readline()) or {}
    if "nnvts_results" not in header:
        header = {}
    return header, _iter_cases(path), _footer(path)


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None  # a line torn by a kill
    return record if isinstance(record, dict) else None


def _iter_cases(path: str) -> Iterator[CaseResult]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = _parse(line)
            if record is None:
                return  # everything before a torn line is valid; nothing after it is trusted
            if "case" in record:
                yield CaseResult.from_json(record["case"])


def _footer(path: str) -> dict[str, Any] | None:
    """The summary record, read from the end of the file without reading the rest."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 65536))
        tail = handle.read().decode("utf-8", errors="replace").splitlines()
    record = _parse(tail[-1]) if tail else None
    return record if record is not None and "summary" in record else None
