"""Reading results files strictly, and rewriting expected-failures files (pure functions, no driver)."""

from __future__ import annotations

import json

import pytest

from vts.report.resultsfile import ResultsFileError, read_results
from vts.run.expectations import parse_file, update_expectations
from vts.run.selection import ExpectationList, Glob, glob_escape


def _case(name: str, verdict: str) -> str:
    return json.dumps({"case": {"name": name, "family": "generated", "verdict": verdict, "duration": 0.5}})


def _stream(tmp_path, *lines: str, name: str = "r.jsonl"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in ('{"nnvts_results": 1, "driver": {"name": "d"}}', *lines)))
    return str(path)


def test_a_complete_stream(tmp_path):
    path = _stream(tmp_path, _case("a", "passed"), _case("b", "failed"),
                   '{"summary": {"total": 2}, "interrupted": false}')
    meta, results = read_results(path)
    assert [r.name for r in results] == ["a", "b"]
    assert meta.complete and not meta.interrupted and meta.header["driver"] == {"name": "d"}


def test_a_stream_killed_mid_line_keeps_what_it_has(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"nnvts_results": 1}\n' + _case("a", "passed") + '\n{"case": {"name": "b", "fam')
    meta, results = read_results(str(path))
    assert [r.name for r in results] == ["a"]
    assert not meta.complete


def test_a_torn_line_before_the_end_names_file_and_line(tmp_path):
    path = _stream(tmp_path, _case("a", "passed"), "{oops", _case("b", "passed"))
    with pytest.raises(ResultsFileError, match=r"r.jsonl:3: not a JSON record"):
        list(read_results(path)[1])


def test_an_unknown_verdict_names_file_and_line(tmp_path):
    path = _stream(tmp_path, _case("a", "no_such_verdict"))
    with pytest.raises(ResultsFileError, match=r"r.jsonl:2: malformed case record"):
        list(read_results(path)[1])


def test_a_json_report_reads_like_a_stream(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"nnvts_results": 1, "driver": {}, "interrupted": True,
                                "cases": [{"name": "a", "family": "f", "verdict": "crash"}], "summary": {}}))
    meta, results = read_results(str(path))
    assert [(r.name, r.verdict.value) for r in results] == [("a", "crash")]
    assert meta.interrupted
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(ResultsFileError, match=r"bad\.json:1: neither a results stream nor a JSON report"):
        read_results(str(tmp_path / "bad.json"))


def test_expectation_globs_match_whole_names_and_escape_exactly():
    expectations = ExpectationList([Glob("conv.*_quant8"), Glob(glob_escape("odd[1]*name?")), Glob("add")])
    assert expectations.expects_failure("conv.nhwc_quant8")
    assert not expectations.expects_failure("conv.nhwc_quant8_signed")
    assert expectations.expects_failure("odd[1]*name?")
    assert not expectations.expects_failure("odd1xname!")
    assert not expectations.expects_failure("add.add")
    assert [t.text for t in expectations.unmatched_among(["conv.x_quant8", "add"])] == [glob_escape("odd[1]*name?")]


def test_update_keeps_comments_drops_fixed_entries_and_adds_new_failures(tmp_path):
    results = _stream(tmp_path, _case("conv.a", "failed"), _case("conv.b", "xfail"), _case("add.fixed", "passed"),
                      _case("mul.new", "crash"), _case("sub.flaky", "flaky"), _case("div.xpass", "xpass"))
    existing = ("# driver X\n# known failures\n\n"
                "# bug 7\nconv.*  # all convs\nadd.fixed\ndiv.xpass\nother_shard.case\n# trailing note\n")
    change = update_expectations(results, existing)
    assert change.added == ["mul.new"]
    assert change.dropped == ["add.fixed", "div.xpass"]
    assert change.text == ("# driver X\n# known failures\n\n# bug 7\nconv.*  # all convs\nmul.new\n"
                           "other_shard.case\n# trailing note\n")
    header, entries, trailer = parse_file(change.text)
    assert header == ["# driver X", "# known failures"] and trailer == ["# trailing note"]
    assert [e.pattern for e in entries] == ["conv.*", "mul.new", "other_shard.case"]


def test_update_of_a_new_file_lists_every_failing_case_sorted(tmp_path):
    results = _stream(tmp_path, _case("z.case", "timeout"), _case("a.case", "failed"), _case("m.case", "passed"))
    assert update_expectations(results, None).text == "a.case\nz.case\n"
