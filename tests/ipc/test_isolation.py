"""Process isolation end to end: each misbehaving driver costs its own cases, and the reports stay valid.

A run over an ADD spec and a MUL spec with a driver that faults on MUL must
complete, give the MUL cases the fault's verdict with a reason that names
it, pass the ADD cases, and leave valid JSON, JUnit and JSON-lines reports.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import hand_add_float
from tests.fakes.misbehaving import faults
from tests.ipc.conftest import hand_mul_float, write_spec
from vts.report.stream import read_stream

#: What the reason of a faulty case must say, per driver.
REASONS = {
    "segfault_device": "killed by SIGSEGV during execute",
    "hang_device": "no answer within 4 s",
    "memory_hog_device": "ran out of memory (memory limit 512 MiB): MemoryError",
    "raising_device": "driver raised RuntimeError: driver bug: unexpected state in MUL kernel",
    "overread_device": "killed by SIGBUS during execute",
}


def _check_reports(tmp_path, expected_total: int) -> dict:
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["total"] == expected_total
    tree = ET.parse(tmp_path / "r.xml")  # well-formed JUnit
    assert int(tree.getroot().get("tests")) == expected_total
    header, cases, footer = read_stream(str(tmp_path / "r.jsonl"))
    assert header["driver"]["isolation"] == "process"
    assert len(list(cases)) == expected_total and footer is not None
    return report


@pytest.mark.parametrize("factory", sorted(faults()))
def test_each_fault_gets_its_verdict_and_the_run_goes_on(nnvts, add_mul_specs, tmp_path, factory):
    result = nnvts("run", "--driver", f"tests.fakes.misbehaving:{factory}", "--family", "generated",
                   "--timeout", "4", "--memory-limit", "512", "--json", str(tmp_path / "r.json"),
                   "--junit", str(tmp_path / "r.xml"), "--jsonl", str(tmp_path / "r.jsonl"), *add_mul_specs)
    assert result.returncode == 1, result.stdout + result.stderr
    report = _check_reports(tmp_path, 2)
    verdicts = {case["name"]: case for case in report["cases"]}
    assert verdicts["hand_add_float.add"]["verdict"] == "passed"
    mul = verdicts["hand_mul_float.mul"]
    assert mul["verdict"] == faults()[factory], mul
    assert REASONS[factory] in mul["reason"], mul["reason"]
    if mul["verdict"] == "crash":
        assert "crashed again when re-run alone on a fresh driver host" in mul["details"]


def test_segfault_report_names_the_crashing_frame(nnvts, add_mul_specs, tmp_path):
    result = nnvts("run", "--driver", "tests.fakes.misbehaving:segfault_device", "--family", "generated",
                   "--json", str(tmp_path / "r.json"), *add_mul_specs)
    assert result.returncode == 1
    (mul,) = [c for c in json.loads((tmp_path / "r.json").read_text())["cases"] if "mul" in c["name"]]
    assert any("_segfault" in line for line in mul["details"]), mul["details"]


def test_a_crash_that_does_not_repeat_alone_is_an_unreproduced_crash_not_a_pass(nnvts, add_mul_specs, tmp_path):
    marker = tmp_path / "crashed-once"
    result = nnvts("run", "--driver", "tests.fakes.misbehaving:crash_once_device", "--family", "generated",
                   "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"), *add_mul_specs,
                   NNVTS_TEST_CRASH_MARKER=str(marker), NNVTS_SANDBOX="none")
    assert result.returncode == 1, result.stdout + result.stderr
    assert marker.exists()
    report = json.loads((tmp_path / "r.json").read_text())
    (mul,) = [c for c in report["cases"] if "mul" in c["name"]]
    assert mul["verdict"] == "unreproduced_crash"
    assert "killed by SIGSEGV" in mul["reason"] and "not when it was re-run alone" in mul["reason"]
    assert mul["extra"]["rerun_verdict"] == "passed"
    assert report["summary"]["unreproduced_crash"] == 1 and report["summary"]["passed"] == 1
    junit = (tmp_path / "r.xml").read_text()
    assert "<failure message=" in junit and "not when it was re-run alone" in junit
    assert "unreproduced_crash" in result.stdout


def test_allow_unreproduced_crashes_keeps_the_verdict_but_not_the_exit_status(nnvts, add_mul_specs, tmp_path):
    marker = tmp_path / "crashed-once"
    result = nnvts("run", "--driver", "tests.fakes.misbehaving:crash_once_device", "--family", "generated",
                   "--allow-unreproduced-crashes", "--json", str(tmp_path / "r.json"), "--html",
                   str(tmp_path / "r.html"), *add_mul_specs, NNVTS_TEST_CRASH_MARKER=str(marker), NNVTS_SANDBOX="none")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["unreproduced_crash"] == 1
    assert "unreproduced_crash" in (tmp_path / "r.html").read_text()


def test_many_crashes_in_one_run(nnvts, tmp_path):
    """Every MUL case crashes the host; each is re-run and blamed, and the ADD cases between them pass."""
    specs = [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float(models=3))]
    result = nnvts("run", "--driver", "tests.fakes.misbehaving:segfault_device", "--family", "generated",
                   "--json", str(tmp_path / "r.json"), *specs)
    assert result.returncode == 1
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["crash"] == 3 and report["summary"]["passed"] == 1


@pytest.mark.parametrize("hal", ["aidl-v4", "1.3"])
def test_in_and_out_of_process_results_are_identical_on_the_reference_driver(nnvts, add_mul_specs, tmp_path, hal):
    families = ["--family", "generated", "--family", "validation", "--family", "fenced",
                "--family", "dynamic_output_shape", "--family", "memory_domain"]
    runs = {}
    for mode in ("process", "in_process"):
        path = tmp_path / f"{mode}.json"
        extra = ["--in-process"] if mode == "in_process" else []
        # Either interface both ways (across the protocol the reference grants aidl:4, or none with hal=1.3);
        # one worker: the report lists the cases in the order they ran.
        result = nnvts("run", "--driver", "reference", "--driver-option", f"hal={hal}", "-j", "1", *families, "--json",
                       str(path), *extra, *add_mul_specs)
        assert result.returncode == 0, result.stdout + result.stderr
        runs[mode] = [(c["name"], c["verdict"], c["reason"], c.get("details")) for c in
                      json.loads(path.read_text())["cases"]]
    assert runs["process"] == runs["in_process"]
    assert len(runs["process"]) > 100


def test_driver_start_failures_are_usage_errors(nnvts, add_mul_specs, tmp_path):
    missing = nnvts("run", "--driver", "exec:/nonexistent/driver", *add_mul_specs)
    assert missing.returncode == 2
    assert "did not start" in missing.stderr and "/nonexistent/driver" in missing.stderr
    broken = nnvts("run", "--driver", "tests.fakes.no_such_module:device", *add_mul_specs)
    assert broken.returncode == 2 and "no_such_module" in broken.stderr
    in_process = nnvts("run", "--driver", "exec:/bin/true", "--in-process", *add_mul_specs)
    assert in_process.returncode == 2 and "cannot run in process" in in_process.stderr


def test_cases_after_a_restart_do_not_reuse_the_dead_hosts_prepared_model(nnvts, tmp_path):
    """The validation family caches one prepared model per model; a restart must not leave it stale."""
    specs = [write_spec(tmp_path, hand_mul_float())]
    marker = tmp_path / "crashed-once"
    result = nnvts("run", "--driver", "tests.fakes.misbehaving:crash_once_device", "--family", "validation",
                   "-k", "remove_input or fenced_null", "--json", str(tmp_path / "r.json"), *specs,
                   "--allow-unreproduced-crashes", NNVTS_TEST_CRASH_MARKER=str(marker), NNVTS_SANDBOX="none")
    assert result.returncode == 0, result.stdout + result.stderr
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert len(cases) == 7 and sorted(c["verdict"] for c in cases) == ["passed"] * 6 + ["unreproduced_crash"]
    assert sum("host_died_first_attempt" in c.get("extra", {}) for c in cases) == 1


def test_the_driver_host_imports_the_harness_vts_whatever_the_working_directory(tmp_path, monkeypatch):
    """Run from inside another checkout, the host must not import that checkout's ``vts`` (``python -m`` puts
    the working directory first on the path; the host is started with ``-P``)."""
    from vts.ipc.process import spawn

    decoy = tmp_path / "vts"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the vts of the working directory was imported')\n")
    monkeypatch.chdir(tmp_path)
    host = spawn("reference")
    try:
        assert host.device.get_version_string()
    finally:
        host.stop()


def test_an_exec_driver_that_refuses_its_options_is_a_usage_error_under_j2(nnvts, add_mul_specs):
    """Under -j N the parent starts an exec: driver once before the workers: its refusal is exit status 2."""
    first = f"exec:{sys.executable} -m tests.fakes.protocol_v1"
    refused = nnvts("run", "--driver", first, "--driver-option", "name=x", "-j", "2", *add_mul_specs)
    assert refused.returncode == 2 and "accepts no options" in refused.stderr, refused.stdout + refused.stderr
    missing = nnvts("run", "--driver", "exec:/nonexistent/driver", "-j", "2", *add_mul_specs)
    assert missing.returncode == 2 and "/nonexistent/driver" in missing.stderr
