"""A large stream renders its HTML and JUnit reports in processes of their own, alongside the JSON report.

The files must be those one process would write, byte for byte; a process that cannot start leaves its
report to this one; a report that cannot be written is still named, and the JSON report, closed last,
still lists it as incomplete.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json

import pytest

from tests.report.samples import sample_results, write_reports
from vts.report import files
from vts.report.files import ReportsNotWritten, render_reports


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


def test_the_reports_rendered_alongside_are_those_of_one_process(stream, tmp_path, monkeypatch):
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one = _render(stream, tmp_path / "one", False, monkeypatch)
    many = _render(stream, tmp_path / "many", True, monkeypatch)
    assert one == many
    assert len(json.loads(many["json"])["cases"]) == 40 * len(sample_results())


def test_a_report_whose_process_cannot_start_is_rendered_here(stream, tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise RuntimeError("no process to be had")

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", refuse)
    (tmp_path / "one").mkdir()
    (tmp_path / "fallback").mkdir()
    one = _render(stream, tmp_path / "one", False, monkeypatch)
    assert _render(stream, tmp_path / "fallback", True, monkeypatch) == one


def test_a_report_rendered_alongside_that_cannot_be_written_is_named_and_listed_incomplete(stream, tmp_path,
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
