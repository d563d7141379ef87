"""Reading a previous run's results: a JSON-lines stream (``--jsonl``) or a JSON report (``--json``).

Baselines, ``--last-failed``, duration-balanced shards, ``nnvts merge`` and
``nnvts report`` all start from a results file somebody else wrote, maybe
on another machine, maybe cut short by a kill.  This module is the one
strict reader of both formats: a torn *last* line of a stream is what a
killed run leaves and is dropped (the file is then ``complete=False``);
anything else malformed is a ``ResultsFileError`` naming the file and line,
which the CLI turns into exit status 2, so bad input is never half-read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from vts.results import CaseResult


class ResultsFileError(ValueError):
    """A results file that cannot be read (usage error: exit status 2)."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


@dataclass
class ResultsMeta:
    """What a results file says about itself, besides its cases."""

    path: str
    header: dict[str, Any] = field(default_factory=dict)
    #: The footer record (summary, interrupted) of a stream, or the report's top level.
    footer: dict[str, Any] | None = None
    #: False when a stream has no footer (the run was killed) or ended in a torn line.
    complete: bool = True
    #: The run said it was interrupted (Ctrl-C, SIGTERM) before it ended.
    interrupted: bool = False


def is_stream(path: str) -> bool:
    """A stream's first line is a complete JSON header; a JSON report's first line is ``{`` (or all of it)."""
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
    except OSError as error:
        raise ResultsFileError(path, None, error.strerror or str(error)) from None
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return False
    # A JSON report written on one line also parses; it is the one with the cases in it.
    return isinstance(record, dict) and "nnvts_results" in record and "cases" not in record


def read_results(path: str) -> tuple[ResultsMeta, Iterator[CaseResult]]:
    """(meta, results) of either format; the stream's results are read lazily.

    ``meta.complete`` of a stream is only final once the iterator is
    exhausted (a torn line is only found by reading up to it).
    """
    if is_stream(path):
        meta = ResultsMeta(path)
        return meta, _iter_stream(path, meta)
    return _read_report(path)


def _iter_stream(path: str, meta: ResultsMeta) -> Iterator[CaseResult]:
    meta.complete = False
    with open(path, encoding="utf-8") as handle:
        lines = iter(enumerate(handle, start=1))
        pending: tuple[int, str] | None = None
        for number, line in lines:
            if pending is not None:
                # The previous line did not parse and was not the last one: not a kill, a broken file.
                raise ResultsFileError(path, pending[0], f"not a JSON record: {pending[1][:60]!r}")
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                pending = (number, line)
                continue
            if not isinstance(record, dict):
                raise ResultsFileError(path, number, "expected a JSON object")
            if number == 1:
                if "nnvts_results" not in record:
                    raise ResultsFileError(path, 1, "not an nnvts results stream (no nnvts_results header)")
                meta.header = record
            elif "case" in record:
                yield _case(path, number, record["case"])
            elif "summary" in record:
                meta.footer = record
                meta.interrupted = bool(record.get("interrupted"))
            else:
                raise ResultsFileError(path, number, f"unknown record with keys {sorted(record)}")
        # A torn last line is what a SIGKILL leaves: everything before it is valid.
        meta.complete = pending is None and meta.footer is not None


def _read_report(path: str) -> tuple[ResultsMeta, Iterator[CaseResult]]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except json.JSONDecodeError as error:
        raise ResultsFileError(path, error.lineno, f"neither a results stream nor a JSON report: {error.msg}") from None
    if not isinstance(document, dict) or "cases" not in document or not isinstance(document["cases"], list):
        raise ResultsFileError(path, None, "not an nnvts JSON report (no \"cases\" list)")
    header = {k: v for k, v in document.items() if k not in ("cases", "summary", "interrupted")}
    interrupted = bool(document.get("interrupted"))
    meta = ResultsMeta(path, header, {"summary": document.get("summary"), "interrupted": interrupted},
                       complete=True, interrupted=interrupted)
    cases = document["cases"]
    return meta, (_case(path, None, data, index) for index, data in enumerate(cases))


def _case(path: str, line: int | None, data: Any, index: int | None = None) -> CaseResult:
    try:
        return CaseResult.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        what = f"case {index}: " if index is not None else ""
        raise ResultsFileError(path, line, f"{what}malformed case record ({type(error).__name__}: {error})") from None


def iter_results(path: str) -> Iterator[CaseResult]:
    """Just the results, in file order."""
    return read_results(path)[1]
