"""A self-contained HTML report, rendered from the results stream.

One file a vendor can attach to a bug or open from a CI artifact, with no
network access: the summary, a family × operation × operand-type grid
coloured by pass rate, every case (searchable and paged in the page), every
kept failure with its comparison detail (worst elements, error against
tolerance, an inline SVG histogram of the error), the slowest cases, the
baseline comparison and the flaky cases.  Standard-library
``string.Template`` only; CSS and JavaScript are embedded (``html_page``),
a case's detail is rendered by ``html_detail``.

It stays usable and bounded for a million-case sweep: the case list is
compact JSON rendered page by page in the browser (non-passing cases first,
``MAX_CASES_LISTED`` at most, with a note for the rest), and full detail is
kept for the first ``MAX_FAILURES_KEPT`` failures.  It is fed in the one
pass over the stream that renders every report: a bounded digest in
memory, the case list in scratch files, so memory does not grow with the run.

Everything from the run is untrusted: every string is cleaned
(``vts.report.sanitize``), HTML-escaped where it is markup and JSON-escaped
(``<`` included) where it is data; the script builds the table with
``textContent`` only.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from vts.report.digest import (
    BASELINE_ORDER,
    MAX_FAILURES_KEPT,
    Digest,
    attempts_of,
    grid_key,
    pass_rate,
    tone,
)
from vts.report.header import driver_options, options_text
from vts.report.html_detail import detail_html, esc
from vts.report.html_findings import causes_html, support_html
from vts.report.html_page import ASSETS, HEAD, TAIL
from vts.report.output import atomic_write, scratch_directory
from vts.report.sanitize import clean
from vts.results import CaseResult

#: Cases embedded in the page (non-passing ones first); the JSON report has them all.
MAX_CASES_LISTED = 200_000
#: Characters of a reason shown in the case list (the detail panel has it whole).
LIST_REASON_CHARS = 300
MAX_GRID_ROWS = 2000
MAX_GRID_COLUMNS = 24
#: Skip-only grid rows named in the folded list.
MAX_FOLDED_LISTED = 500

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _json_for_script(value: object) -> str:
    # Inside <script>, only "</script" and "<!--" end or confuse the element: no "<" at all is safe.
    return _COMPACT.encode(value).replace("<", "\\u003c")


#: The case list's groups, in the order the page lists them: what a vendor must fix first, skips and passes last.
_GROUPS = ("new-failure", "failed", "error", "other", "skipped", "passing")


def _group(case: CaseResult) -> str:
    kind = tone(case.verdict)
    if kind == "fail":
        if case.extra.get("baseline") == "new-failure":
            return "new-failure"
        return "failed" if case.verdict.value in ("failed", "xpass") else "error"
    return {"pass": "passing", "skip": "skipped"}.get(kind, "other")


class HtmlReport:
    """Fed case by case: a digest in memory, the case list in scratch files; the page is written at close.

    The case list is kept as it comes in groups, listed in this order: new
    failures against a baseline, failures, errors and crashes (every other
    failing verdict), other verdicts (flaky), skips, passing cases
    (``MAX_CASES_LISTED`` of each at most); it is turned into the
    page's compact form once the digest knows the verdicts, families and grid.
    """

    def __init__(self, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool,
                 scratch: str | None = None) -> None:
        self.path = path
        self.header = header
        self.footer = footer
        self.interrupted = interrupted
        self.digest = Digest()
        self._scratch, self._directory = scratch_directory(scratch, "nnvts-html-")
        #: A group's case list file, opened at its first case: a report merged from parts (``merged``)
        #: or a run without skips, say, opens none for the groups it never lists.
        self._lists: dict[str, IO[str]] = {}
        self._listed = dict.fromkeys(_GROUPS, 0)
        #: The case lists of parts this report was merged from (``merged``), by group, in order.
        self._adopted: dict[str, list[str]] = {group: [] for group in _GROUPS}

    @classmethod
    def merged(cls, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool,
               parts: list[HtmlPart]) -> HtmlReport:
        """The report of consecutive parts of a stream, in order.  The same page as one fed every case
        when no part pooled grid cells or failure reasons (``Digest.merge``; the caller checks)."""
        report = cls(path, header, footer, interrupted)
        for part in parts:
            report.digest.merge(part.digest)
            for group, name in part.files.items():
                report._adopted[group].append(name)
        return report

    def export(self) -> HtmlPart:
        """This report's digest and case lists, for ``merged`` in another process; the files stay (``scratch``)."""
        for handle in self._lists.values():
            handle.close()
        return HtmlPart(self.digest, {group: handle.name for group, handle in self._lists.items()})

    def add(self, case: CaseResult) -> None:
        self.digest.add(case)
        group = _group(case)
        if self._listed[group] < MAX_CASES_LISTED:
            self._listed[group] += 1
            entry = [case.name, case.family, case.verdict.value, round(case.duration, 4),
                     clean(case.reason, LIST_REASON_CHARS), grid_key(case)]
            handle = self._lists.get(group)
            if handle is None:
                handle = self._lists[group] = open(  # noqa: SIM115 - closed in discard() or export()
                    os.path.join(self._directory, f"{group}.jsonl"), "w+", encoding="utf-8")
            handle.write(_COMPACT.encode(entry) + "\n")

    def close(self) -> None:
        try:
            atomic_write(self.path, self._render)
        finally:
            self.discard()

    def discard(self) -> None:
        for handle in self._lists.values():
            handle.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    def _render(self, out: IO[str]) -> None:
        digest, header, footer = self.digest, self.header, self.footer
        grid_index, grid_html, grid_head, grid_note = _grid(digest)
        detailed = _detailed_cases(digest)
        verdicts = digest.verdicts() or ["passed"]
        families = sorted(digest.by_family)
        listed = min(digest.total, MAX_CASES_LISTED)
        order = ("new failures first, then failures, errors and crashes, then the rest" if digest.baseline
                 else "failures first, then errors and crashes, then the rest (skips and passes last)")
        cases_note = f"All {digest.total} cases, {order}." if listed == digest.total else (
            f"{listed} of {digest.total} cases listed ({order}); the JSON report has them all.")
        out.write(HEAD.substitute(
            title=_title(header),
            assets=ASSETS,
            banners=_banners(self.interrupted, footer),
            causes=causes_html(digest),
            support=support_html(digest),
            summary_head="".join(f'<th class="tone-{tone(v)}">{esc(v)}</th>' for v in verdicts),
            summary_row="".join(f'<td class="num">{digest.counts[v]}</td>' for v in verdicts),
            total=digest.total,
            facts=_facts(header, footer, digest),
            family_head="".join(f'<th class="tone-{tone(v)}">{esc(v)}</th>' for v in verdicts),
            family_rows="".join(
                f"<tr><td>{esc(family)}</td>" + "".join(f'<td class="num">{c[v]}</td>' for v in verdicts)
                + f'<td class="num">{_rate_text(pass_rate(c))}</td></tr>'
                for family, c in sorted(digest.by_family.items())),
            baseline=_baseline(digest),
            grid_note=grid_note,
            grid_head=grid_head,
            grid_rows=grid_html,
            cases_note=esc(cases_note),
            verdict_options="".join(f'<option value="{i}">{esc(v)}</option>' for i, v in enumerate(verdicts)),
            family_options="".join(f'<option value="{i}">{esc(f)}</option>' for i, f in enumerate(families)),
            flaky=_flaky(digest),
            slowest_rows="".join(
                f'<tr><td class="num">{d:.3f}</td><td>{esc(n)}</td><td>{esc(f)}</td>'
                f'<td class="tone-{tone(v)}">{esc(v)}</td></tr>' for d, n, f, v in digest.slowest()),
            details="".join(f'<template id="detail-{i}">{detail_html(result)}</template>'
                            for i, result in enumerate(detailed.values())),
        ))
        meta = {"families": families, "verdicts": verdicts, "tones": [tone(v) for v in verdicts],
                "grid": [list(k) for k in grid_index], "detailsKept": MAX_FAILURES_KEPT}
        out.write(_json_for_script(meta)[:-1] + ',"cases":[')
        verdict_index = {v: i for i, v in enumerate(verdicts)}
        family_index = {f: i for i, f in enumerate(families)}
        detail_index = {key: i for i, key in enumerate(detailed)}
        budget = MAX_CASES_LISTED
        n = 0
        for group in _GROUPS:
            for line in itertools.islice(self._listed_lines(group), MAX_CASES_LISTED):
                if budget == 0:
                    break
                budget -= 1
                name, family, verdict, duration, reason, key = json.loads(line)
                cell = grid_index.get(tuple(key), grid_index.get((family, "(other)", "-"), -1))
                entry = [name, family_index[family], verdict_index[verdict], duration, reason,
                         detail_index.get((family, name), -1), cell]
                out.write(("," if n else "") + _json_for_script(entry) + ("\n" if n % 64 == 63 else ""))
                n += 1
        out.write("]}")
        out.write(TAIL)

    def _listed_lines(self, group: str) -> Iterator[str]:
        """The case list entries of ``group``: this report's own, then its parts', in order."""
        handle = self._lists.get(group)
        if handle is not None:
            handle.seek(0)
            yield from handle
        for name in self._adopted[group]:
            with open(name, encoding="utf-8") as part:
                yield from part


