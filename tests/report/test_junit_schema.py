"""The JUnit report validates against the schema CI servers use (Jenkins xUnit's junit-10.xsd)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.report.samples import write_reports
from vts.results import CaseResult, Verdict

xmlschema = pytest.importorskip("xmlschema")

XSD = os.path.join(os.path.dirname(__file__), "..", "data", "junit-10.xsd")


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(XSD)


def _cases(root):
    return {c.get("name"): c for c in root.iter("testcase")}


def test_report_with_every_verdict_and_hostile_strings_is_schema_valid(tmp_path, schema):
    files = write_reports(tmp_path)
    schema.validate(files["junit"])  # raises with the path of the first invalid node


def test_interrupted_and_killed_runs_are_schema_valid_and_marked(tmp_path, schema):
    files = write_reports(tmp_path, interrupted=True)
    schema.validate(files["junit"])
    root = ET.parse(files["junit"]).getroot()
    for suite in root.iter("testsuite"):
        properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert properties["nnvts.interrupted"] == "true"
    assert int(root.get("tests")) == 7 and int(root.get("errors")) == 3  # crash, error, timeout: the cases that ran


def test_an_interrupted_run_with_no_case_still_says_so(tmp_path, schema):
    files = write_reports(tmp_path, results=[], interrupted=True)
    schema.validate(files["junit"])
    root = ET.parse(files["junit"]).getroot()
    assert root.get("tests") == "0"
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["nnvts.interrupted"] == "true" and properties["driver.version"] == "1.2.3"


def test_properties_name_driver_versions_selection_and_seed(tmp_path):
    files = write_reports(tmp_path)
    root = ET.parse(files["junit"]).getroot()
    for suite in root.iter("testsuite"):
        properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert properties["driver.version"] == "1.2.3" and properties["driver.type"] == "ACCELERATOR"
        assert properties["driver.name"].startswith("acme-npu")
        assert properties["nnvts.version"] == "0.1.0"
        assert properties["selection.keyword"] == "add or conv"
        assert properties["seed"] == "1234" and properties["nnvts.interrupted"] == "false"


def test_verdicts_map_to_junit_elements(tmp_path):
    files = write_reports(tmp_path)
    cases = _cases(ET.parse(files["junit"]).getroot())
    assert cases["add.add"].find("*") is None  # passed: an empty testcase
    assert cases["conv.conv"].find("failure").get("type") == "failed"
    assert cases["lstm.lstm"].find("skipped") is not None
    crash = cases["validation/add.x"]
    assert crash.find("error").get("type") == "crash"
    assert "segfault in acme_npu_exec" in crash.find("system-out").text  # the driver's stderr tail
    assert cases["timeout.case"].find("error").get("type") == "timeout"


def test_flaky_case_passes_with_a_flaky_failure_per_failed_attempt(tmp_path, schema):
    files = write_reports(tmp_path)
    flaky = _cases(ET.parse(files["junit"]).getroot())["mul.flaky"]
    assert flaky.find("failure") is None and flaky.find("error") is None
    attempts = flaky.findall("flakyFailure")
    assert len(attempts) == 1 and "out of tolerance" in attempts[0].get("message")


def test_failing_on_every_attempt_has_rerun_failures_and_an_unknown_failing_verdict_is_an_error(tmp_path, schema):
    attempts = [{"verdict": "failed", "reason": f"attempt {i}", "duration": 0.1} for i in range(3)]
    attempts.append({"verdict": "crash", "reason": "attempt 3", "duration": 0.1})
    results = [CaseResult("always.fails", "generated", Verdict.FAILED, "attempt 0", extra={"attempts": attempts})]
    files = write_reports(tmp_path, results)
    schema.validate(files["junit"])
    case = _cases(ET.parse(files["junit"]).getroot())["always.fails"]
    assert case.find("failure") is not None
    assert [r.get("message") for r in case.findall("rerunFailure")] == ["attempt 1", "attempt 2"]
    assert [r.get("type") for r in case.findall("rerunError")] == ["crash"]


def test_killed_run_stream_without_footer_renders_as_incomplete(tmp_path, schema):
    from vts.report.files import render_reports

    files = write_reports(tmp_path)
    lines = Path(files["jsonl"]).read_text(encoding="utf-8").splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:-1]) + '\n{"case": {"na')  # footer gone, last record torn
    written = render_reports(str(torn), junit=str(tmp_path / "t.xml"), html=str(tmp_path / "t.html"))
    assert [kind for kind, _ in written] == ["junit", "html"]
    schema.validate(str(tmp_path / "t.xml"))
    root = ET.parse(tmp_path / "t.xml").getroot()
    properties = {p.get("name"): p.get("value") for p in root.find("testsuite/properties")}
    assert properties["nnvts.incomplete"].startswith("true")
    assert 'id="incomplete"' in (tmp_path / "t.html").read_text()


def test_the_schema_rejects_what_ci_servers_would_not_read(tmp_path, schema):
    """A check that the validation can fail: an attribute of our own on a suite is not allowed."""
    files = write_reports(tmp_path)
    text = Path(files["junit"]).read_text(encoding="utf-8").replace("<testsuite ", '<testsuite interrupted="true" ', 1)
    assert not schema.is_valid(text)


def test_a_real_crash_gives_a_valid_report_with_the_driver_stderr(tmp_path, schema):
    import subprocess
    import sys

    root_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    junit = tmp_path / "r.xml"
    result = subprocess.run(
        [sys.executable, "-m", "cli", "run", "-q", "--driver", "tests.fakes.misbehaving:segfault_device",
         "--family", "generated", "-k", "mul_binary.broadcast and not relaxed and not float16", "--timeout", "30",
         "--junit", str(junit)],
        cwd=root_dir, env=dict(os.environ, PYTHONPATH=root_dir), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    schema.validate(str(junit))
    crashed = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("error") is not None]
    assert crashed and all(c.find("error").get("type") == "crash" for c in crashed)
    assert "Segmentation fault" in crashed[0].find("system-out").text


def test_the_flaky_verdict_passes_with_its_failed_attempts(tmp_path, schema):
    attempts = [{"verdict": "failed", "reason": "off by 2", "duration": 0.1},
                {"verdict": "passed", "reason": "", "duration": 0.1}]
    results = [CaseResult("flaky.case", "generated", Verdict.FLAKY, "passed on attempt 2",
                          extra={"attempts": attempts})]
    files = write_reports(tmp_path, results)
    schema.validate(files["junit"])
    root = ET.parse(files["junit"]).getroot()
    case = _cases(root)["flaky.case"]
    assert case.find("failure") is None and case.find("error") is None
    assert [f.get("message") for f in case.findall("flakyFailure")] == ["off by 2"]
    assert root.get("failures") == "0" and root.get("errors") == "0"
