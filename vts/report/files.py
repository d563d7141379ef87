"""JSON and JUnit XML reports, rendered from the results stream and written atomically.

Both are written to a temporary file beside the target and renamed into
place, so a reader never sees half a report; an interrupted run still gets
complete reports of the cases that ran (with ``interrupted: true``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import IO, Any
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from vts.report.stream import ResultStream, read_stream
from vts.results import CaseResult, Verdict


def _atomic_write(path: str, render: Callable[[IO[str]], None]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".nnvts-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            render(out)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_report(stream_path: str, path: str, interrupted: bool) -> None:
    """``{"nnvts_results", "driver", "summary", "interrupted", "cases": [...]}`` (stable keys)."""
    header, cases, footer = read_stream(stream_path)

    def render(out: IO[str]) -> None:
        summary = footer["summary"] if footer else None
        meta = {k: v for k, v in header.items()}
        out.write("{\n")
        for key, value in meta.items():
            out.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
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

    _atomic_write(path, render)


_JUNIT_FAILURE = {Verdict.FAILED, Verdict.XPASS, Verdict.UNREPRODUCED_CRASH}
_JUNIT_ERROR = {Verdict.ERROR, Verdict.CRASH, Verdict.TIMEOUT}


def write_junit_report(stream_path: str, path: str, suite_name: str = "nnvts") -> None:
    """One ``<testsuite>`` per family; failures carry the reason and the comparison detail.

    Streams: each family's test cases go to a temporary file in one pass
    over the results, then the suites are assembled behind their counts, so
    a million-case sweep never sits in memory.
    """
    _, cases, footer = read_stream(stream_path)
    interrupted = bool(footer and footer.get("interrupted"))  # SIGINT/SIGTERM/SIGHUP: marked in every suite
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    with tempfile.TemporaryDirectory(prefix="nnvts-junit-") as scratch:
        parts: dict[str, IO[str]] = {}
        try:
            for case in cases:
                part = parts.get(case.family)
                if part is None:
                    part = parts[case.family] = open(  # noqa: SIM115 - closed in finally
                        os.path.join(scratch, f"{len(parts)}.xml"), "w+", encoding="utf-8")
                part.write(_testcase(case))
                tally = counts[case.family]
                tally["tests"] += 1
                tally["failures"] += case.verdict in _JUNIT_FAILURE
                tally["errors"] += case.verdict in _JUNIT_ERROR
                tally["skipped"] += case.verdict in (Verdict.SKIPPED, Verdict.XFAIL)
                tally["time_us"] += int(case.duration * 1e6)

            def render(out: IO[str]) -> None:
                total = sum(c["tests"] for c in counts.values())
                out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
                out.write(f"<testsuites name={quoteattr(suite_name)} tests=\"{total}\">\n")
                for family in sorted(parts):
                    c = counts[family]
                    out.write(f"  <testsuite name={quoteattr(family)} tests=\"{c['tests']}\" "
                              f"failures=\"{c['failures']}\" errors=\"{c['errors']}\" skipped=\"{c['skipped']}\" "
                              f"time=\"{c['time_us'] / 1e6:.3f}\">\n")
                    if interrupted:
                        out.write(_INTERRUPTED_PROPERTY)
                    part = parts[family]
                    part.seek(0)
                    shutil.copyfileobj(part, out)
                    out.write("  </testsuite>\n")
                if interrupted and not parts:  # no case ran: still say so
                    out.write(f'  <testsuite name="nnvts" tests="0" failures="0" errors="0" skipped="0" time="0">\n'
                              f"{_INTERRUPTED_PROPERTY}  </testsuite>\n")
                out.write("</testsuites>\n")

            _atomic_write(path, render)
        finally:
            for part in parts.values():
                part.close()


#: Marks each suite of an interrupted run (SIGINT, SIGTERM, SIGHUP): the cases listed are not all there were.
_INTERRUPTED_PROPERTY = '    <properties><property name="nnvts.interrupted" value="true"/></properties>\n'


def _testcase(result: CaseResult) -> str:
    classname = f"{result.family}.{result.name.split('/')[-1].split('.')[0]}"
    head = (f"    <testcase classname={quoteattr(classname)} name={quoteattr(result.name)} "
            f"time=\"{result.duration:.4f}\"")
    body = xml_escape("\n".join(result.details))
    message = quoteattr(result.reason)
    if result.verdict in _JUNIT_FAILURE:
        return f"{head}>\n      <failure message={message}>{body}</failure>\n    </testcase>\n"
    if result.verdict in _JUNIT_ERROR:
        return (f"{head}>\n      <error message={message} type={quoteattr(result.verdict.value)}>{body}</error>\n"
                "    </testcase>\n")
    if result.verdict in (Verdict.SKIPPED, Verdict.XFAIL):
        return f"{head}>\n      <skipped message={message}/>\n    </testcase>\n"
    return f"{head}/>\n"


class FileReports:
    """Sink: the JSON-lines stream, then JSON and JUnit reports at the end."""

    def __init__(self, header: dict[str, Any], jsonl: str | None = None, json_path: str | None = None,
                 junit: str | None = None, html_path: str | None = None) -> None:
        self.stream = ResultStream(jsonl, header)
        self.json_path = json_path
        self.junit = junit
        self.html_path = html_path

    def add(self, result: CaseResult) -> None:
        self.stream.add(result)

    def finish(self, interrupted: bool) -> None:
        self.stream.finish(interrupted)
        if self.json_path:
            write_json_report(self.stream.path, self.json_path, interrupted)
        if self.junit:
            write_junit_report(self.stream.path, self.junit)
        if self.html_path:
            from vts.report.html import write_html_report

            write_html_report(self.stream.path, self.html_path)
        self.stream.discard()
