"""A large stream renders its HTML and JUnit reports from parts read in processes of their own, alongside
the JSON report (``vts.report.parts``).

The files must be those one process would write, byte for byte, whatever the number of parts, including
where the stream ends in a torn line, holds a record that cannot be read, or fills a cap of the HTML
digest; a process that cannot start or dies leaves its reports to this one; a report that cannot be
written is still named, and the JSON report, closed last, still lists it as incomplete.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import json
import os
import random
from concurrent.futures.process import BrokenProcessPool

import pytest

from tests.report.samples import sample_results, write_reports
from vts.report import digest as digest_module
from vts.report import files, parts
from vts.report.digest import Digest
from vts.report.files import ReportsNotWritten, render_reports
from vts.report.stream import StreamError
from vts.results import CaseResult, Verdict


@pytest.fixture
def stream(tmp_path) -> str:
    """The sample results (every verdict) 40 times over, under distinct names."""
    results = [dataclasses.replace(result, name=f"{result.name}.{copy}")
               for copy in range(40) for result in sample_results()]
    source = tmp_path / "source"
    source.mkdir()
    return write_reports(source, results)["jsonl"]


def _render(stream: str, directory, alongside: bool, monkeypatch, **only: str) -> dict[str, bytes]:
    monkeypatch.setattr(files, "RENDER_ASIDE_BYTES", 0 if alongside else 1 << 60)
    paths = {kind: str(directory / f"r.{kind}") for kind in ("json", "junit", "html")}
    paths.update(only)
    written = render_reports(stream, **paths)
    assert [kind for kind, _ in written] == ["json", "junit", "html"]
    return {kind: open(path, "rb").read() for kind, path in paths.items()}


@pytest.mark.parametrize("count", [1, 2, 5])
def test_the_reports_rendered_in_parts_are_those_of_one_process(stream, tmp_path, monkeypatch, count):
    monkeypatch.setattr(parts, "part_count", lambda size: count)
    assert len(parts.line_ranges(stream, count)) == count
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one = _render(stream, tmp_path / "one", False, monkeypatch)
    many = _render(stream, tmp_path / "many", True, monkeypatch)
    assert one == many
    assert len(json.loads(many["json"])["cases"]) == 40 * len(sample_results())


def _bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def test_the_ranges_cover_the_stream_and_start_at_lines(stream):
    data = _bytes(stream)
    for count in (1, 2, 3, 8, 1000):
        ranges = parts.line_ranges(stream, count)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(end == start for (_, end), (start, _) in itertools.pairwise(ranges))
        assert all(data[start - 1:start] == b"\n" for start, _ in ranges[1:])
        assert len(ranges) <= min(count, data.count(b"\n"))


def _cut(stream: str, tmp_path, replace: bytes) -> str:
    """The stream with its middle line replaced by ``replace`` (a torn line, a record that cannot be read)."""
    lines = _bytes(stream).splitlines(keepends=True)
    lines[len(lines) // 2] = replace
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join(lines))
    return str(path)


def test_a_torn_line_in_a_middle_part_ends_the_results_as_in_one_process(stream, tmp_path, monkeypatch):
    cut = _cut(stream, tmp_path, b'{"case": {"name": "torn\n')
    monkeypatch.setattr(parts, "part_count", lambda size: 4)
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one = _render(cut, tmp_path / "one", False, monkeypatch)
    many = _render(cut, tmp_path / "many", True, monkeypatch)
    assert one == many
    assert 0 < len(json.loads(many["json"])["cases"]) < 40 * len(sample_results())


def test_a_record_that_cannot_be_read_is_named_by_its_line_in_the_whole_stream(stream, tmp_path, monkeypatch):
    cut = _cut(stream, tmp_path, b'{"case": {"name": "no family"}}\n')
    monkeypatch.setattr(parts, "part_count", lambda size: 4)
    errors = []
    for alongside in (False, True):
        monkeypatch.setattr(files, "RENDER_ASIDE_BYTES", 0 if alongside else 1 << 60)
        with pytest.raises(StreamError) as raised:
            render_reports(cut, junit=str(tmp_path / "r.xml"), html=str(tmp_path / "r.html"))
        errors.append(str(raised.value))
    assert errors[0] == errors[1]
    assert f":{len(_bytes(stream).splitlines()) // 2 + 1}: " in errors[0]


def test_without_a_json_report_the_others_are_still_rendered_in_parts(stream, tmp_path, monkeypatch):
    monkeypatch.setattr(parts, "part_count", lambda size: 3)
    written = {}
    for alongside in (False, True):
        monkeypatch.setattr(files, "RENDER_ASIDE_BYTES", 0 if alongside else 1 << 60)
        paths = {"junit": str(tmp_path / f"{alongside}.xml"), "html": str(tmp_path / f"{alongside}.html")}
        assert [kind for kind, _ in render_reports(stream, **paths)] == ["junit", "html"]
        written[alongside] = [_bytes(path) for path in paths.values()]
    assert written[False] == written[True]


def test_reports_whose_part_dies_are_rendered_here(stream, tmp_path, monkeypatch):
    def die(self, *args, **kwargs):
        future = concurrent.futures.Future()
        future.set_exception(BrokenProcessPool("a part's process was killed"))
        return future

    monkeypatch.setattr(parts, "part_count", lambda size: 2)
    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", die)
    (tmp_path / "one").mkdir()
    (tmp_path / "fallback").mkdir()
    one = _render(stream, tmp_path / "one", False, monkeypatch)
    assert _render(stream, tmp_path / "fallback", True, monkeypatch) == one


def _small_caps(monkeypatch) -> None:
    for name, value in (("MAX_GRID_CELLS", 10), ("MAX_FAILURE_GROUPS", 8), ("MAX_FAILURES_KEPT", 3),
                        ("MAX_FLAKY_KEPT", 2), ("MAX_BASELINE_KEPT", 2)):
        monkeypatch.setattr(digest_module, name, value)


def _drifting_results(seed: int, count: int = 400, parts_of: int = 4) -> list[CaseResult]:
    """Results whose cells and failure reasons drift through the run: each quarter uses 6 cells and 5
    reasons, overlapping the quarter before, 15 cells and 14 reasons in all (over the small caps)."""
    rng = random.Random(seed)
    failing = (Verdict.FAILED, Verdict.ERROR, Verdict.CRASH)
    results = []
    for index in range(count):
        quarter = index * parts_of // count
        cell = 3 * quarter + rng.randrange(6)
        reason = 3 * quarter + rng.randrange(5)
        verdict = failing[reason % 3] if rng.random() < 0.3 else rng.choice(
            [Verdict.PASSED, Verdict.PASSED, Verdict.SKIPPED, Verdict.FLAKY])
        extra: dict = {}
        if verdict.is_failure and rng.random() < 0.3:
            extra["baseline"] = "new-failure"
        elif rng.random() < 0.1:
            extra["baseline"] = rng.choice(["fixed", "still-passing", "lost-coverage"])
        results.append(CaseResult(
            f"case{index}", f"family{cell % 3}", verdict, f"reason {reason}",
            duration=rng.choice([0.25, 0.5, rng.random()]), operations=(f"OP{cell}",),
            operand_types=(f"T{cell % 2}",), extra=extra))
    return results


def _state(digest: Digest) -> dict:
    names = [r.name for r in [*digest.failures, *digest.flaky]]
    return {
        "grid": [(key, dict(counts)) for key, counts in digest.grid.items()],
        "counts": dict(digest.counts), "families": {f: dict(c) for f, c in digest.by_family.items()},
        "kept": names, "failing": digest.failing, "flaky": digest.flaky_count, "time": digest.case_us,
        "baseline": dict(digest.baseline),
        "baseline_cases": {s: [r.name for r in cases] for s, cases in digest.baseline_cases.items() if cases},
        "groups": [(reason, count, example.name, new, position)
                   for reason, (count, example, new, position) in digest.failure_groups.items()],
        "slowest": digest.slowest(), "pooled": digest.pooled,
    }


@pytest.mark.parametrize("seed", range(6))
def test_merged_digests_are_the_digest_of_the_whole_run_past_its_caps(monkeypatch, seed):
    _small_caps(monkeypatch)
    results = _drifting_results(seed)
    whole = Digest()
    for result in results:
        whole.add(result)
    assert whole.pooled  # the run passes the caps ...
    merged = Digest()
    for quarter in range(4):
        part = Digest()
        for result in results[quarter * 100:(quarter + 1) * 100]:
            part.add(result)
        assert not part.pooled  # ... no part does alone
        merged.merge(part)
    assert _state(merged) == _state(whole)


def _in_process_parts(stream: str, tmp_path, count: int) -> list[concurrent.futures.Future]:
    """The parts of ``stream``, rendered here (so that monkeypatched caps apply), as finished futures."""
    futures = []
    for index, (start, end) in enumerate(parts.line_ranges(stream, count)):
        directory = tmp_path / f"part{index}"
        directory.mkdir()
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_result(parts.render_part(stream, start, end, ("junit", "html"), str(directory)))
        futures.append(future)
    return futures


def _late_cell_results() -> list[CaseResult]:
    """A first half in 5 cells; a second half in 11 new ones, then back in the first half's first cell: the
    second half alone fills the grid's cap (10) before that cell comes back, the whole run does not."""
    cells = [0, 1, 2, 3, 4] * 10 + list(range(5, 16)) * 4 + [0] * 6
    return [CaseResult(f"case{index}", "family", Verdict.PASSED, duration=0.1, operations=(f"OP{cell}",),
                       operand_types=("T",)) for index, cell in enumerate(cells)]


