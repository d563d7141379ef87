"""The driver's ``--driver-option`` pairs (``header["driver"]["options"]``) are in every report.

The JSON report and the stream keep the object, JUnit lists the pairs in the ``nnvts.driver.options``
property, the HTML page in a "driver options" row; ``nnvts report`` and ``nnvts merge`` carry them on, and
merge refuses shards of different drivers or options.  Options read back from a file are untrusted: a
header with 10,000 of them is cut, one with a value that is not a string is refused.
"""

from __future__ import annotations

import copy
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.conftest import hand_add_float
from tests.report.samples import HEADER, sample_results, write_reports
from vts.report.header import CUT_KEY, MAX_DRIVER_OPTIONS, clean_driver_options
from vts.report.junit import OPTIONS_PROPERTY

XSD = os.path.join(os.path.dirname(__file__), "..", "data", "junit-10.xsd")
#: A value that would be markup if a report did not escape it.
SCRIPT = "<script>opt()</script>"
OPTIONS = {"cache_dir": "/tmp/c", "precision": "fp16", "zeta": SCRIPT}


def _header(options: dict | None = None, ref: str = "acme") -> dict:
    """The sample header with ``options`` as its driver's (None: a header from before options existed)."""
    header = copy.deepcopy(HEADER)
    header["driver"]["ref"] = ref
    if options is not None:
        header["driver"]["options"] = options
    return header


def _properties(junit: str) -> list[dict[str, str]]:
    """Each testsuite's properties, by name."""
    root = ET.parse(junit).getroot()
    return [{p.get("name"): p.get("value") for p in suite.find("properties")} for suite in root.iter("testsuite")]


