"""The HTML report's two run-wide sections: the root causes (the page leads with them) and the support grid.

Rendered from the report's ``Digest`` (its causes tally and its family × operation × operand type
grid), so a report rendered in parts, or by ``nnvts merge`` over every shard, shows the causes of
every case it holds.  Every string is escaped (``html_detail.esc``): summaries quote the driver's
reasons.
"""

from __future__ import annotations

from vts.report.digest import Digest
from vts.report.html_detail import esc
from vts.report.support import support_rows

#: Causes listed (most cases first); the JSON report has them all.
MAX_CAUSES_SHOWN = 50


def causes_html(digest: Digest) -> str:
    """``<h2 id="causes">``: one row per root cause (cases, summary, families, a case to rerun); "" if none."""
    causes = digest.causes.causes()
    if not causes:
        return ""
    rows = "".join(
        f'<tr><td class="num">{cause.cases}</td><td>{esc(cause.summary)}</td>'
        f"<td>{esc(', '.join(cause.families))}</td><td><code>{esc(cause.example)}</code></td></tr>"
        for cause in causes[:MAX_CAUSES_SHOWN])
    more = (f"<p>{len(causes) - MAX_CAUSES_SHOWN} more causes in the JSON report.</p>"
            if len(causes) > MAX_CAUSES_SHOWN else "")
    return (f'<h2 id="causes">Root causes ({len(causes)}, {digest.failing} failing cases)</h2>'
            "<p>Failures grouped by operation, operand type, failing parameters and kind of failure, across "
            "families; rerun a cause with its example (<code>nnvts run -k NAME</code>).</p>"
            '<table id="causes-table"><tr><th>cases</th><th>cause</th><th>families</th><th>example</th></tr>'
            f"{rows}</table>{more}")


def support_html(digest: Digest) -> str:
    """``<h2 id="support">``: per operation and operand type, the claim, passed of ran, validation apart."""
    rows = support_rows(digest.grid)
    if not rows:
        return ""
    body = []
    for row in rows:
        tone = "pass" if row.supported == "yes" and row.passed == row.ran else (
            "skip" if row.supported == "no" else "fail")
        claim = row.supported if row.supported != "partly" else f"partly ({row.claimed} of {row.claimed + row.refused})"
        validation = f"{row.validation_passed} / {row.validation_cases}" if row.validation_cases else "-"
        body.append(f'<tr class="support-{esc(row.supported)}"><td>{esc(row.operation)}</td>'
                    f'<td>{esc(row.operand_type)}</td><td class="tone-{tone}">{esc(claim)}</td>'
                    f'<td class="num">{row.passed} / {row.ran}</td><td class="num">{validation}</td></tr>')
    return ('<h2 id="support">Support by operation and operand type</h2>'
            "<p>Supported: whether the driver prepared the generated family's models of that operation and "
            "type. Passed / ran: the cases that ran in every family but validation. Validation cases check "
            "refusals of malformed input and pass whether or not the operation is supported: counted apart.</p>"
            '<table id="support-table"><tr><th>operation</th><th>operand type</th><th>supported</th>'
            f'<th>passed / ran</th><th>validation passed</th></tr>{"".join(body)}</table>')
