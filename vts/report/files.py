"""The file reports (JSON, JUnit, HTML), all rendered from the results stream; the library entry point.

The stream is the one record of a run; every other file is a rendering of
it, written atomically at the end (also after Ctrl-C, then marked
interrupted).  ``render_reports`` is what ``nnvts run``, ``nnvts report``
(re-rendering a kept stream) and ``nnvts merge`` call.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import IO, Any

from vts.report.output import atomic_write
from vts.report.stream import Annotate, ResultStream, read_stream
from vts.results import CaseResult, Verdict


def write_json_report(stream_path: str, path: str, interrupted: bool | None = None,
        annotate: Annotate | None = None) -> None:
    """``{"nnvts_results", "driver", ..., "interrupted", "cases": [...], "summary"}`` (stable keys)."""
    header, cases, footer = read_stream(stream_path, annotate)
    if interrupted is None:
        interrupted = bool(footer.get("interrupted")) if footer else False

    def render(out: IO[str]) -> None:
        summary = footer["summary"] if footer else None
        out.write("{\n")
        for key, value in header.items():
            out.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        if footer and "duration" in footer:
            out.write(f'  "duration": {json.dumps(footer["duration"])},\n')
        out.write(f'  "interrupted": {json.dumps(interrupted)},\n')
        out.write('  "cases": [')
        counts: dict[str, int] = defaultdict(int)
        first = True
        for case in cases:
            counts[case.verdict.value] += 1
            out.write(("\n    " if first else ",\n    ") + json.dumps(case.to_json()))
            first = False
        out.write("\n  ],\n")
        if summary is None:
            summary = {v.value: counts.get(v.value, 0) for v in Verdict}
            summary["total"] = sum(counts.values())
        out.write(f'  "summary": {json.dumps(summary)}\n}}\n')

    atomic_write(path, render)


def render_reports(stream_path: str, *, json: str | None = None, junit: str | None = None,
                   html: str | None = None, interrupted: bool | None = None,
                   annotate: Annotate | None = None) -> list[tuple[str, str]]:
    """Render each requested report from a results stream; returns ``[(kind, path), ...]`` written.

    ``interrupted`` overrides what the stream's footer says (None: trust the
    stream; a stream without a footer is reported as incomplete).  Baseline
    and flaky information is read from each result's ``extra`` ("baseline",
    "attempts"), so a stream annotated by ``nnvts merge`` or a baseline
    comparison renders with it; ``annotate`` maps every result as it is
    read (e.g. adds ``extra["baseline"]`` when re-rendering against a
    baseline), consistently in every report and every pass.
    """
    from vts.report.html import write_html_report
    from vts.report.junit import write_junit_report

    written: list[tuple[str, str]] = []
    if json:
        write_json_report(stream_path, json, interrupted, annotate)
        written.append(("json", json))
    if junit:
        write_junit_report(stream_path, junit, interrupted, annotate=annotate)
        written.append(("junit", junit))
    if html:
        write_html_report(stream_path, html, interrupted, annotate)
        written.append(("html", html))
    return written


class FileReports:
    """Sink: the JSON-lines stream while running, then the JSON, JUnit and HTML reports at the end."""

    def __init__(self, header: dict[str, Any], jsonl: str | None = None, json_path: str | None = None,
                 junit: str | None = None, html_path: str | None = None) -> None:
        self.stream = ResultStream(jsonl, header)
        self.json_path = json_path
        self.junit = junit
        self.html_path = html_path
        #: ``(kind, path)`` of every file written, the stream included (for the closing summary).
        self.written: list[tuple[str, str]] = []

    def add(self, result: CaseResult) -> None:
        self.stream.add(result)

    def finish(self, interrupted: bool) -> None:
        self.stream.finish(interrupted)
        try:
            self.written = render_reports(self.stream.path, json=self.json_path, junit=self.junit,
                                          html=self.html_path, interrupted=interrupted)
        finally:
            if not self.stream.temporary:
                self.written.insert(0, ("jsonl", self.stream.path))
            self.stream.discard()