def _stream_header(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.loads(handle.readline())


def _invoke(*argv: str):
    from vts.cli.main import main

    return CliRunner().invoke(main, list(argv))


def _shard(tmp_path: Path, name: str, options: dict | None, ref: str = "acme", results=None) -> str:
    """A complete results stream of the sample results run with ``options``."""
    directory = tmp_path / name
    directory.mkdir()
    return write_reports(directory, results=results, header=_header(options, ref))["jsonl"]


def test_the_json_report_and_the_stream_header_carry_the_options(tmp_path):
    files = write_reports(tmp_path, header=_header(OPTIONS))
    assert json.loads(Path(files["json"]).read_text(encoding="utf-8"))["driver"]["options"] == OPTIONS
    assert _stream_header(files["jsonl"])["driver"]["options"] == OPTIONS


def test_options_are_sorted_by_key_whatever_order_the_header_gave(tmp_path):
    files = write_reports(tmp_path, header=_header({"b": "2", "a": "1"}))
    assert list(json.loads(Path(files["json"]).read_text())["driver"]["options"]) == ["a", "b"]
    assert list(_stream_header(files["jsonl"])["driver"]["options"]) == ["a", "b"]


def test_junit_lists_the_options_in_one_property_of_every_suite(tmp_path):
    files = write_reports(tmp_path, header=_header(OPTIONS))
    suites = _properties(files["junit"])
    assert len(suites) > 1
    for properties in suites:
        assert properties[OPTIONS_PROPERTY] == f"cache_dir=/tmp/c,precision=fp16,zeta={SCRIPT}"
        assert properties["driver.name"].startswith("acme-npu")  # beside the driver's own properties


def test_junit_with_options_is_schema_valid(tmp_path):
    xmlschema = pytest.importorskip("xmlschema")
    files = write_reports(tmp_path, header=_header(OPTIONS))
    xmlschema.XMLSchema(XSD).validate(files["junit"])


@pytest.mark.parametrize("options", [{}, None], ids=["none-given", "old-header"])
def test_no_option_no_property_no_row(tmp_path, options):
    files = write_reports(tmp_path, header=_header(options))
    assert all(OPTIONS_PROPERTY not in properties for properties in _properties(files["junit"]))
    assert ">driver options<" not in Path(files["html"]).read_text(encoding="utf-8")
    driver = json.loads(Path(files["json"]).read_text())["driver"]
    assert driver.get("options", "absent") == ({} if options == {} else "absent")  # as the header had it


def test_html_shows_the_options_escaped(tmp_path):
    files = write_reports(tmp_path, header=_header(OPTIONS))
    page = Path(files["html"]).read_text(encoding="utf-8")
    assert ("<tr><th>driver options</th><td>cache_dir=/tmp/c, precision=fp16, "
            "zeta=&lt;script&gt;opt()&lt;/script&gt;</td></tr>") in page
    assert "<script>opt()" not in page


def test_nnvts_report_from_a_stream_keeps_the_options(tmp_path):
    stream = _shard(tmp_path, "run", OPTIONS)
    out = {kind: str(tmp_path / f"o.{kind}") for kind in ("json", "junit", "html", "jsonl")}
    done = _invoke("report", stream, *(f"--{kind}={path}" for kind, path in out.items()))
    assert done.exit_code == 0, done.output
    assert json.loads(Path(out["json"]).read_text())["driver"]["options"] == OPTIONS
    assert _stream_header(out["jsonl"])["driver"]["options"] == OPTIONS
    assert _properties(out["junit"])[0][OPTIONS_PROPERTY].startswith("cache_dir=/tmp/c,")
    assert "zeta=&lt;script&gt;" in Path(out["html"]).read_text(encoding="utf-8")


def _halves(tmp_path: Path, first: dict | None, second: dict | None, second_ref: str = "acme") -> list[str]:
    """Two shards, each with half the sample results."""
    results = sample_results()
    return [_shard(tmp_path, "one", first, results=results[:3]),
            _shard(tmp_path, "two", second, ref=second_ref, results=results[3:])]


def test_merge_of_shards_with_equal_options_keeps_them(tmp_path):
    shards = _halves(tmp_path, OPTIONS, dict(reversed(OPTIONS.items())))
    out = {kind: str(tmp_path / f"m.{kind}") for kind in ("json", "junit", "jsonl")}
    done = _invoke("merge", *shards, "--no-coverage-check", *(f"--{kind}={path}" for kind, path in out.items()))
    assert done.exit_code == 1, done.output  # the sample results fail; the merge itself went through
    report = json.loads(Path(out["json"]).read_text())
    assert report["driver"]["options"] == OPTIONS and len(report["cases"]) == len(sample_results())
    assert _stream_header(out["jsonl"])["driver"]["options"] == OPTIONS
    assert _properties(out["junit"])[0][OPTIONS_PROPERTY] == f"cache_dir=/tmp/c,precision=fp16,zeta={SCRIPT}"


def test_an_old_shard_without_options_merges_with_one_run_without_any(tmp_path):
    shards = _halves(tmp_path, None, {})
    done = _invoke("merge", *shards, "--no-coverage-check", "--json", str(tmp_path / "m.json"))
    assert done.exit_code == 1, done.output
    assert "different" not in done.output


@pytest.mark.parametrize(("second", "ref", "says"), [
    ({"precision": "fp32"}, "acme", 'with driver options {"precision": "fp32"}, but {first} with driver options '
                                    '{"precision": "fp16"}'),
    ({}, "acme", 'with driver options (no driver option), but {first} with driver options {"precision": "fp16"}'),
    ({"precision": "fp16"}, "other", 'with driver "other", but {first} with driver "acme"'),
], ids=["other-value", "no-option", "other-driver"])
def test_merge_refuses_shards_of_another_driver_or_other_options(tmp_path, second, ref, says):
    shards = _halves(tmp_path, {"precision": "fp16"}, second, second_ref=ref)
    out = {kind: tmp_path / f"m.{kind}" for kind in ("json", "junit", "html", "jsonl")}
    done = _invoke("merge", *shards, "--no-coverage-check", *(f"--{kind}={path}" for kind, path in out.items()))
    assert done.exit_code == 2, done.output
    [line] = done.stderr.splitlines()
    assert line.startswith(f"nnvts: error: {shards[1]}: run ") and says.replace("{first}", shards[0]) in line, line
    assert not any(path.exists() for path in out.values())


def test_merge_refuses_different_options_with_the_coverage_check_too(tmp_path):
    """The selection the shards recorded is read and enumerated first; the options are still checked."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "add.yaml").write_text(yaml.safe_dump(hand_add_float(), sort_keys=False))
    shards = []
    for name, options in (("one", {"precision": "fp16"}), ("two", {"precision": "fp32"})):
        header = _header(options)
        header["selection"] = {"specs": [str(specs)], "families": ["generated"]}
        (tmp_path / name).mkdir()
        shards.append(write_reports(tmp_path / name, header=header)["jsonl"])
    done = _invoke("merge", *shards, "--json", str(tmp_path / "m.json"))
    assert done.exit_code == 2, done.output
    assert "different selections" not in done.stderr and "with driver options" in done.stderr, done.stderr
    assert not (tmp_path / "m.json").exists()


def _hostile_stream(tmp_path: Path, options: object) -> str:
    path = tmp_path / "hostile.jsonl"
    header = {"nnvts_results": 1, "driver": {"ref": "acme", "name": "d", "options": options}}
    case = sample_results()[0].to_json()
    path.write_text("\n".join(json.dumps(r) for r in (header, {"case": case}, {"summary": {"total": 1}})) + "\n")
    return str(path)


def test_a_stream_with_ten_thousand_options_gives_bounded_reports(tmp_path):
    many = {f"k{n:05d}": "v" * 300 for n in range(10_000)}  # 3.5 MB: within a stream's line bound
    many["k00000"] = "x" * 50_000
    stream = _hostile_stream(tmp_path, many)
    out = {kind: str(tmp_path / f"o.{kind}") for kind in ("json", "junit", "html", "jsonl")}
    done = _invoke("report", stream, *(f"--{kind}={path}" for kind, path in out.items()))
    assert done.exit_code == 0, done.output
    for driver in (json.loads(Path(out["json"]).read_text())["driver"], _stream_header(out["jsonl"])["driver"]):
        options = driver["options"]
        assert len(options) == MAX_DRIVER_OPTIONS + 1 and list(options)[:2] == ["k00000", "k00001"]
        assert list(options)[-1] == CUT_KEY  # the first options by key, then how many were dropped
        assert options[CUT_KEY] == f"[cut: {10_000 - MAX_DRIVER_OPTIONS} more options]"
        assert options["k00000"].endswith(" bytes]") and len(options["k00000"]) <= 1024
    for kind in ("json", "junit", "html", "jsonl"):
        assert os.path.getsize(out[kind]) < 1 << 20, kind


@pytest.mark.parametrize(("options", "says"), [
    ({"precision": 16}, 'driver option "precision" is not a string (a number)'),
    ({"nested": {"a": "b"}}, 'driver option "nested" is not a string (an object)'),
    (["precision=fp16"], "driver options are not an object (an array)"),
    ("fp16", "driver options are not an object (a string)"),
], ids=["number", "object", "list", "string"])
@pytest.mark.parametrize("command", ["report", "merge"])
def test_options_that_are_not_an_object_of_strings_are_refused(tmp_path, options, says, command):
    stream = _hostile_stream(tmp_path, options)
    argv = ["report", stream] if command == "report" else ["merge", stream, "--no-coverage-check"]
    done = _invoke(*argv, "--json", str(tmp_path / "o.json"))
    assert done.exit_code == 2, done.output
    assert done.stderr == f"nnvts: error: {stream}: the header's {says}\n"
    assert not (tmp_path / "o.json").exists()


def test_cleaning_cleaned_options_changes_nothing():
    many = {f"k{n}": f"v{n}" for n in range(200)}
    once = clean_driver_options(many)
    assert clean_driver_options(once) == once and list(clean_driver_options(once)) == list(once)
    assert clean_driver_options({"a": 1, "b": None}) == {"a": "1", "b": "null"}  # visibly, as JSON text
    assert clean_driver_options("fp16") == {}