@dataclass
class HtmlPart:
    """What a part of the stream gave the HTML report (``vts.report.parts``): its digest and case lists."""

    digest: Digest
    files: dict[str, str]


def _title(header: dict[str, Any]) -> str:
    driver = header.get("driver")
    name = driver.get("name") or driver.get("ref") if isinstance(driver, dict) else driver
    return esc(name or "run")


def _banners(interrupted: bool, footer: dict[str, Any] | None) -> str:
    if footer is None:
        return ('<p class="banner" id="incomplete">Incomplete: the results stream has no summary (the run was '
                "killed); this report shows the cases recorded before that.</p>")
    if interrupted:
        return '<p class="banner" id="interrupted">Interrupted: cases that did not run are missing.</p>'
    return ""


def _facts(header: dict[str, Any], footer: dict[str, Any] | None, digest: Digest) -> str:
    driver = header.get("driver") if isinstance(header.get("driver"), dict) else {"name": header.get("driver")}
    duration = footer.get("duration") if footer else None
    rows: list[tuple[str, object]] = [
        ("driver", " ".join(str(driver.get(k)) for k in ("name", "version") if driver.get(k))),
        ("driver options", options_text(driver_options(header), ", ") or None),  # the row only when some
        ("device type", driver.get("type")),
        ("driver reference", driver.get("ref")),
        ("isolation", driver.get("isolation")),
        ("sandbox", driver.get("sandbox")),
        ("nnvts version", header.get("nnvts_version")),
        ("started", header.get("started")),
        ("finished", footer.get("finished") if footer else None),
        ("duration", f"{duration:.1f} s" if isinstance(duration, int | float) else None),
        ("time in cases", f"{digest.case_time:.1f} s"),
        ("host", header.get("host")),
        ("command", " ".join(str(a) for a in header.get("argv") or []) or None),
        ("seed", header.get("seed")),
    ]
    return "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows if v not in (None, ""))


