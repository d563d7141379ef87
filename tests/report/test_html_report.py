"""The HTML report's content: summary, grid, every case, failure detail with SVG, slowest, baseline, flaky."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.report.samples import write_reports
from vts.report import html as html_report
from vts.report.html_detail import histogram_svg
from vts.results import CaseResult, Verdict


def _data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="cases-data">(.*?)</script>', page, re.S)
    assert match
    return json.loads(match.group(1))


def test_summary_grid_and_every_case(tmp_path):
    page = Path(write_reports(tmp_path)["html"]).read_text(encoding="utf-8")
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched
    assert "https://" not in page
    summary = page[page.index('id="summary-counts"'):page.index('id="run-facts"')]
    for verdict in ("passed", "failed", "skipped", "error", "crash", "timeout"):
        assert f">{verdict}<" in summary
    assert "1.2.3" in page and "0.1.0" in page and "ACCELERATOR" in page
    data = _data(page)
    assert len(data["cases"]) == 7
    verdicts = [data["verdicts"][c[2]] for c in data["cases"]]
    assert verdicts.index("passed") > max(i for i, v in enumerate(verdicts) if v != "passed")  # non-passing first
    # The grid has a cell for CONV_2D × TENSOR_FLOAT32, coloured at 0 %.
    conv = next(i for i, key in enumerate(data["grid"]) if key[1] == "CONV_2D")
    assert re.search(rf'data-cell="{conv}" style="background:hsl\(0,', page)


def test_failure_detail_has_worst_elements_and_an_svg_histogram(tmp_path):
    page = Path(write_reports(tmp_path)["html"]).read_text(encoding="utf-8")
    data = _data(page)
    conv = next(c for c in data["cases"] if c[0] == "conv.conv")
    template = re.search(rf'<template id="detail-{conv[5]}">(.*?)</template>', page, re.S).group(1)
    assert "3 of 4 elements out of tolerance" in template
    assert "1e+04×" in template  # error 0.1 against tolerance 1e-5
    svg = re.search(r"<svg.*?</svg>", template, re.S).group(0)
    ET.fromstring(svg)  # well-formed SVG
    assert svg.count("<rect") == 2 and "1 non-finite" in svg


def test_slowest_baseline_and_flaky_sections(tmp_path):
    page = Path(write_reports(tmp_path)["html"]).read_text(encoding="utf-8")
    slowest = page[page.index('id="slowest"'):]
    assert slowest.index("timeout.case") < slowest.index("conv.conv")  # 60 s before 0.5 s
    baseline = page[page.index('id="baseline"'):page.index('id="grid-title"')]
    assert "new-failure" in baseline and "conv.conv" in baseline[baseline.index('id="baseline-new-failure"'):]
    assert 'id="baseline-fixed"' in baseline
    flaky = page[page.index('id="flaky"'):page.index('id="slowest"')]
    assert "mul.flaky" in flaky and "failed → passed" in flaky


def test_a_large_run_lists_a_capped_number_of_cases_failures_first(tmp_path, monkeypatch):
    monkeypatch.setattr(html_report, "MAX_CASES_LISTED", 10)
    results = [CaseResult(f"pass.{i}", "generated", Verdict.PASSED) for i in range(30)]
    results += [CaseResult(f"fail.{i}", "generated", Verdict.FAILED, "bad") for i in range(4)]
    page = Path(write_reports(tmp_path, results)["html"]).read_text(encoding="utf-8")
    data = _data(page)
    assert [c[0] for c in data["cases"][:4]] == [f"fail.{i}" for i in range(4)]
    assert len(data["cases"]) == 10
    assert "10 of 34 cases listed" in page


def test_unknown_verdicts_and_malformed_comparison_records_render(tmp_path):
    odd = CaseResult("odd.case", "generated", Verdict.FAILED, "x", extra={
        "comparison": [{"operand": "<o>", "worst": [{"index": "nope", "error": "x"}, 5],
                        "histogram": {"edges": "bad", "counts": [1, -2]}}, "not a dict"]})
    page = Path(write_reports(tmp_path, [odd])["html"]).read_text(encoding="utf-8")
    assert "&lt;o&gt;" in page and "<svg" not in page.split('id="details-kept"')[1]


def test_histogram_svg_rejects_non_counts():
    assert histogram_svg({"edges": [0, 1], "counts": ["<script>"]}) == ""
    assert histogram_svg({"edges": [0, 1, 2], "counts": [3, 0]}).count("<rect") == 2


def test_render_reports_applies_an_annotation_to_every_report(tmp_path):
    import dataclasses

    from vts.report.files import render_reports

    results = [CaseResult("a.pass", "generated", Verdict.PASSED), CaseResult("b.fail", "generated", Verdict.FAILED)]
    stream = write_reports(tmp_path, results)["jsonl"]

    def against_baseline(result: CaseResult) -> CaseResult:
        status = "new-failure" if result.verdict.is_failure else "still-passing"
        return dataclasses.replace(result, extra={**result.extra, "baseline": status})

    written = render_reports(stream, json=str(tmp_path / "a.json"), html=str(tmp_path / "a.html"),
                             annotate=against_baseline)
    assert [kind for kind, _ in written] == ["json", "html"]
    cases = json.loads((tmp_path / "a.json").read_text())["cases"]
    assert [c["extra"]["baseline"] for c in cases] == ["still-passing", "new-failure"]
    page = (tmp_path / "a.html").read_text()
    new = page[page.index('id="baseline-new-failure"'):]
    assert "b.fail" in new[:new.index("</ul>")]


def test_new_failures_are_listed_first(tmp_path):
    results = [CaseResult("old.fail", "generated", Verdict.FAILED, "x", extra={"baseline": "still-failing"}),
               CaseResult("ok.case", "generated", Verdict.PASSED, extra={"baseline": "still-passing"}),
               CaseResult("new.fail", "generated", Verdict.FAILED, "y", extra={"baseline": "new-failure"})]
    page = Path(write_reports(tmp_path, results)["html"]).read_text(encoding="utf-8")
    assert [c[0] for c in _data(page)["cases"]] == ["new.fail", "old.fail", "ok.case"]
    assert "new failures first" in page


def _corpus_like() -> list[CaseResult]:
    """A skip-heavy run in arrival order: skips first, the failures after them (a corpus run on a new driver)."""
    results = [CaseResult(f"lstm.skip{i}", "generated", Verdict.SKIPPED, "unsupported: LSTM", operations=("LSTM",),
                          operand_types=("TENSOR_FLOAT32",)) for i in range(150)]
    results += [CaseResult(f"conv2d_dilation_all_inputs_as_internal.fail{i}", "generated", Verdict.FAILED,
                           "out of tolerance", operations=("ADD", "CONV_2D"), operand_types=("TENSOR_FLOAT32",),
                           spec="specs/conv2d_dilation.json",
                           extra={"operation": {"operation": "CONV_2D", "parameters": [
                               {"input": 3, "name": "padding_scheme", "value": 1, "meaning": "SAME"},
                               {"input": 8, "name": "dilation_width", "value": 2}]}}) for i in range(48)]
    results += [CaseResult("conv.crash", "generated", Verdict.CRASH, "killed", operations=("CONV_2D",),
                           operand_types=("TENSOR_FLOAT32",)),
                CaseResult("add.ok", "generated", Verdict.PASSED, operations=("ADD",),
                           operand_types=("TENSOR_FLOAT32",))]
    return results


def test_failures_come_first_then_errors_and_crashes_then_the_rest(tmp_path):
    page = Path(write_reports(tmp_path, results=_corpus_like())["html"]).read_text(encoding="utf-8")
    data = _data(page)
    verdicts = [data["verdicts"][c[2]] for c in data["cases"]]
    assert verdicts[:48] == ["failed"] * 48  # page 1 shows the failures, not the 150 skips
    assert verdicts[48] == "crash"
    assert verdicts.index("passed") > max(i for i, v in enumerate(verdicts) if v == "skipped")


def test_grid_rows_are_the_operation_under_test_and_skip_only_rows_fold(tmp_path):
    page = Path(write_reports(tmp_path, results=_corpus_like())["html"]).read_text(encoding="utf-8")
    data = _data(page)
    operations = {key[1] for key in data["grid"]}
    assert "ADD,CONV_2D" not in operations and "CONV_2D" in operations
    grid = page[page.index('id="grid"'):page.index("</table>", page.index('id="grid"'))]
    assert "LSTM" not in grid  # every LSTM case was skipped: folded under the grid
    folded = page[page.index('id="grid-folded"'):]
    assert "LSTM" in folded[:folded.index("</details>")]
    assert 'class="grid-box"' in page  # the grid scrolls in its own box rather than widening the page


def test_failure_detail_names_the_operation_and_its_parameters(tmp_path):
    page = Path(write_reports(tmp_path, results=_corpus_like())["html"]).read_text(encoding="utf-8")
    detail = page[page.index('<template id="detail-0">'):page.index("</template>")]
    assert "CONV_2D" in detail and "dilation_width" in detail and "SAME" in detail


def test_histogram_has_an_axis_and_the_tolerance():
    svg = histogram_svg({"edges": [i / 4 for i in range(17)], "counts": [5] + [0] * 14 + [1], "tolerance": 1.0})
    assert svg.count("<rect") == 16 and 'class="axis"' in svg and "count (log)" in svg and "|error|" in svg
    assert 'class="tolerance"' in svg and ">4<" in svg  # the last edge is ticked
