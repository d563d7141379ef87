"""The file reports (JSON, JUnit, HTML), all rendered from the results stream; the library entry point.

The stream is the one record of a run; every other file is a rendering of
it, written atomically at the end (also after Ctrl-C, then marked
interrupted).  ``render_reports`` is what ``nnvts run``, ``nnvts report``
(re-rendering a kept stream) and ``nnvts merge`` call.
"""

from __future__ import annotations

import contextlib
import json as _json
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from vts.report.findings import Findings
from vts.report.output import AtomicFile
from vts.report.sanitize import clean_result
from vts.report.stream import Annotate, ResultStream, read_stream
from vts.report.verbatim import StreamChanged, StreamFingerprint, case_texts
from vts.results import CaseResult, Verdict

if TYPE_CHECKING:
    from vts.report.batch import ResultBatch

#: How a case is encoded in the JSON report: as the stream encodes it (``ResultStream``), so that the
#: run's own case lines can be copied (``vts.report.verbatim``).
_compact = _json.JSONEncoder(separators=(",", ":")).encode


class JsonReport:
    """``{"nnvts_results", "driver", ..., "interrupted", "cases": [...], "summary"}`` (stable keys), streamed."""

    def __init__(self, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool) -> None:
        self.footer = footer
        #: Files of the same run that could not be written (a full disk), known when this one closes.
        self.unwritten: list[str] = []
        self.counts: dict[str, int] = defaultdict(int)
        self.cases = 0
        #: The run's causes and support summary when its sink kept them (cases copied verbatim are not
        #: decoded here); else those of the cases ``add`` is given.
        self.findings: Findings | None = None
        self._own = Findings()
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
        self.counts[case.verdict.value] += 1
        if self.findings is None:
            self._own.add(case)
        self.add_text(_compact(case.to_json()))

    def add_text(self, text: str) -> None:
        """One case as its JSON text, encoded as ``add`` encodes it (the stream's own case text, copied)."""
        self.target.file.write((",\n    " if self.cases else "\n    ") + text)
        self.cases += 1

    def close(self) -> None:
        summary = self.footer["summary"] if self.footer else None
        if summary is None:
            summary = {v.value: self.counts.get(v.value, 0) for v in Verdict}
            summary["total"] = sum(self.counts.values())
        self.target.file.write("\n  ],")
        if self.unwritten:
            self.target.file.write(f'\n  "incomplete": {_json.dumps(self.unwritten)},')
        findings = self.findings if self.findings is not None else self._own
        for key, value in findings.to_json().items():  # "causes", "support" (docs/reports.md)
            self.target.file.write(f"\n  {_json.dumps(key)}: {_json.dumps(value)},")
        self.target.file.write(f'\n  "summary": {_json.dumps(summary)}\n}}\n')
        self.target.commit()

    def discard(self) -> None:
        self.target.discard()


class ReportsNotWritten(OSError):
    """Some reports could not be written (a full disk); the others were. One line per file in ``str``."""

    def __init__(self, failures: list[tuple[str, OSError]], written: list[tuple[str, str]]) -> None:
        super().__init__("\n".join(describe_failure(path, error) for path, error in failures))
        self.failures = failures
        self.written = written


def describe_failure(path: str, error: OSError) -> str:
    """``cannot write PATH: No space left on device``: one line naming the file."""
    return f"cannot write {path}: {error.strerror or error}"


class Renderer(Protocol):
    """One report fed from a single pass over the stream; ``close`` writes it, ``discard`` drops it."""

    def add(self, case: CaseResult) -> None: ...

    def close(self) -> None: ...

    def discard(self) -> None: ...


#: A stream this large renders its HTML and JUnit reports in processes of their own, each reading a part of
#: it (``vts.report.parts``), while this one renders the JSON report: the reports are the last thing a run
#: does, on one core while the others idle (3.8 s of CPU for the 51,671 cases of ``V1_0``'s JSON and HTML,
#: over a minute for the whole corpus).  Below it, a process's start would cost more than it saves.
RENDER_ASIDE_BYTES = 8 << 20


