"""A self-contained HTML report, rendered from the results stream.

One file a vendor can attach to a bug or open from a CI artifact: summary
counts, a table per family, and every case that did not pass with its
reason and comparison detail, filterable in the page.  Standard-library
``string.Template`` only; the CSS and the few lines of JavaScript are
embedded, so the file needs nothing beside it.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from string import Template
from typing import IO

from vts.report.files import _atomic_write
from vts.report.stream import read_stream
from vts.results import Verdict

#: Cases listed in full; a sweep can hold a million passing cases, the report lists what matters.
MAX_LISTED = 5000

_PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nnvts: $title</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.passed{color:#1a7f37}.failed,.crash,.timeout,.xpass,.error,.unreproduced_crash{color:#c62828;font-weight:600}
.skipped{color:#9a6700}.xfail{color:#0969da}
pre{margin:0;white-space:pre-wrap;font-size:12px}
input{font-size:14px;padding:.2em;width:30em}
</style></head><body>
<h1>nnvts report: $title</h1>
<p>$meta</p>
<h2>Summary</h2>
<table><tr>$summary_head</tr><tr>$summary_row</tr></table>
<h2>By family</h2>
<table><tr><th>family</th>$family_head</tr>$family_rows</table>
<h2>Cases not passed ($listed of $not_passed)</h2>
<p><input id="filter" placeholder="filter by name, verdict or reason" oninput="filterRows()"></p>
<table id="cases"><tr><th>case</th><th>verdict</th><th>reason and detail</th></tr>$case_rows</table>
<script>
function filterRows(){
  const q=document.getElementById('filter').value.toLowerCase();
  for(const r of document.querySelectorAll('#cases tr.case')){
    r.style.display=r.textContent.toLowerCase().includes(q)?'':'none';
  }
}
</script>
</body></html>
""")


def write_html_report(stream_path: str, path: str) -> None:
    header, cases, footer = read_stream(stream_path)
    counts: Counter[Verdict] = Counter()
    by_family: dict[str, Counter[Verdict]] = defaultdict(Counter)
    rows: list[str] = []
    not_passed = 0
    for case in cases:
        counts[case.verdict] += 1
        by_family[case.family][case.verdict] += 1
        if case.verdict is Verdict.PASSED:
            continue
        not_passed += 1
        if len(rows) < MAX_LISTED:
            detail = "".join(f"<pre>{html.escape(line)}</pre>" for line in case.details[:10])
            rows.append(f'<tr class="case"><td>{html.escape(case.name)}</td>'
                        f'<td class="{case.verdict.value}">{case.verdict.value}</td>'
                        f"<td>{html.escape(case.reason)}{detail}</td></tr>")
    verdicts = [v for v in Verdict if counts[v]] or [Verdict.PASSED]
    driver = header.get("driver", {})
    title = html.escape(str(driver.get("name", "run")) if isinstance(driver, dict) else str(driver))
    meta = html.escape(" · ".join(str(x) for x in (
        driver.get("version", "") if isinstance(driver, dict) else "", header.get("started", ""),
        f"nnvts {header.get('nnvts_version', '')}", "interrupted" if footer and footer.get("interrupted") else "",
        "incomplete (no summary: the run was killed)" if footer is None else "") if x))
    page = _PAGE.substitute(
        title=title,
        meta=meta,
        summary_head="".join(f'<th class="{v.value}">{v.value}</th>' for v in verdicts) + "<th>total</th>",
        summary_row="".join(f"<td>{counts[v]}</td>" for v in verdicts) + f"<td>{sum(counts.values())}</td>",
        family_head="".join(f'<th class="{v.value}">{v.value}</th>' for v in verdicts),
        family_rows="".join(
            f"<tr><td>{html.escape(family)}</td>" + "".join(f"<td>{c[v]}</td>" for v in verdicts) + "</tr>"
            for family, c in sorted(by_family.items())),
        listed=len(rows),
        not_passed=not_passed,
        case_rows="".join(rows),
    )

    def render(out: IO[str]) -> None:
        out.write(page)

    _atomic_write(path, render)
