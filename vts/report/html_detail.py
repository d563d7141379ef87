"""One case's detail in the HTML report: comparison records, an SVG error histogram, attempts, stderr.

Everything rendered here comes from a results stream and is untrusted:
each value is cleaned and escaped, and a record of the wrong shape (a
hand-edited or foreign stream) renders what it can instead of failing.
"""

from __future__ import annotations

import html
import math
from typing import Any

from vts.report.digest import attempts_of, tone
from vts.report.sanitize import clean
from vts.results import CaseResult

MAX_COMPARISONS_SHOWN = 8


def esc(value: object) -> str:
    """Cleaned and HTML-escaped (quotes too: the result may sit in an attribute)."""
    return html.escape(clean(value), quote=True)


def number(value: object) -> str:
    """A number, short; anything else from a record (a string, a list) escaped as text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return esc(value)
    return f"{value:.6g}"


def detail_html(result: CaseResult) -> str:
    parts = []
    status = result.extra.get("baseline")
    if isinstance(status, str):
        parts.append(f'<p>baseline: <b class="baseline">{esc(status)}</b></p>')
    operation = result.extra.get("operation")
    if isinstance(operation, dict):
        parts.append(_operation_html(operation))
    comparisons = result.extra.get("comparison")
    if isinstance(comparisons, list):
        parts += [_comparison_html(c) for c in comparisons[:MAX_COMPARISONS_SHOWN] if isinstance(c, dict)]
    attempts = attempts_of(result)
    if attempts:
        parts.append("<p>attempts:</p><ol class=\"attempts\">" + "".join(
            f'<li class="tone-{tone(str(a.get("verdict", "")))}">{esc(a.get("verdict", "?"))}'
            f'{" — " + esc(a.get("reason")) if a.get("reason") else ""}</li>' for a in attempts) + "</ol>")
    if result.details:
        label = "driver stderr (last lines)" if result.verdict.value == "crash" else "detail"
        parts.append(f"<p>{label}:</p>" + "".join(f"<pre>{esc(line)}</pre>" for line in result.details))
    if result.spec:
        parts.append(f"<p>spec: <code>{esc(result.spec)}</code></p>")
    return "".join(parts)


def _operation_html(operation: dict[str, Any]) -> str:
    """The operation under test and its scalar parameters (stride, dilation, padding, ...), by name."""
    parameters = operation.get("parameters")
    rows = "".join(
        f"<tr><th>{esc(p.get('name', p.get('input', '?')))}</th><td class=\"num\">{number(p.get('value'))}"
        f"{' (' + esc(p['meaning']) + ')' if p.get('meaning') else ''}</td></tr>"
        for p in (parameters if isinstance(parameters, list) else [])[:32] if isinstance(p, dict))
    return (f'<div class="operation"><p>operation under test: <b>{esc(operation.get("operation", "?"))}</b></p>'
            + (f'<table class="params">{rows}</table>' if rows else "") + "</div>")


def _comparison_html(record: dict[str, Any]) -> str:
    """One output's comparison: its worst elements and an SVG histogram of the error."""
    title = (f"output {esc(record.get('operand', '?'))} ({esc(record.get('type', ''))}): "
             f"{number(record.get('bad', '?'))} of {number(record.get('total', '?'))} elements out of tolerance")
    parts = [f'<div class="comparison"><p><b>{title}</b></p>']
    if record.get("note"):
        parts.append(f"<p>{esc(record['note'])}</p>")
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
            index_text = ("[" + ", ".join(number(i) for i in index) + "]") if isinstance(index, list) else esc(index)
            rows.append(f"<tr><td>{index_text}</td><td class=\"num\">{number(element.get('expected'))}</td>"
                        f"<td class=\"num\">{number(element.get('actual'))}</td>"
                        f"<td class=\"num\">{number(error)}</td><td class=\"num\">{number(tolerance)}</td>"
                        f"<td class=\"num\">{ratio}</td></tr>")
        parts.append('<table class="worst"><tr><th>index</th><th>expected</th><th>actual</th><th>error</th>'
                     "<th>tolerance</th><th>error / tolerance</th></tr>" + "".join(rows) + "</table>")
    histogram = record.get("histogram")
    if isinstance(histogram, dict):
        parts.append(histogram_svg(histogram))
    parts.append("</div>")
    return "".join(parts)


def histogram_svg(histogram: dict[str, Any], width: int = 360, height: int = 120) -> str:
    """A bar chart of error counts with labelled axes (log count: the mass near zero would flatten the tail).

    The x axis is |error| from the first edge to the last, ticked at both ends and the middle; the
    tolerance, when the record has it, is a dashed line.
    """
    counts = histogram.get("counts")
    edges = histogram.get("edges")
    if (not isinstance(counts, list) or not isinstance(edges, list) or not counts or len(counts) > 256
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
        return ""
    left, right, top_pad, bottom = 34, 8, 6, 30
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    top = math.log1p(max(counts)) or 1.0
    bar = plot_w / len(counts)
    base = top_pad + plot_h
    bars = "".join(
        f'<rect x="{left + i * bar:.1f}" y="{base - plot_h * math.log1p(c) / top:.1f}" '
        f'width="{max(bar - 1, 1):.1f}" height="{plot_h * math.log1p(c) / top:.1f}">'
        f"<title>{c}</title></rect>" for i, c in enumerate(counts))
    low = edges[0] if isinstance(edges[0], int | float) else 0
    high = edges[-1] if isinstance(edges[-1], int | float) and not isinstance(edges[-1], bool) else None
    ticks = [(left, "start", low)]
    if high is not None:
        ticks += [(left + plot_w / 2, "middle", (low + high) / 2), (left + plot_w, "end", high)]
    axis = (f'<line class="axis" x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}"/>'
            f'<line class="axis" x1="{left}" y1="{top_pad}" x2="{left}" y2="{base}"/>'
            + "".join(f'<line class="axis" x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 3}"/>'
                      f'<text class="tick" x="{x:.1f}" y="{base + 12}" text-anchor="{anchor}">{number(v)}</text>'
                      for x, anchor, v in ticks)
            + f'<text class="tick" x="{left - 3}" y="{top_pad + 8}" text-anchor="end">{max(counts)}</text>'
            + f'<text class="tick" x="{left - 3}" y="{base}" text-anchor="end">0</text>'
            + f'<text class="axis-label" x="10" y="{top_pad + plot_h / 2:.1f}" text-anchor="middle" '
              f'transform="rotate(-90 10 {top_pad + plot_h / 2:.1f})">count (log)</text>')
    tolerance = histogram.get("tolerance")
    if (isinstance(tolerance, int | float) and not isinstance(tolerance, bool) and high is not None
            and high > low and low <= tolerance <= high):
        x = left + plot_w * (tolerance - low) / (high - low)
        axis += (f'<line class="tolerance" x1="{x:.1f}" y1="{top_pad}" x2="{x:.1f}" y2="{base}" '
                 f'stroke-dasharray="3,2"><title>tolerance {number(tolerance)}</title></line>')
    nonfinite = histogram.get("nonfinite")
    extra = f"; {number(nonfinite)} non-finite not shown" if isinstance(nonfinite, int) and nonfinite else ""
    label = f"|error| ({len(counts)} bins{extra})"
    return (f'<svg class="hist" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img"><title>error distribution</title>{bars}{axis}'
            f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{height - 3}" text-anchor="middle">'
            f"{label}</text></svg>")
