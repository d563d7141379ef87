"""Reports: the JSON and JUnit files are valid, complete, and survive interruption."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from vts.report.files import FileReports
from vts.report.stream import ResultStream, read_stream
from vts.results import CaseResult, Verdict

RESULTS = [
    CaseResult("add.add", "generated", Verdict.PASSED, duration=0.01, operations=("ADD",),
               operand_types=("TENSOR_FLOAT32",)),
    CaseResult("conv.conv", "generated", Verdict.FAILED, "sync execution: out: 1/4 elements out of tolerance",
               details=("out: 1/4 elements out of tolerance; worst at [0]",)),
    CaseResult("lstm.lstm", "generated", Verdict.SKIPPED, "unsupported: LSTM"),
    CaseResult("validation/add.x", "validation", Verdict.CRASH, "killed by SIGSEGV & <more>"),
]


def test_json_report_has_stable_keys_and_summary(tmp_path):
    reports = FileReports({"driver": {"ref": "reference"}}, jsonl=str(tmp_path / "r.jsonl"),
                          json_path=str(tmp_path / "r.json"), junit=str(tmp_path / "r.xml"))
    for result in RESULTS:
        reports.add(result)
    reports.finish(interrupted=False)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["total"] == 4
    assert report["summary"]["passed"] == 1 and report["summary"]["crash"] == 1
    assert report["interrupted"] is False
    assert [c["name"] for c in report["cases"]] == [r.name for r in RESULTS]
    assert {"name", "family", "verdict", "reason"} <= set(report["cases"][1])
    assert report["cases"][1]["verdict"] == "failed"


def test_junit_report_is_valid_xml_with_one_suite_per_family(tmp_path):
    reports = FileReports({}, json_path=None, junit=str(tmp_path / "r.xml"))
    for result in RESULTS:
        reports.add(result)
    reports.finish(interrupted=True)
    root = ET.parse(tmp_path / "r.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"generated", "validation"}
    assert suites["generated"].get("failures") == "1" and suites["generated"].get("skipped") == "1"
    assert suites["validation"].get("errors") == "1"
    failure = root.find(".//failure")
    assert failure is not None and "elements out of tolerance" in failure.get("message")


def test_stream_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "s.jsonl"
    stream = ResultStream(str(path), {"driver": "x"})
    for result in RESULTS[:2]:
        stream.add(result)
    # Simulate a kill in the middle of writing the third record: no footer, half a line.
    stream._file.write('{"case": {"name": "half')
    stream._file.flush()
    header, cases, footer = read_stream(str(path))
    assert header["nnvts_results"] == 1
    assert [c.name for c in cases] == ["add.add", "conv.conv"]
    assert footer is None


def test_html_report_lists_every_case_and_escapes(tmp_path):
    reports = FileReports({"driver": {"name": "acme-npu", "version": "1.0"}}, html_path=str(tmp_path / "r.html"))
    for result in RESULTS:
        reports.add(result)
    reports.finish(interrupted=False)
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "acme-npu" in page
    assert "conv.conv" in page and "lstm.lstm" in page
    assert '["add.add",' in page  # passing cases are listed too (as data the page renders)
    assert "killed by SIGSEGV & \\u003cmore>" in page  # reasons are data, with no "<" that could end the script


def test_no_stream_is_written_or_read_when_no_report_is_asked(tmp_path, monkeypatch):
    import tempfile

    import vts.report.files as files_module

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(files_module, "render_reports", lambda *a, **k: pytest.fail("stream read back"))
    reports = FileReports({"driver": {"ref": "x"}})
    reports.add(CaseResult(name="a", family="f", verdict=Verdict.PASSED))
    reports.add(CaseResult(name="b", family="f", verdict=Verdict.FAILED, reason="no"))
    reports.finish(False)
    assert reports.stream.summary()["total"] == 2 and reports.stream.summary()["failed"] == 1
    assert list(tmp_path.iterdir()) == [] and reports.written == []


def test_a_kept_stream_is_flushed_after_every_case(tmp_path):
    path = tmp_path / "run.jsonl"
    stream = ResultStream(str(path), {"driver": {"ref": "x"}})
    stream.add(CaseResult(name="a", family="f", verdict=Verdict.PASSED))
    assert len(path.read_text().splitlines()) == 2  # header and the case, before finish
    stream.finish(False)