def _rate_text(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.0f}%" if rate in (0.0, 1.0) else f"{100 * rate:.1f}%"


def _rate_colour(rate: float) -> str:
    """Green only when nothing failed; any failure turns a cell yellow (99 %) through orange to red (0 %).

    A linear hue would paint 99.3 % and 100 % the same green, hiding the cell a vendor must look at.
    """
    return "hsl(120,60%,82%)" if rate >= 1 else f"hsl({round(55 * rate)},85%,75%)"


def _grid(digest: Digest) -> tuple[dict[tuple[str, str, str], int], str, str, str]:
    """(cell index by key, rows html, header html, note): rows family × operation, columns operand types."""
    type_totals: Counter[str] = Counter()
    rows: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for (family, operation, types), counts in digest.grid.items():
        type_totals[types] += sum(counts.values())
        rows.setdefault((family, operation), {})[types] = counts
    columns = [t for t, _ in type_totals.most_common(MAX_GRID_COLUMNS)]
    pooled = len(type_totals) > len(columns)
    index: dict[tuple[str, str, str], int] = {}
    parts: list[str] = []
    folded: list[str] = []
    for family, operation in sorted(rows):
        cells = rows[(family, operation)]
        if all(pass_rate(counts) is None for counts in cells.values()):
            folded.append(f"{family} · {operation}")  # nothing ran: a row of grey cells says less than a list
            continue
        if len(parts) == MAX_GRID_ROWS:
            continue
        html_cells = []
        for types in columns:
            counts = cells.get(types)
            if counts is None:
                html_cells.append('<td class="none"></td>')
                continue
            key = (family, operation, types)
            index[key] = len(index)
            html_cells.append(_grid_cell(counts, index[key]))
        if pooled:
            other: Counter[str] = Counter()
            for types, counts in cells.items():
                if types not in columns:
                    other.update(counts)
            html_cells.append(_grid_cell(other, -1) if other else '<td class="none"></td>')
        parts.append(f"<tr><td>{esc(family)}</td><td>{esc(operation)}</td>{''.join(html_cells)}</tr>")
    head = "".join(f"<th>{esc(t).replace(',', ',<wbr>')}</th>" for t in columns)
    head += "<th>other types</th>" if pooled else ""
    shown = len(rows) - len(folded)
    note = esc(f" The first {MAX_GRID_ROWS} of {shown} rows are shown." if shown > MAX_GRID_ROWS else "")
    if folded:
        listed = ", ".join(folded[:MAX_FOLDED_LISTED]) + (
            f" … and {len(folded) - MAX_FOLDED_LISTED} more" if len(folded) > MAX_FOLDED_LISTED else "")
        note += (f'</p><details id="grid-folded"><summary>{len(folded)} rows where every case was skipped '
                 f"(folded)</summary><p>{esc(listed)}</p></details><p>")
    return index, "".join(parts), head, note


