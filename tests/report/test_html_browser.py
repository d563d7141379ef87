"""The HTML report in a real headless Chromium: it loads cleanly, shows the grid, and opens a failure's detail.

Driven by Playwright against the system's ``chromium`` (Debian package),
never a downloaded browser.  Skipped where chromium or playwright is
missing, except under ``NNVTS_REQUIRE_BROWSER=1`` (set by .ci/run), where a
skip would hide a broken report and is a failure instead.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.report.samples import write_reports

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _require_or_skip(why: str) -> None:
    if os.environ.get("NNVTS_REQUIRE_BROWSER") == "1":
        pytest.fail(f"NNVTS_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


@pytest.fixture
def page(tmp_path):
    if not os.path.exists(CHROMIUM):
        _require_or_skip("chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require_or_skip("playwright is not installed (pip install -e .[dev])")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            tab = context.new_page()
            problems: list[str] = []
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in (
                "error", "warning") else None)
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            # No network: any request other than the report file itself is a problem.
            tab.on("request", lambda r: problems.append(f"request {r.url}") if not r.url.startswith("file:") else None)
            tab.problems = problems
            yield tab
        finally:
            context.close()


def test_report_loads_without_errors_shows_the_grid_and_opens_a_failure(page, tmp_path):
    files = write_reports(tmp_path)
    page.goto("file://" + files["html"])
    assert page.problems == []
    assert page.locator("#grid td.cell").count() >= 5
    assert page.locator("#summary-counts").inner_text().count("\n") >= 1
    rows = page.locator("#cases tbody tr")
    assert rows.count() == 7  # every case, passing ones included
    assert "7 cases" in page.inner_text("#page-info")

    page.locator("#cases tbody tr", has_text="conv.conv").click()
    detail = page.locator("#detail")
    assert detail.is_visible()
    assert "conv.conv" in detail.inner_text()
    assert detail.locator("table.worst tr").count() == 3  # header and the two worst elements
    assert detail.locator("svg.hist rect").count() == 2
    assert "new-failure" in detail.inner_text()

    page.select_option("#verdict", label="passed")
    assert page.locator("#cases tbody tr").count() == 2
    page.fill("#q", "flaky")
    page.wait_for_timeout(300)  # the search is debounced
    assert page.locator("#cases tbody tr").count() == 1
    assert page.problems == []


def test_grid_cell_filters_the_case_list(page, tmp_path):
    files = write_reports(tmp_path)
    page.goto("file://" + files["html"])
    cell = page.locator("#grid tr", has_text="CONV_2D").locator("td.cell").first
    cell.click()
    assert page.locator("#cases tbody tr").count() == 1
    assert "conv.conv" in page.inner_text("#cases tbody")
    page.locator("#cell-filter .chip").click()
    assert page.locator("#cases tbody tr").count() == 7
    assert page.problems == []


def _wide_corpus() -> list:
    """Skips arriving before failures, and enough operations × operand types to make a wide grid."""
    from vts.results import CaseResult, Verdict

    types = [f"TENSOR_{kind}_{n}" for kind in ("FLOAT32", "QUANT8_ASYMM", "INT32") for n in range(8)]
    results = [CaseResult(f"lstm.skip{i}", "generated", Verdict.SKIPPED, "unsupported", operations=("LSTM",),
                          operand_types=(types[i % len(types)],)) for i in range(150)]
    results += [CaseResult(f"conv2d_dilation_all_inputs_as_internal.f{i}", "generated", Verdict.FAILED, "tolerance",
                           operations=("ADD", "CONV_2D"), operand_types=(types[i % len(types)], "TENSOR_INT32"))
                for i in range(48)]
    results += [CaseResult(f"op{i}.pass", "generated", Verdict.PASSED, operations=(f"OPERATION_{i}",),
                           operand_types=(types[i % len(types)],)) for i in range(60)]
    return results


def test_failures_come_first_and_the_grid_fits_the_page(page, tmp_path):
    files = write_reports(tmp_path, results=_wide_corpus())
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("file://" + files["html"])
    assert page.problems == []
    first_page = page.locator("#cases tbody tr td:nth-child(3)").all_inner_texts()
    assert first_page[:48] == ["failed"] * 48 and "skipped" in first_page[48:]
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth")
    box = page.locator("#grid-box").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    assert page.locator("#grid tr", has_text="ADD,CONV_2D").count() == 0
    assert page.locator("#grid tr", has_text="CONV_2D").count() == 1
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 0
