"""Reading a previous run's results: a JSON-lines stream (``--jsonl``) or a JSON report (``--json``).

Baselines, ``--last-failed``, duration-balanced shards, ``nnvts merge`` and
``nnvts report`` all start from a results file somebody else wrote, maybe
on another machine, maybe cut short by a kill.  This module is the one
strict reader of both formats: a torn *last* line of a stream is what a
killed run leaves and is dropped (the file is then ``complete=False``);
anything else malformed is a ``ResultsFileError`` naming the file and line,
which the CLI turns into exit status 2, so bad input is never half-read.

Results files are untrusted like specs: every line is read with a bounded
``readline``, must be UTF-8 and nest at most ``MAX_RESULTS_DEPTH`` deep;
a whole document (JSON report, durations file) is bounded in bytes
(``vts.bounds``).  Anything beyond is a ``ResultsFileError`` naming the
file, the line and the bound, never a RecursionError or a decode traceback.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from vts.bounds import MAX_RESULTS_DEPTH, MAX_RESULTS_DOCUMENT, MAX_RESULTS_LINE, describe_bytes, shown
from vts.results import CaseResult

#: The characters that open or close a JSON array or object, and strings (whose brackets do not count).
_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class ResultsFileError(ValueError):
    """A results file that cannot be read (usage error: exit status 2)."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(shown(f"{where}: {message}"))  # one line, whatever the file's name or contents
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


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as error:
        raise ResultsFileError(path, None, error.strerror or str(error)) from None


def _decode(path: str, line: int | None, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = "line" if line is not None else "file"
        bad = data[error.start:error.start + 1]
        raise ResultsFileError(path, line, f"not UTF-8 text (byte {error.start} of the {where}: {bad!r})") from None


def _check_depth(path: str, line: int | None, text: str) -> None:
    """Refuse JSON nested deeper than MAX_RESULTS_DEPTH before the decoder recurses into it."""
    if text.count("[") + text.count("{") <= MAX_RESULTS_DEPTH:
        return
    depth = 0
    for match in _NESTING.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_RESULTS_DEPTH:
                raise ResultsFileError(path, line, f"JSON nested more than {MAX_RESULTS_DEPTH} levels deep")
        elif token in "]}":
            depth -= 1


def _loads(path: str, line: int | None, text: str) -> Any:
    _check_depth(path, line, text)
    try:
        return json.loads(text)
    except RecursionError:  # a bound of its own, should the scan above miss a way to nest
        raise ResultsFileError(path, line, "JSON nested too deep") from None


def _lines(path: str, handle: Any) -> Iterator[tuple[int, str]]:
    """(number, text) of each line, each read with a bounded readline: a 10 GiB line costs 4 MiB."""
    number = 0
    while True:
        data = handle.readline(MAX_RESULTS_LINE + 1)
        if not data:
            return
        number += 1
        if len(data) > MAX_RESULTS_LINE:
            raise ResultsFileError(path, number, f"line longer than {describe_bytes(MAX_RESULTS_LINE)}")
        yield number, _decode(path, number, data)


def load_document(path: str, what: str, malformed: str | None = None) -> Any:
    """The one JSON value of a whole file (a JSON report, a durations file), bounded in size and depth."""
    with _open(path) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
        except OSError as error:
            raise ResultsFileError(path, None, error.strerror or str(error)) from None
        if size > MAX_RESULTS_DOCUMENT:
            raise ResultsFileError(path, None, f"{what} larger than {describe_bytes(MAX_RESULTS_DOCUMENT)}")
        data = handle.read(MAX_RESULTS_DOCUMENT + 1)
    if len(data) > MAX_RESULTS_DOCUMENT:
        raise ResultsFileError(path, None, f"{what} larger than {describe_bytes(MAX_RESULTS_DOCUMENT)}")
    text = _decode(path, None, data)
    try:
        return _loads(path, None, text)
    except json.JSONDecodeError as error:
        raise ResultsFileError(path, error.lineno, f"{malformed or 'malformed ' + what}: {error.msg}") from None


def is_stream(path: str) -> bool:
    """A stream's first line is a complete JSON header; a JSON report's first line is ``{`` (or all of it)."""
    with _open(path) as handle:
        first = handle.readline(MAX_RESULTS_LINE + 1)
    if len(first) > MAX_RESULTS_LINE:
        return False  # not a stream's header; the report reader applies its own bound
    try:
        record = _loads(path, 1, _decode(path, 1, first))
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
    with _open(path) as handle:
        pending: tuple[int, str] | None = None
        for number, line in _lines(path, handle):
            if pending is not None:
                # The previous line did not parse and was not the last one: not a kill, a broken file.
                raise ResultsFileError(path, pending[0], f"not a JSON record: {pending[1][:60]!r}")
            try:
                record = _loads(path, number, line)
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
    document = load_document(path, "results file", malformed="neither a results stream nor a JSON report")
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
