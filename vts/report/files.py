"""The file reports (JSON, JUnit, HTML), all rendered from the results stream; the library entry point.

The stream is the one record of a run; every other file is a rendering of
it, written atomically at the end (also after Ctrl-C, then marked
interrupted).  ``render_reports`` is what ``nnvts run``, ``nnvts report``
(re-rendering a kept stream) and ``nnvts merge`` call.
"""

from __future__ import annotations

import json as _json
from collections import defaultdict
from typing import Any, Protocol

from vts.report.output import AtomicFile
from vts.report.stream import Annotate, ResultStream, read_stream
from vts.results import CaseResult, Verdict


class JsonReport:
    """``{"nnvts_results", "driver", ..., "interrupted", "cases": [...], "summary"}`` (stable keys), streamed."""

    def __init__(self, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool) -> None:
        self.footer = footer
        self.counts: dict[str, int] = defaultdict(int)
        self.target = AtomicFile(path)
        out = self.target.file
        out.write("{\n")
        for key, value in header.items():
            out.write(f"  {_json.dumps(key)}: {_json.dumps(value)},\n")
        if footer and "duration" in footer:
            out.write(f'  "duration": {_json.dumps(footer["duration"])},\n')
        out.write(f'  "interrupted": {_json.dumps(interrupted)},\n')
        out.write('  "cases": [')

    def add(self, case: CaseResult) -> None:
        first = not self.counts
        self.counts[case.verdict.value] += 1
        self.target.file.write(("\n    " if first else ",\n    ") + _json.dumps(case.to_json()))

    def close(self) -> None:
        summary = self.footer["summary"] if self.footer else None
        if summary is None:
            summary = {v.value: self.counts.get(v.value, 0) for v in Verdict}
            summary["total"] = sum(self.counts.values())
        self.target.file.write(f'\n  ],\n  "summary": {_json.dumps(summary)}\n}}\n')
        self.target.commit()

    def discard(self) -> None:
        self.target.discard()


class Renderer(Protocol):
    """One report fed from a single pass over the stream; ``close`` writes it, ``discard`` drops it."""

    def add(self, case: CaseResult) -> None: ...

    def close(self) -> None: ...

    def discard(self) -> None: ...


def render_reports(stream_path: str, *, json: str | None = None, junit: str | None = None,
                   html: str | None = None, interrupted: bool | None = None,
                   annotate: Annotate | None = None) -> list[tuple[str, str]]:
    """Render each requested report from a results stream; returns ``[(kind, path), ...]`` written.

    All of them are fed by one pass over the stream, in bounded memory.
    ``interrupted`` overrides what the stream's footer says (None: trust the
    stream; a stream without a footer is reported as incomplete).  Baseline
    and flaky information is read from each result's ``extra`` ("baseline",
    "attempts"), so a stream annotated by ``nnvts merge`` or a baseline
    comparison renders with it; ``annotate`` maps every result as it is
    read (e.g. adds ``extra["baseline"]`` when re-rendering against a
    baseline), consistently in every report.
    """
    from vts.report.html import HtmlReport
    from vts.report.junit import JunitReport

    header, cases, footer = read_stream(stream_path, annotate)
    if interrupted is None:
        interrupted = bool(footer.get("interrupted")) if footer else False
    wanted = [(kind, path, cls) for kind, path, cls in (("json", json, JsonReport), ("junit", junit, JunitReport),
                                                         ("html", html, HtmlReport)) if path]
    renderers: list[Renderer] = []
    try:
        for _, path, cls in wanted:
            renderers.append(cls(path, header, footer, interrupted))
        for case in cases:
            for renderer in renderers:
                renderer.add(case)
        for renderer in renderers:
            renderer.close()
    except BaseException:
        for renderer in renderers:
            renderer.discard()
        raise
    return [(kind, path) for kind, path, _ in wanted]


def write_json_report(stream_path: str, path: str, interrupted: bool | None = None,
                      annotate: Annotate | None = None) -> None:
    render_reports(stream_path, json=path, interrupted=interrupted, annotate=annotate)


class FileReports:
    """Sink: the JSON-lines stream while running, then the JSON, JUnit and HTML reports at the end."""

    def __init__(self, header: dict[str, Any], jsonl: str | None = None, json_path: str | None = None,
                 junit: str | None = None, html_path: str | None = None) -> None:
        renders = bool(json_path or junit or html_path)
        self.stream = ResultStream(jsonl, header, write=renders or jsonl is not None)
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
            if self.json_path or self.junit or self.html_path:  # else reading the stream back renders nothing
                self.written = render_reports(self.stream.path, json=self.json_path, junit=self.junit,
                                              html=self.html_path, interrupted=interrupted)
        finally:
            if not self.stream.temporary:
                self.written.insert(0, ("jsonl", self.stream.path))
            self.stream.discard()
