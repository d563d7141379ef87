"""The HTML report's page: CSS, the skeleton (a ``string.Template``) and the script, all embedded.

The script renders the case list from the page's JSON data with
``textContent`` only (never ``innerHTML``), pages it, filters it by text,
verdict, family and grid cell, and opens a case's detail (a server-rendered
``<template>``) on click.  No network, no library.
"""

from __future__ import annotations

from string import Template

ASSETS = r"""
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
.grid-box{max-width:100%;max-height:80vh;overflow:auto;border:1px solid #ddd;margin:.4em 0 1em}
#grid{margin:0}#grid th{font-size:11px;font-weight:600;overflow-wrap:anywhere;position:sticky;top:0;z-index:1}
#grid td:nth-child(-n+2){white-space:nowrap;background:#fff}
#cases{table-layout:fixed;width:100%}#cases td{overflow-wrap:anywhere}
#cases th:nth-child(2),#cases th:nth-child(3),#cases th:nth-child(4){width:7em}
#detail,.comparison{max-width:100%;overflow-x:auto}
table.params td{font-variant-numeric:tabular-nums}
.controls input,.controls select{font-size:14px;padding:.2em;margin-right:.5em}.controls input{width:24em}
#cases tbody tr{cursor:pointer}#cases tbody tr:hover{background:#f6f8fa}
#detail{border:2px solid #888;padding:.5em 1em;margin:1em 0;background:#fcfcfc}
.chip{background:#eef;border:1px solid #99c;padding:0 .4em;margin-left:.5em}
svg.hist rect{fill:#c62828}svg.hist text{font:10px sans-serif;fill:#444}svg.hist line{stroke:#444}
svg.hist line.tolerance{stroke:#0969da}
</style>
"""

HEAD = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>nnvts: $title</title>$assets</head><body>
<h1>nnvts report: $title</h1>
$banners
$causes
<h2 id="summary">Summary</h2>
<table id="summary-counts"><tr>$summary_head<th>total</th></tr><tr>$summary_row<td class="num">$total</td></tr></table>
<table id="run-facts">$facts</table>
<h2 id="by-family">By family</h2>
<table><tr><th>family</th>$family_head<th>pass rate</th></tr>$family_rows</table>
$baseline
$support
<h2 id="grid-title">Family × operation × operand type</h2>
<p>Each cell: the share of cases that ran (skips aside) and did not fail. Click a cell to list its cases.$grid_note</p>
<div class="grid-box" id="grid-box"><table id="grid"><thead><tr><th>family</th><th>operation</th>$grid_head</tr>
</thead><tbody>$grid_rows</tbody></table></div>
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

TAIL = r"""</script>
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