def _grid_cell(counts: Counter[str], index: int) -> str:
    rate = pass_rate(counts)
    title = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    style = f' style="background:{"#eee" if rate is None else _rate_colour(rate)}"'
    clickable = f' class="cell" data-cell="{index}"' if index >= 0 else ""
    return f'<td{clickable}{style} title="{esc(title)}">{_rate_text(rate)}</td>'


def _detailed_cases(digest: Digest) -> dict[tuple[str, str], CaseResult]:
    kept: dict[tuple[str, str], CaseResult] = {}
    for result in [*digest.failures, *digest.flaky, *digest.baseline_cases.get("fixed", [])]:
        kept.setdefault((result.family, result.name), result)
    return kept


def _baseline(digest: Digest) -> str:
    if not digest.baseline:
        return ""
    order = [s for s in BASELINE_ORDER if s in digest.baseline] + sorted(set(digest.baseline) - set(BASELINE_ORDER))
    parts = ['<h2 id="baseline">Against the baseline</h2><table><tr>'
             + "".join(f"<th>{esc(s)}</th>" for s in order) + "</tr><tr>"
             + "".join(f'<td class="num">{digest.baseline[s]}</td>' for s in order) + "</tr></table>"]
    for status, title in (("new-failure", "New failures"), ("fixed", "Fixed")):
        cases = digest.baseline_cases.get(status, [])
        if cases:
            more = digest.baseline[status] - len(cases)
            parts.append(f'<h3>{title}</h3><ul id="baseline-{status}">' + "".join(
                f'<li><span class="tone-{tone(c.verdict)}">{esc(c.verdict.value)}</span> {esc(c.name)}'
                f'{" — " + esc(clean(c.reason, LIST_REASON_CHARS)) if c.reason else ""}</li>' for c in cases)
                + (f"<li>… and {more} more</li>" if more > 0 else "") + "</ul>")
    return "".join(parts)


def _flaky(digest: Digest) -> str:
    if not digest.flaky_count:
        return ""
    rows = "".join(
        f'<tr><td>{esc(c.name)}</td><td class="tone-{tone(c.verdict)}">{esc(c.verdict.value)}</td><td>'
        + " → ".join(esc(a.get("verdict", "?")) for a in attempts_of(c)) + "</td></tr>" for c in digest.flaky)
    more = digest.flaky_count - len(digest.flaky)
    return (f'<h2 id="flaky">Flaky cases ({digest.flaky_count})</h2><table><tr><th>case</th><th>verdict</th>'
            f"<th>attempts</th></tr>{rows}</table>" + (f"<p>… and {more} more</p>" if more > 0 else ""))
