"""Every report stays valid and bounded whatever a driver says (hostile strings, huge messages)."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from tests.report.samples import HOSTILE, write_reports
from vts.report.sanitize import MARKER_ROOM, MAX_MESSAGE_BYTES, clean, cut
from vts.results import CaseResult, Verdict

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _strict_json(text: str):
    def reject(constant: str):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


def test_clean_removes_what_xml_cannot_hold_and_keeps_the_rest():
    cleaned = clean(HOSTILE)
    assert not _NOT_XML.search(cleaned)
    assert "\x1b" not in cleaned and "\x85" not in cleaned  # terminal escapes, C1 included
    assert "]]>" in cleaned and "</script>" in cleaned  # legal characters: escaping is the writer's job
    cleaned.encode("utf-8")  # no lone surrogate left: encodable


def test_cut_bounds_a_message_and_says_how_much_was_dropped():
    message = "é" * 10_000  # 20,000 UTF-8 bytes
    short = cut(message, 1000)
    assert len(short.encode()) < 1100
    assert short.endswith(f"…[cut: {20_000 - 2 * ((1000 - MARKER_ROOM) // 2)} bytes]") and cut(short, 1000) == short
    assert cut("small", 1000) == "small"


def test_junit_parses_strictly_with_hostile_strings(tmp_path):
    files = write_reports(tmp_path)
    raw = Path(files["junit"]).read_bytes()
    raw.decode("utf-8")  # strict UTF-8
    root = ET.fromstring(raw)  # expat: a well-formedness error raises
    error = next(c for c in root.iter("testcase") if c.get("name", "").startswith("hostile."))
    message = error.find("error").get("message")
    assert "]]>" in message and "</script>" in message and "[bold red]markup[/]" in message
    assert not _NOT_XML.search(message)
    assert "\ufffd" in message  # what could not be kept is visibly replaced, not silently dropped


def test_json_reports_are_strict_json_with_hostile_strings(tmp_path):
    files = write_reports(tmp_path)
    report = _strict_json(Path(files["json"]).read_text(encoding="utf-8"))
    assert report["driver"]["name"].startswith("acme-npu")
    for line in Path(files["jsonl"]).read_text(encoding="utf-8").splitlines():
        _strict_json(line)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.in_script = False
        self.data = ""

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.in_script, self.data = True, ""

    def handle_endtag(self, tag):
        if tag == "script":
            self.scripts.append(self.data)
            self.in_script = False

    def handle_data(self, data):
        if self.in_script:
            self.data += data


def test_html_cannot_be_broken_out_of_by_a_driver_string(tmp_path):
    files = write_reports(tmp_path)
    page = Path(files["html"]).read_text(encoding="utf-8")
    collector = _Collector()
    collector.feed(page)
    # Exactly the page's own two scripts: the case data and the code; a driver's </script> ended neither.
    assert len(collector.scripts) == 2
    data = _strict_json(collector.scripts[0])
    hostile = next(c for c in data["cases"] if c[0].startswith("hostile."))
    assert "</script><script>alert(1)</script>" in hostile[4]  # intact as data
    assert "<script>alert(1)" not in page  # never as markup
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # escaped in the server-rendered detail
    assert not _NOT_XML.search(page)


def test_a_50_mb_message_gives_bounded_reports(tmp_path):
    huge = "x" * (50 << 20)
    results = [CaseResult(f"big.{i}", "generated", Verdict.FAILED, huge, details=(huge,) * 3,
                          extra={"blob": huge}) for i in range(3)]
    files = write_reports(tmp_path, results)
    for kind in ("json", "junit", "html", "jsonl"):
        size = os.path.getsize(files[kind])
        assert size < 40 * MAX_MESSAGE_BYTES * len(results), (kind, size)
    report = json.loads(Path(files["json"]).read_text(encoding="utf-8"))
    assert report["cases"][0]["reason"].endswith(f"…[cut: {(50 << 20) - (MAX_MESSAGE_BYTES - MARKER_ROOM)} bytes]")


def test_in_process_run_survives_a_driver_message_with_a_lone_surrogate(tmp_path):
    from click.testing import CliRunner

    from vts.cli.main import main

    specs = tmp_path / "specs"
    specs.mkdir()
    import yaml

    from tests.conftest import hand_add_float

    (specs / "add.yaml").write_text(yaml.safe_dump(hand_add_float(), sort_keys=False))
    result = CliRunner().invoke(main, [
        "run", "--in-process", "--driver", "tests.fakes.hostile_reports:create", "--specs", str(specs),
        "--family", "generated", "--junit", str(tmp_path / "r.xml"), "--html", str(tmp_path / "r.html"),
        "--json", str(tmp_path / "r.json")])
    assert result.exit_code == 1, result.output + repr(result.exception)
    root = ET.parse(tmp_path / "r.xml").getroot()
    failure = root.find(".//failure")
    assert failure is not None and "lone" in failure.get("message")
    assert os.path.getsize(tmp_path / "r.xml") < 64 * 1024  # the 5 MB message was cut


def test_non_finite_numbers_from_a_stream_stay_strict_json(tmp_path):
    results = [CaseResult("nan.case", "generated", Verdict.FAILED, "x", duration=float("nan"),
                          extra={"ratio": float("inf"), "nested": [float("nan")]})]
    files = write_reports(tmp_path, results)
    case = _strict_json(Path(files["json"]).read_text(encoding="utf-8"))["cases"][0]
    assert case["duration"] == 0.0 and case["extra"] == {"ratio": "inf", "nested": ["nan"]}
    collector = _Collector()
    collector.feed(Path(files["html"]).read_text(encoding="utf-8"))
    _strict_json(collector.scripts[0])