def render_reports(stream_path: str, *, json: str | None = None, junit: str | None = None,
                   html: str | None = None, interrupted: bool | None = None,
                   annotate: Annotate | None = None, unwritten: Sequence[str] = (),
                   fingerprint: StreamFingerprint | None = None,
                   findings: Findings | None = None) -> list[tuple[str, str]]:
    """Render each requested report from a results stream; returns ``[(kind, path), ...]`` written.

    All of them are fed by one pass over the stream, in bounded memory.
    ``interrupted`` overrides what the stream's footer says (None: trust the
    stream; a stream without a footer is reported as incomplete).  Baseline
    and flaky information is read from each result's ``extra`` ("baseline",
    "attempts"), so a stream annotated by ``nnvts merge`` or a baseline
    comparison renders with it; ``annotate`` maps every result as it is
    read (e.g. adds ``extra["baseline"]`` when re-rendering against a
    baseline), consistently in every report.

    A report that cannot be written (a full disk: any ``OSError``) does
    not stop the others: every one that can be is written, then
    ``ReportsNotWritten`` names each that could not.  The JSON report is
    closed last and lists in ``"incomplete"`` the files of the run known
    unwritten by then (``unwritten``: the caller's, e.g. the stream).

    ``fingerprint``: what the run's own ``ResultStream`` wrote (its ``fingerprint()``); the JSON report,
    when rendered alone, then copies the stream's case texts (``vts.report.verbatim``).
    ``findings``: the causes and support summary of exactly the stream's cases, kept by the run's sink
    (``vts.report.findings``); without them the JSON report works them out from the cases it decodes.
    """
    aside = {kind: path for kind, path in (("junit", junit), ("html", html)) if path}
    if aside and annotate is None and _size(stream_path) >= RENDER_ASIDE_BYTES:
        return _render_in_parts(stream_path, json, aside, interrupted, unwritten, fingerprint, findings)
    return _render(stream_path, json=json, junit=junit, html=html, interrupted=interrupted, annotate=annotate,
                   unwritten=unwritten, fingerprint=fingerprint, findings=findings)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reading it says what is wrong


def _render(stream_path: str, *, json: str | None = None, junit: str | None = None, html: str | None = None,
            interrupted: bool | None = None, annotate: Annotate | None = None, unwritten: Sequence[str] = (),
            before_json_closes: Callable[[], list[tuple[str, OSError]]] | None = None,
            fingerprint: StreamFingerprint | None = None, findings: Findings | None = None) -> list[tuple[str, str]]:
    """``render_reports`` in this process, in one pass; ``before_json_closes``: what else failed, asked
    just before the JSON report is closed (the reports rendered alongside it)."""
    from vts.report.html import HtmlReport
    from vts.report.junit import JunitReport

    header, cases, footer = read_stream(stream_path, annotate)
    interrupted = _interrupted(footer, interrupted)
    wanted = [(kind, path, cls) for kind, path, cls in (("json", json, JsonReport), ("junit", junit, JunitReport),
                                                         ("html", html, HtmlReport)) if path]
    live: list[tuple[str, str, Renderer]] = []
    failures: list[tuple[str, OSError]] = []

    def failed(entry: tuple[str, str, Renderer], error: OSError) -> None:
        failures.append((entry[1], error))
        live.remove(entry)
        with contextlib.suppress(OSError):
            entry[2].discard()

    try:
        for kind, path, cls in wanted:
            try:
                live.append((kind, path, cls(path, header, footer, interrupted)))
            except OSError as error:
                failures.append((path, error))
        copied = False
        if (fingerprint is not None and annotate is None and [e[0] for e in live] == ["json"]
                and isinstance((footer or {}).get("summary"), dict)):
            live[0][2].findings = findings  # the cases are copied, not decoded: the run's own findings
            copied = _copy_cases(stream_path, fingerprint, live[0], failed)
            if not copied and live:  # the stream is not what was written: the JSON report anew, the slow way
                kind, path, partial = live.pop()
                partial.discard()
                try:
                    live.append((kind, path, JsonReport(path, header, footer, interrupted)))
                except OSError as error:
                    failures.append((path, error))
        if not copied:
            for case in cases:
                for entry in list(live):
                    try:
                        entry[2].add(case)
                    except OSError as error:
                        failed(entry, error)
        written: list[tuple[str, str]] = []
        for entry in sorted(live, key=lambda e: isinstance(e[2], JsonReport)):  # the JSON report last
            if isinstance(entry[2], JsonReport):
                if before_json_closes is not None:
                    failures.extend(before_json_closes())
                entry[2].unwritten = [*unwritten, *(path for path, _ in failures)]
            try:
                entry[2].close()
                written.append(entry[:2])
            except OSError as error:
                failed(entry, error)
    except BaseException:
        for _, _, renderer in live:
            with contextlib.suppress(OSError):
                renderer.discard()
        raise
    written.sort(key=lambda w: [kind for kind, _, _ in wanted].index(w[0]))
    if failures:
        raise ReportsNotWritten(failures, written)
    return written


