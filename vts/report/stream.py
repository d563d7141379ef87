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
    """(header, results, footer) of a stream; tolerates a torn last line and a missing footer."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line torn by a kill: everything before it is valid
    header = records[0] if records and "nnvts_results" in records[0] else {}
    footer = records[-1] if records and "summary" in records[-1] else None
    cases = (CaseResult.from_json(r["case"]) for r in records if "case" in r)
    return header, cases, footer
