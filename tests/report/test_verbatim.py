"""The JSON report copies the run's own case lines, and only when the stream is what the run wrote.

Copied or rendered the slow way (decode, bound, encode again), the JSON report
must be the same bytes; a stream changed after it was written (same length or
not) is rendered the slow way, which bounds and cleans what it reads.
"""

from __future__ import annotations

import json
import math

import pytest

from vts.report import files as files_module
from vts.report.files import FileReports, render_reports
from vts.report.verbatim import EMPTY
from vts.results import CaseResult, Verdict

RESULTS = [
    CaseResult("add.add", "generated", Verdict.PASSED, duration=0.0123456789, operations=("ADD",),
               operand_types=("TENSOR_FLOAT32",), spec="add.json"),
    CaseResult("conv.conv", "generated", Verdict.FAILED, "out: 1/4 elements out of tolerance \u00e9\u4e2d",
               details=("worst at [0]: 1.5 != 1.25", "\x00bell\x07"),
               extra={"baseline": "new-failure", "nested": {"k": [1, 2.5, None, True]}, "nan": math.nan}),
    CaseResult("deadline/x", "deadline", Verdict.SKIPPED, "unsupported", duration=math.nan),
    CaseResult("validation/add.\u2028odd", "validation", Verdict.CRASH, "killed by SIGSEGV & <more>" + "x" * 5000),
] + [CaseResult(f"validation/add.{i}", "validation", Verdict.PASSED, duration=i / 1000) for i in range(50)]


def _run(tmp_path, name: str = "r") -> tuple[str, str]:
    stream, report = str(tmp_path / f"{name}.jsonl"), str(tmp_path / f"{name}.json")
    reports = FileReports({"driver": {"ref": "reference"}}, jsonl=stream, json_path=report)
    for result in RESULTS:
        reports.add(result)
    reports.finish(interrupted=False)
    return stream, report


@pytest.fixture
def copies(monkeypatch) -> list[int]:
    """How many case texts were copied from a stream (``vts.report.verbatim.case_texts``)."""
    counted: list[int] = []
    real = files_module.case_texts

    def counting(path, fingerprint):
        for text in real(path, fingerprint):
            counted.append(1)
            yield text

    monkeypatch.setattr(files_module, "case_texts", counting)
    return counted


def test_the_copied_report_is_the_slow_report_byte_for_byte(tmp_path, copies):
    stream, _ = _run(tmp_path)
    assert len(copies) == len(RESULTS), "the run's JSON report was not copied from its stream"
    render_reports(stream, json=str(tmp_path / "slow.json"))  # no fingerprint: decoded and encoded again
    assert (tmp_path / "slow.json").read_bytes() == (tmp_path / "r.json").read_bytes()
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert [case["name"] for case in cases] == [result.name for result in RESULTS]
    assert cases[1]["extra"]["nan"] == "nan" and cases[2]["duration"] == 0.0  # cleaned before the stream


@pytest.mark.parametrize("change", ["same length", "appended", "truncated"])
def test_a_stream_changed_after_it_was_written_is_rendered_the_slow_way(tmp_path, monkeypatch, change):
    written = {}
    real_render = files_module.render_reports

    def render_after_tampering(stream_path, **kwargs):
        with open(stream_path, "rb") as handle:
            data = handle.read()
        if change == "same length":  # another name, with a control character a copy would carry through
            data = data.replace(b'"name":"add.add"', b'"name":"x\\u0001"', 1)
        elif change == "appended":
            data = data.replace(b'{"summary"', b'{"case":{"name":"injected","family":"x","verdict":"passed"}}\n'
                                b'{"summary"', 1)
        else:
            data = data[:data.index(b'{"case"', 200)] + data[data.index(b'{"summary"'):]
        with open(stream_path, "wb") as handle:  # the harness's record (a memory file) changed under it
            handle.write(data)
        (tmp_path / "tampered.jsonl").write_bytes(data)
        written["fingerprint"] = kwargs.get("fingerprint")
        return real_render(stream_path, **kwargs)

    monkeypatch.setattr(files_module, "render_reports", render_after_tampering)
    _run(tmp_path)
    assert written["fingerprint"] is not None
    render_reports(str(tmp_path / "tampered.jsonl"), json=str(tmp_path / "slow.json"))
    assert (tmp_path / "r.json").read_bytes() == (tmp_path / "slow.json").read_bytes()
    names = [case["name"] for case in json.loads((tmp_path / "r.json").read_text())["cases"]]
    if change == "same length":
        assert names[0] == "x\ufffd"  # the slow way cleaned it
    elif change == "appended":
        assert "injected" in names
    else:
        assert len(names) < len(RESULTS)


def test_a_stream_whose_write_failed_is_never_copied(tmp_path, monkeypatch, copies):
    stream = str(tmp_path / "r.jsonl")
    reports = FileReports({"driver": {"ref": "reference"}}, jsonl=stream, json_path=str(tmp_path / "r.json"))
    reports.add(RESULTS[0])
    reports.stream._written = None  # as after a failed write (ResultStream._lost)
    reports.add(RESULTS[1])
    reports.finish(interrupted=False)
    assert not copies
    assert len(json.loads((tmp_path / "r.json").read_text())["cases"]) == 2


def test_errors_while_copying_are_the_slow_ways_errors(tmp_path, monkeypatch):
    """Writing the report fails that report (named, the others written); reading the stream is raised."""
    stream, _ = _run(tmp_path)
    with open(stream, "rb") as handle:
        fingerprint = EMPTY.after(handle.read())  # what the stream's writer kept for these bytes

    def full_disk(self, text):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(files_module.JsonReport, "add_text", full_disk)
        with pytest.raises(files_module.ReportsNotWritten) as raised:
            render_reports(stream, json=str(tmp_path / "full.json"), fingerprint=fingerprint)
        assert [path for path, _ in raised.value.failures] == [str(tmp_path / "full.json")]

    def unreadable(path, fingerprint):
        yield from ()
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files_module, "case_texts", unreadable)
    with pytest.raises(OSError, match="Input/output") as raised:
        render_reports(stream, json=str(tmp_path / "eio.json"), fingerprint=fingerprint)
    assert not isinstance(raised.value, files_module.ReportsNotWritten), "a stream read error charged to the report"