def _copy_cases(stream_path: str, fingerprint: StreamFingerprint, entry: tuple[str, str, Any],
                failed: Callable[[tuple[str, str, Any], OSError], None]) -> bool:
    """Copy the stream's case texts into ``entry``'s JSON report; False when the stream is not what its
    writer wrote (the report then holds a part that must be discarded).  As in the slow way, an error
    writing the report fails that report alone, and an error reading the stream is raised."""
    try:
        for text in case_texts(stream_path, fingerprint):
            try:
                entry[2].add_text(text)
            except OSError as error:  # the report cannot be written (a full disk)
                failed(entry, error)
                return True
    except StreamChanged:
        return False
    return True


def _interrupted(footer: dict[str, Any] | None, interrupted: bool | None) -> bool:
    """Whether to report the run interrupted: as the caller says, else as the stream's footer says."""
    if interrupted is None:
        return bool(footer.get("interrupted")) if footer else False
    return interrupted


def _render_in_parts(stream_path: str, json: str | None, aside: dict[str, str], interrupted: bool | None,
                     unwritten: Sequence[str], fingerprint: StreamFingerprint | None = None,
                     findings: Findings | None = None) -> list[tuple[str, str]]:
    """The JSON report here, the others (``aside``) from parts of the stream read in processes of their own
    (``vts.report.parts``), at once; the JSON report is still closed last, listing what they could not
    write.  A part's process that dies, or cannot start, leaves those reports to this one, rendered here
    before the JSON report closes: every report is still written."""
    import concurrent.futures
    import multiprocessing
    import tempfile

    from vts.report import parts

    done: list[tuple[str, str]] = []
    context = multiprocessing.get_context("spawn")  # this process may run threads (the progress display)
    ranges = parts.line_ranges(stream_path, parts.part_count(_size(stream_path)))
    with (tempfile.TemporaryDirectory(prefix="nnvts-parts-") as scratch,
          concurrent.futures.ProcessPoolExecutor(len(ranges), mp_context=context) as pool):
        futures: list[concurrent.futures.Future[parts.PartResult]] | None = []
        try:
            for index, (start, end) in enumerate(ranges):
                directory = os.path.join(scratch, str(index))
                os.mkdir(directory)
                futures.append(pool.submit(parts.render_part, stream_path, start, end, tuple(aside), directory))
        except Exception:  # no process (or no scratch space) to be had: rendered here (collect)
            futures = None
        collected: list[bool] = []

        def collect() -> list[tuple[str, OSError]]:
            collected.append(True)
            written, failures = _merge_parts(stream_path, aside, interrupted, futures)
            done.extend(written)
            return failures

        try:
            written = (_render(stream_path, json=json, interrupted=interrupted, unwritten=unwritten,
                               before_json_closes=collect, fingerprint=fingerprint, findings=findings)
                       if json else [])
            failures: list[tuple[str, OSError]] = []
        except ReportsNotWritten as error:
            written, failures = error.written, error.failures
        if not collected:  # no JSON report asked, or it could not even be opened: the others are still made
            failures += collect()
    order = ["json", *aside]
    written = sorted([*written, *done], key=lambda w: order.index(w[0]))
    if failures:
        raise ReportsNotWritten(failures, written)
    return written


