"""Every reader and writer of results: the stream and its one reader, terminal and file reports, merge, baselines.

``__all__`` names what the runner, the CLI and the tests use of it; each
name loads from its module on first use (the HTML report is large), so
importing the package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.report.baseline import Baseline, BaselineTally
    from vts.report.batch import PlainTally, ResultBatch, decode_line, is_plain
    from vts.report.causes import Cause, CauseTally
    from vts.report.digest import Digest
    from vts.report.files import FileReports, ReportsNotWritten, describe_failure, render_reports
    from vts.report.findings import Findings
    from vts.report.html import HtmlReport
    from vts.report.html_detail import histogram_svg
    from vts.report.merge import Collect, SelectionMismatch, merge_results, merged_header, shards_selection, survey
    from vts.report.resultsfile import ResultsFileError, iter_results, load_document, read_results
    from vts.report.sanitize import MARKER_ROOM, MAX_MESSAGE_BYTES, clean, clean_result, cut
    from vts.report.stream import ResultStream, StreamError, case_line, read_stream
    from vts.report.support import SupportRow, support_rows
    from vts.report.terminal import TerminalReport, color_disabled, format_duration
    from vts.report.verbatim import EMPTY

#: The public names, by the module that defines each.
_HOMES = {
    "vts.report.baseline": ("Baseline", "BaselineTally"),
    "vts.report.batch": ("PlainTally", "ResultBatch", "decode_line", "is_plain"),
    "vts.report.causes": ("Cause", "CauseTally"),
    "vts.report.digest": ("Digest",),
    "vts.report.files": ("FileReports", "ReportsNotWritten", "describe_failure", "render_reports"),
    "vts.report.findings": ("Findings",),
    "vts.report.html": ("HtmlReport",),
    "vts.report.html_detail": ("histogram_svg",),
    "vts.report.merge": (
        "Collect", "SelectionMismatch", "merge_results", "merged_header", "shards_selection", "survey",
    ),
    "vts.report.resultsfile": ("ResultsFileError", "iter_results", "load_document", "read_results"),
    "vts.report.sanitize": ("MARKER_ROOM", "MAX_MESSAGE_BYTES", "clean", "clean_result", "cut"),
    "vts.report.stream": ("ResultStream", "StreamError", "case_line", "read_stream"),
    "vts.report.support": ("SupportRow", "support_rows"),
    "vts.report.terminal": ("TerminalReport", "color_disabled", "format_duration"),
    "vts.report.verbatim": ("EMPTY",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "EMPTY",
    "MARKER_ROOM",
    "MAX_MESSAGE_BYTES",
    "Baseline",
    "BaselineTally",
    "Cause",
    "CauseTally",
    "Collect",
    "Digest",
    "FileReports",
    "Findings",
    "HtmlReport",
    "PlainTally",
    "ReportsNotWritten",
    "ResultBatch",
    "ResultStream",
    "ResultsFileError",
    "SelectionMismatch",
    "StreamError",
    "SupportRow",
    "TerminalReport",
    "case_line",
    "clean",
    "clean_result",
    "color_disabled",
    "cut",
    "decode_line",
    "describe_failure",
    "format_duration",
    "histogram_svg",
    "is_plain",
    "iter_results",
    "load_document",
    "merge_results",
    "merged_header",
    "read_results",
    "read_stream",
    "render_reports",
    "shards_selection",
    "support_rows",
    "survey",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
