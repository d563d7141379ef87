"""A self-contained HTML report, rendered from the results stream.

One file a vendor can attach to a bug or open from a CI artifact, with no
network access: the summary, a family × operation × operand-type grid
coloured by pass rate, every case (searchable and paged in the page), every
kept failure with its comparison detail (worst elements, error against
tolerance, an inline SVG histogram of the error), the slowest cases, the
baseline comparison and the flaky cases.  Standard-library
``string.Template`` only; CSS and JavaScript are embedded.

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

import html
import json
import math
import os
import tempfile
from collections import Counter
from string import Template
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
from vts.report.output import atomic_write
from vts.report.sanitize import clean
from vts.report.stream import Annotate
from vts.results import CaseResult

#: Cases embedded in the page (non-passing ones first); the JSON report has them all.
MAX_CASES_LISTED = 200_000
#: Characters of a reason shown in the case list (the detail panel has it whole).
LIST_REASON_CHARS = 300
MAX_GRID_ROWS = 2000
MAX_GRID_COLUMNS = 24
MAX_COMPARISONS_SHOWN = 8

_ASSETS = r"""
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.4em 0 1em}
td,th{border:1px solid #ccc;padding:.15em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.tone-pass{color:#1a7f37}.tone-fail{color:#c62828;font-weight:600}.tone-skip{color:#9a6700}.tone-other{color:#0969da}
.banner{padding:.5em 1em;background:#fff4e5;border:1px solid #f0b37e;margin:.5em 0}
pre{margin:.2em 0;white-space:pre-wrap;word-break:break-all;font-size:12px}
#grid td.cell{cursor:pointer;text-align:right;min-width:3.5em}#grid td.none{background:#f4f4f4;color:#999}
#grid td.cell:hover{outline:2px solid #333}
.controls input,.controls select{font-size:14px;padding:.2em;margin-right:.5em}.controls input{width:24em}
#cases tbody tr{cursor:pointer}#cases tbody tr:hover{background:#f6f8fa}
#detail{border:2px solid #888;padding:.5em 1em;margin:1em 0;background:#fcfcfc}
.chip{background:#eef;border:1px solid #99c;padding:0 .4em;margin-left:.5em}
svg.hist rect{fill:#c62828}svg.hist text{font:10px sans-serif;fill:#444}
</style>
"""

_HEAD = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>nnvts: $title</title>$assets</head><body>
<h1>nnvts report: $title</h1>
$banners
<h2 id="summary">Summary</h2>
<table id="summary-counts"><tr>$summary_head<th>total</th></tr><tr>$summary_row<td class="num">$total</td></tr></table>
<table id="run-facts">$facts</table>
<h2 id="by-family">By family</h2>
<table><tr><th>family</th>$family_head<th>pass rate</th></tr>$family_rows</table>
$baseline
<h2 id="grid-title">Family × operation × operand type</h2>
<p>Each cell: the share of cases that ran (skips aside) and did not fail. Click a cell to list its cases.$grid_note</p>
<table id="grid"><tr><th>family</th><th>operation</th>$grid_head</tr>$grid_rows</table>
<h2 id="cases-title">Cases</h2>
<p>$cases_note</p>
<div class="controls"><input id="q" type="search" placeholder="search name or reason">
<select id="verdict"><option value="">every verdict</option>$verdict_options</select>
<select id="family"><option value="">every family</option>$family_options</select>
<span id="cell-filter"></span></div>
<p><button id="prev" type="button">previous</button> <span id="page-info"></span>
<button id="next" type="button">next</button></p>
<table id="cases"><thead><tr><th>case</th><th>family</th><th>verdict</th><th>time (s)</th><th>reason</th></tr>
</thead><tbody></tbody></table>
<div id="detail" hidden></div>
$flaky
<h2 id="slowest">Slowest cases</h2>
<table><tr><th>time (s)</th><th>case</th><th>family</th><th>verdict</th></tr>$slowest_rows</table>
<div id="details-kept">$details</div>
<script type="application/json" id="cases-data">""")

_TAIL = r"""</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("cases-data").textContent);
  const PAGE = 100;
  const q = document.getElementById("q");
  const verdictSel = document.getElementById("verdict");
  const familySel = document.getElementById("family");
  const body = document.querySelector("#cases tbody");
  const info = document.getElementById("page-info");
  const detail = document.getElementById("detail");
  const cellFilter = document.getElementById("cell-filter");
  let cell = -1, page = 0, shown = data.cases;

  function matches(c, text, v, f) {
    if (v !== "" && c[2] !== v) return false;
    if (f !== "" && c[1] !== f) return false;
    if (cell >= 0 && c[6] !== cell) return false;
    return text === "" || c[0].toLowerCase().includes(text) || c[4].toLowerCase().includes(text);
  }
  function apply() {
    const text = q.value.trim().toLowerCase();
    const v = verdictSel.value === "" ? "" : Number(verdictSel.value);
    const f = familySel.value === "" ? "" : Number(familySel.value);
    shown = data.cases.filter(function (c) { return matches(c, text, v, f); });
    page = 0;
    render();
  }
  function cellText(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  function render() {
    body.textContent = "";
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    for (const c of shown.slice(page * PAGE, (page + 1) * PAGE)) {
      const tr = document.createElement("tr");
      tr.className = "case";
      cellText(tr, c[0]);
      cellText(tr, data.families[c[1]]);
      cellText(tr, data.verdicts[c[2]], "tone-" + data.tones[c[2]]);
      cellText(tr, c[3].toFixed(3), "num");
      cellText(tr, c[4]);
      tr.addEventListener("click", function () { open(c); });
      body.appendChild(tr);
    }
    info.textContent = shown.length + " cases, page " + (page + 1) + " of " + pages;
  }
  function open(c) {
    detail.textContent = "";
    const h = document.createElement("h3");
    h.textContent = c[0];
    detail.appendChild(h);
    const p = document.createElement("p");
    p.className = "tone-" + data.tones[c[2]];
    p.textContent = data.verdicts[c[2]] + (c[4] ? ": " + c[4] : "");
    detail.appendChild(p);
    const kept = c[5] >= 0 ? document.getElementById("detail-" + c[5]) : null;
    if (kept) {
      detail.appendChild(kept.content.cloneNode(true));
    } else if (data.tones[c[2]] !== "pass") {
      const note = document.createElement("p");
      note.textContent = "Full detail is kept for the first " + data.detailsKept +
        " failures; the JSON report has every case in full.";
      detail.appendChild(note);
    }
    detail.hidden = false;
    detail.scrollIntoView({block: "nearest"});
  }
  function setCell(index) {
    cell = index;
    cellFilter.textContent = "";
    if (index >= 0) {
      const chip = document.createElement("span");
      chip.className = "chip";
      chip.textContent = data.grid[index].join(" · ") + " ✕";
      chip.title = "clear this filter";
      chip.addEventListener("click", function () { setCell(-1); });
      cellFilter.appendChild(chip);
    }
    apply();
  }
  for (const td of document.querySelectorAll("#grid td.cell")) {
    td.addEventListener("click", function () {
      setCell(Number(td.dataset.cell));
      document.getElementById("cases-title").scrollIntoView();
    });
  }
  let timer = null;
  q.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(apply, 150); });
  verdictSel.addEventListener("change", apply);
  familySel.addEventListener("change", apply);
  document.getElementById("prev").addEventListener("click", function () { page = Math.max(0, page - 1); render(); });
  document.getElementById("next").addEventListener("click", function () { page += 1; render(); });
  render();
})();
</script>
</body></html>
"""


def _e(value: object) -> str:
    return html.escape(clean(value), quote=True)


def _num(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _e(value)
    return f"{value:.6g}"


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _json_for_script(value: object) -> str:
    # Inside <script>, only "</script" and "<!--" end or confuse the element: no "<" at all is safe.
    return _COMPACT.encode(value).replace("<", "\\u003c")


class HtmlReport:
    """Fed case by case: a digest in memory, the case list in two scratch files; the page is written at close.

    The case list is kept as it comes, non-passing and passing cases apart
    (``MAX_CASES_LISTED`` of each at most), and turned into the page's
    compact form once the digest knows the verdicts, families and grid.
    """

    def __init__(self, path: str, header: dict[str, Any], footer: dict[str, Any] | None, interrupted: bool) -> None:
        self.path = path
        self.header = header
        self.footer = footer
        self.interrupted = interrupted
        self.digest = Digest()
        self._scratch = tempfile.TemporaryDirectory(prefix="nnvts-html-")
        self._lists = {passing: open(  # noqa: SIM115 - closed in discard()
            os.path.join(self._scratch.name, f"{passing}.jsonl"), "w+", encoding="utf-8") for passing in (False, True)}
        self._listed = {False: 0, True: 0}

    def add(self, case: CaseResult) -> None:
        self.digest.add(case)
        passing = tone(case.verdict) == "pass"
        if self._listed[passing] < MAX_CASES_LISTED:
            self._listed[passing] += 1
            entry = [case.name, case.family, case.verdict.value, round(case.duration, 4),
                     clean(case.reason, LIST_REASON_CHARS), grid_key(case)]
            self._lists[passing].write(_COMPACT.encode(entry) + "\n")

    def close(self) -> None:
        try:
            atomic_write(self.path, self._render)
        finally:
            self.discard()

    def discard(self) -> None:
        for handle in self._lists.values():
            handle.close()
        self._scratch.cleanup()

    def _render(self, out: IO[str]) -> None:
        digest, header, footer = self.digest, self.header, self.footer
        grid_index, grid_html, grid_head, grid_note = _grid(digest)
        detailed = _detailed_cases(digest)
        verdicts = digest.verdicts() or ["passed"]
        families = sorted(digest.by_family)
        listed = min(digest.total, MAX_CASES_LISTED)
        cases_note = f"All {digest.total} cases, non-passing first." if listed == digest.total else (
            f"{listed} of {digest.total} cases listed (every non-passing case first, then passing ones); "
            "the JSON report has them all.")
        out.write(_HEAD.substitute(
            title=_title(header),
            assets=_ASSETS,
            banners=_banners(self.interrupted, footer),
            summary_head="".join(f'<th class="tone-{tone(v)}">{_e(v)}</th>' for v in verdicts),
            summary_row="".join(f'<td class="num">{digest.counts[v]}</td>' for v in verdicts),
            total=digest.total,
            facts=_facts(header, footer, digest),
            family_head="".join(f'<th class="tone-{tone(v)}">{_e(v)}</th>' for v in verdicts),
            family_rows="".join(
                f"<tr><td>{_e(family)}</td>" + "".join(f'<td class="num">{c[v]}</td>' for v in verdicts)
                + f'<td class="num">{_rate_text(pass_rate(c))}</td></tr>'
                for family, c in sorted(digest.by_family.items())),
            baseline=_baseline(digest),
            grid_note=grid_note,
            grid_head=grid_head,
            grid_rows=grid_html,
            cases_note=_e(cases_note),
            verdict_options="".join(f'<option value="{i}">{_e(v)}</option>' for i, v in enumerate(verdicts)),
            family_options="".join(f'<option value="{i}">{_e(f)}</option>' for i, f in enumerate(families)),
            flaky=_flaky(digest),
            slowest_rows="".join(
                f'<tr><td class="num">{d:.3f}</td><td>{_e(n)}</td><td>{_e(f)}</td>'
                f'<td class="tone-{tone(v)}">{_e(v)}</td></tr>' for d, n, f, v in digest.slowest()),
            details="".join(f'<template id="detail-{i}">{_detail_html(result)}</template>'
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
        for passing in (False, True):
            handle = self._lists[passing]
            handle.seek(0)
            for line in handle:
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
        out.write(_TAIL)


def write_html_report(stream_path: str, path: str, interrupted: bool | None = None,
                      annotate: Annotate | None = None) -> None:
    from vts.report.files import render_reports

    render_reports(stream_path, html=path, interrupted=interrupted, annotate=annotate)


def _title(header: dict[str, Any]) -> str:
    driver = header.get("driver")
    name = driver.get("name") or driver.get("ref") if isinstance(driver, dict) else driver
    return _e(name or "run")


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
        ("device type", driver.get("type")),
        ("driver reference", driver.get("ref")),
        ("isolation", driver.get("isolation")),
        ("nnvts version", header.get("nnvts_version")),
        ("started", header.get("started")),
        ("finished", footer.get("finished") if footer else None),
        ("duration", f"{duration:.1f} s" if isinstance(duration, int | float) else None),
        ("time in cases", f"{digest.case_time:.1f} s"),
        ("host", header.get("host")),
        ("command", " ".join(str(a) for a in header.get("argv") or []) or None),
        ("seed", header.get("seed")),
    ]
    return "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows if v not in (None, ""))


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
    for family, operation in sorted(rows)[:MAX_GRID_ROWS]:
        cells = rows[(family, operation)]
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
        parts.append(f"<tr><td>{_e(family)}</td><td>{_e(operation)}</td>{''.join(html_cells)}</tr>")
    head = "".join(f"<th>{_e(t)}</th>" for t in columns) + ("<th>other types</th>" if pooled else "")
    note = f" The first {MAX_GRID_ROWS} of {len(rows)} rows are shown." if len(rows) > MAX_GRID_ROWS else ""
    return index, "".join(parts), head, _e(note)


def _grid_cell(counts: Counter[str], index: int) -> str:
    rate = pass_rate(counts)
    title = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    style = f' style="background:{"#eee" if rate is None else _rate_colour(rate)}"'
    clickable = f' class="cell" data-cell="{index}"' if index >= 0 else ""
    return f'<td{clickable}{style} title="{_e(title)}">{_rate_text(rate)}</td>'


def _detailed_cases(digest: Digest) -> dict[tuple[str, str], CaseResult]:
    kept: dict[tuple[str, str], CaseResult] = {}
    for result in [*digest.failures, *digest.flaky, *digest.baseline_cases.get("fixed", [])]:
        kept.setdefault((result.family, result.name), result)
    return kept


def _detail_html(result: CaseResult) -> str:
    parts = []
    status = result.extra.get("baseline")
    if isinstance(status, str):
        parts.append(f'<p>baseline: <b class="baseline">{_e(status)}</b></p>')
    comparisons = result.extra.get("comparison")
    if isinstance(comparisons, list):
        parts += [_comparison_html(c) for c in comparisons[:MAX_COMPARISONS_SHOWN] if isinstance(c, dict)]
    attempts = attempts_of(result)
    if attempts:
        parts.append("<p>attempts:</p><ol class=\"attempts\">" + "".join(
            f'<li class="tone-{tone(str(a.get("verdict", "")))}">{_e(a.get("verdict", "?"))}'
            f'{" — " + _e(a.get("reason")) if a.get("reason") else ""}</li>' for a in attempts) + "</ol>")
    if result.details:
        label = "driver stderr (last lines)" if result.verdict.value == "crash" else "detail"
        parts.append(f"<p>{label}:</p>" + "".join(f"<pre>{_e(line)}</pre>" for line in result.details))
    if result.spec:
        parts.append(f"<p>spec: <code>{_e(result.spec)}</code></p>")
    return "".join(parts)


def _comparison_html(record: dict[str, Any]) -> str:
    """One output's comparison: its worst elements and an SVG histogram of the error."""
    title = (f"output {_e(record.get('operand', '?'))} ({_e(record.get('type', ''))}): "
             f"{_num(record.get('bad', '?'))} of {_num(record.get('total', '?'))} elements out of tolerance")
    parts = [f'<div class="comparison"><p><b>{title}</b></p>']
    if record.get("note"):
        parts.append(f"<p>{_e(record['note'])}</p>")
    worst = record.get("worst")
    if isinstance(worst, list) and worst:
        rows = []
        for element in worst[:10]:
            if not isinstance(element, dict):
                continue
            error, tolerance = element.get("error"), element.get("tolerance")
            numeric = isinstance(error, int | float) and isinstance(tolerance, int | float)
            ratio = f"{error / tolerance:.3g}×" if numeric and tolerance > 0 and math.isfinite(error) else "—"
            index = element.get("index")
            index_text = ("[" + ", ".join(_num(i) for i in index) + "]") if isinstance(index, list) else _e(index)
            rows.append(f"<tr><td>{index_text}</td><td class=\"num\">{_num(element.get('expected'))}</td>"
                        f"<td class=\"num\">{_num(element.get('actual'))}</td>"
                        f"<td class=\"num\">{_num(error)}</td><td class=\"num\">{_num(tolerance)}</td>"
                        f"<td class=\"num\">{ratio}</td></tr>")
        parts.append('<table class="worst"><tr><th>index</th><th>expected</th><th>actual</th><th>error</th>'
                     "<th>tolerance</th><th>error / tolerance</th></tr>" + "".join(rows) + "</table>")
    histogram = record.get("histogram")
    if isinstance(histogram, dict):
        parts.append(histogram_svg(histogram))
    parts.append("</div>")
    return "".join(parts)


def histogram_svg(histogram: dict[str, Any], width: int = 320, height: int = 80) -> str:
    """A small bar chart of error counts (log scale: the mass near zero would flatten the tail)."""
    counts = histogram.get("counts")
    edges = histogram.get("edges")
    if (not isinstance(counts, list) or not isinstance(edges, list) or not counts or len(counts) > 256
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
        return ""
    top = math.log1p(max(counts)) or 1.0
    plot_height = height - 16
    bar = width / len(counts)
    bars = "".join(
        f'<rect x="{i * bar:.1f}" y="{plot_height - plot_height * math.log1p(c) / top:.1f}" '
        f'width="{max(bar - 1, 1):.1f}" height="{plot_height * math.log1p(c) / top:.1f}">'
        f"<title>{c}</title></rect>" for i, c in enumerate(counts))
    low = edges[0] if isinstance(edges[0], int | float) else 0
    high = edges[-1] if isinstance(edges[-1], int | float) else "?"
    nonfinite = histogram.get("nonfinite")
    extra = f", {_num(nonfinite)} non-finite" if isinstance(nonfinite, int) and nonfinite else ""
    label = f"|error| {_num(low)} … {_num(high)} (log count{extra})"
    return (f'<svg class="hist" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img"><title>error distribution</title>{bars}'
            f'<text x="0" y="{height - 3}">{label}</text></svg>')


def _baseline(digest: Digest) -> str:
    if not digest.baseline:
        return ""
    order = [s for s in BASELINE_ORDER if s in digest.baseline] + sorted(set(digest.baseline) - set(BASELINE_ORDER))
    parts = ['<h2 id="baseline">Against the baseline</h2><table><tr>'
             + "".join(f"<th>{_e(s)}</th>" for s in order) + "</tr><tr>"
             + "".join(f'<td class="num">{digest.baseline[s]}</td>' for s in order) + "</tr></table>"]
    for status, title in (("new-failure", "New failures"), ("fixed", "Fixed")):
        cases = digest.baseline_cases.get(status, [])
        if cases:
            more = digest.baseline[status] - len(cases)
            parts.append(f'<h3>{title}</h3><ul id="baseline-{status}">' + "".join(
                f'<li><span class="tone-{tone(c.verdict)}">{_e(c.verdict.value)}</span> {_e(c.name)}'
                f'{" — " + _e(clean(c.reason, LIST_REASON_CHARS)) if c.reason else ""}</li>' for c in cases)
                + (f"<li>… and {more} more</li>" if more > 0 else "") + "</ul>")
    return "".join(parts)


def _flaky(digest: Digest) -> str:
    if not digest.flaky_count:
        return ""
    rows = "".join(
        f'<tr><td>{_e(c.name)}</td><td class="tone-{tone(c.verdict)}">{_e(c.verdict.value)}</td><td>'
        + " → ".join(_e(a.get("verdict", "?")) for a in attempts_of(c)) + "</td></tr>" for c in digest.flaky)
    more = digest.flaky_count - len(digest.flaky)
    return (f'<h2 id="flaky">Flaky cases ({digest.flaky_count})</h2><table><tr><th>case</th><th>verdict</th>'
            f"<th>attempts</th></tr>{rows}</table>" + (f"<p>… and {more} more</p>" if more > 0 else ""))