@pytest.mark.parametrize(("results", "count", "pools"), [(_drifting_results(7), 4, False),
                                                          (_late_cell_results(), 2, True)])
def test_an_html_report_whose_part_pooled_cells_alone_is_rendered_the_serial_way(tmp_path, monkeypatch, results,
                                                                                 count, pools):
    """Parts that pooled nothing alone merge exactly; one that did cannot (only the whole run knows that its
    late cell had a place of its own), so the page is rendered from the whole stream."""
    _small_caps(monkeypatch)
    stream = write_reports(tmp_path, results)["jsonl"]
    futures = _in_process_parts(stream, tmp_path, count)
    assert len(futures) == count
    assert any(f.result().html.digest.pooled for f in futures) == pools
    aside = {"junit": str(tmp_path / "m.xml"), "html": str(tmp_path / "m.html")}
    written, failures = files._merge_parts(stream, aside, None, futures)
    assert (written, failures) == ([("junit", aside["junit"]), ("html", aside["html"])], [])
    files._render(stream, junit=str(tmp_path / "s.xml"), html=str(tmp_path / "s.html"))
    for kind in ("xml", "html"):
        assert (tmp_path / f"m.{kind}").read_bytes() == (tmp_path / f"s.{kind}").read_bytes()


def test_a_report_whose_process_cannot_start_is_rendered_here(stream, tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise RuntimeError("no process to be had")

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", refuse)
    (tmp_path / "one").mkdir()
    (tmp_path / "fallback").mkdir()
    one = _render(stream, tmp_path / "one", False, monkeypatch)
    assert _render(stream, tmp_path / "fallback", True, monkeypatch) == one


def test_a_report_rendered_in_parts_that_cannot_be_written_is_named_and_listed_incomplete(stream, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setattr(files, "RENDER_ASIDE_BYTES", 0)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    html = str(blocked / "r.html")
    with pytest.raises(ReportsNotWritten) as raised:
        render_reports(stream, json=str(tmp_path / "r.json"), junit=str(tmp_path / "r.xml"), html=html)
    assert [path for path, _ in raised.value.failures] == [html]
    assert [kind for kind, _ in raised.value.written] == ["json", "junit"]
    assert json.loads((tmp_path / "r.json").read_text())["incomplete"] == [html]


def test_an_html_report_opens_a_case_list_file_only_for_a_group_it_lists(tmp_path):
    from vts.report.html import HtmlReport

    passing = next(r for r in sample_results() if r.verdict is Verdict.PASSED)
    failing = next(r for r in sample_results() if r.verdict is Verdict.CRASH)
    report = HtmlReport(str(tmp_path / "r.html"), {}, None, False, scratch=str(tmp_path))
    report.add(passing)
    report.add(failing)
    part = report.export()
    assert sorted(part.files) == ["error", "passing"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["error.jsonl", "passing.jsonl"]
    merged = HtmlReport.merged(str(tmp_path / "merged.html"), {}, {}, False, [part])
    assert os.listdir(merged._directory) == []  # it lists its parts' cases, none of its own
    merged.close()
    page = (tmp_path / "merged.html").read_text(encoding="utf-8")
    assert json.dumps(passing.name) in page and json.dumps(failing.name) in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["error.jsonl", "merged.html", "passing.jsonl"]