def _merge_parts(stream_path: str, aside: dict[str, str], interrupted: bool | None,
                 futures: list[Any] | None) -> tuple[list[tuple[str, str]], list[tuple[str, OSError]]]:
    """Write each report of ``aside`` from its parts: (written, failures), as ``_render_one`` returns them."""
    from vts.report.html import HtmlReport
    from vts.report.junit import JunitReport
    from vts.report.parts import results_in_order

    try:
        results = [future.result() for future in futures] if futures is not None else None
    except Exception:  # a part's process died or could not start
        results = None
    written: list[tuple[str, str]] = []
    failures: list[tuple[str, OSError]] = []

    def serially(kind: str) -> None:
        more, failed = _render_one(stream_path, kind, aside[kind], interrupted)
        written.extend(more)
        failures.extend(failed)

    if results is None:
        for kind in aside:
            serially(kind)
        return written, failures
    kept = results_in_order(stream_path, results)
    header, _, footer = read_stream(stream_path)
    stopped = _interrupted(footer, interrupted)
    for kind, path in aside.items():
        failed = next((part.failures[kind] for part in kept if kind in part.failures), None)
        if failed is not None:
            failures.append((path, failed))
            continue
        if kind == "html" and any(part.html is not None and part.html.digest.pooled for part in kept):
            serially(kind)  # a part pooled cells or reasons of its own: only the whole stream says where
            continue
        try:
            if kind == "html":
                report: Any = HtmlReport.merged(path, header, footer, stopped, [p.html for p in kept if p.html])
            else:
                report = JunitReport.merged(path, header, footer, stopped, [p.junit for p in kept if p.junit])
            report.close()
            written.append((kind, path))
        except OSError as error:
            failures.append((path, error))
    return written, failures


def _render_one(stream_path: str, kind: str, path: str, interrupted: bool | None
                ) -> tuple[list[tuple[str, str]], list[tuple[str, OSError]]]:
    """One report rendered here from the whole stream, the serial way: (written, failures)."""
    try:
        return _render(stream_path, interrupted=interrupted, **{kind: path}), []
    except ReportsNotWritten as error:
        return error.written, error.failures


def write_json_report(stream_path: str, path: str, interrupted: bool | None = None,
                      annotate: Annotate | None = None) -> None:
    render_reports(stream_path, json=path, interrupted=interrupted, annotate=annotate)


class FileReports:
    """Sink: the JSON-lines stream while running, then the JSON, JUnit and HTML reports at the end."""

    def __init__(self, header: dict[str, Any], jsonl: str | None = None, json_path: str | None = None,
                 junit: str | None = None, html_path: str | None = None,
                 footer: dict[str, Any] | None = None) -> None:
        renders = bool(json_path or junit or html_path)
        self.stream = ResultStream(jsonl, header, write=renders or jsonl is not None, keep_going=renders,
                                   footer=footer)
        self.json_path = json_path
        self.junit = junit
        self.html_path = html_path
        #: ``(kind, path)`` of every file written, the stream included (for the closing summary).
        self.written: list[tuple[str, str]] = []
        #: ``(path, error)`` of every report that could not be written, or not whole (a full disk).
        self.failures: list[tuple[str, OSError]] = []
        #: The causes and support summary for the JSON report, which copies the cases without decoding them.
        self.findings = Findings() if json_path else None
        #: Why the run's ``--jsonl`` file is not what it wrote (changed under the harness): a run error.
        self.tampered: list[str] = []

    def add(self, result: CaseResult) -> None:
        self.stream.add(result)
        if self.findings is not None:
            self.findings.add(clean_result(result))  # as the stream has it, so as a re-render would count it

    def add_batch(self, batch: ResultBatch) -> None:
        """A ``-j`` worker's batch (``vts.report.batch``): its lines appended as they are."""
        self.stream.add_lines(batch.text, batch.counts)
        if self.findings is not None:
            self.findings.add_plain(batch.tally)
            for result in batch.others:
                self.findings.add(result)

    def finish(self, interrupted: bool) -> None:
        """Write every report that can be written; those that cannot are in ``failures`` (never raised).

        The reports are rendered from the harness's own record of the stream (``ResultStream.render_path``);
        a ``--jsonl`` file changed meanwhile is named in ``tampered`` and not listed as written.
        """
        self.stream.finish(interrupted)
        self.failures = list(self.stream.failures)
        why = self.stream.tampered()
        if why is not None:
            self.tampered.append(why)
        source = self.stream.render_path
        try:
            if (self.json_path or self.junit or self.html_path) and source:  # else nothing to render
                try:
                    self.written = render_reports(source, json=self.json_path, junit=self.junit,
                                                  html=self.html_path, interrupted=interrupted,
                                                  unwritten=[path for path, _ in self.failures],
                                                  fingerprint=self.stream.fingerprint(),
                                                  findings=self.findings)
                except ReportsNotWritten as error:
                    self.written = error.written
                    self.failures.extend(error.failures)
        finally:
            if (not self.stream.temporary and not self.tampered
                    and all(path != self.stream.path for path, _ in self.stream.failures)):
                self.written.insert(0, ("jsonl", self.stream.path))
            self.stream.discard()
