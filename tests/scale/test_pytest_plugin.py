"""The pytest plugin: the same cases, verdicts and reasons as ``nnvts run``, also under ``pytest -n 2``."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.ipc.conftest import ROOT, hand_mul_float, nnvts_env, write_spec
from tests.scale.conftest import QUANT_BROKEN, cases_of

#: Families with device-level cases (discovery) and model cases (generated), over the bundled specs.
FAMILIES = ("generated", "discovery")


def pytest_run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=ROOT,
                          env=nnvts_env(**env), capture_output=True, text=True, timeout=600)


def junit_outcomes(path) -> dict[str, dict]:
    """Case name -> pytest outcome ("passed", "failed", "skipped", "xfailed"), message and nnvts verdict."""
    out: dict[str, dict] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        assert name not in out, f"{name} collected twice"
        prop = case.find("properties/property[@name='nnvts_verdict']")
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                message = element.get("message", "") + "\n" + (element.text or "")
                outcome = "xfailed" if tag == "skipped" and element.get("type") == "pytest.xfail" else \
                    ("failed" if tag != "skipped" else "skipped")
        out[name] = {"outcome": outcome, "message": message, "verdict": prop.get("value") if prop is not None else None}
    return out


def expected_outcome(verdict: str) -> str:
    from vts.results import Verdict

    if Verdict(verdict).is_failure:
        return "failed"
    return {"skipped": "skipped", "xfail": "xfailed"}.get(verdict, "passed")


def test_pytest_xdist_gives_the_verdicts_of_nnvts_run(nnvts, tmp_path):
    xfail = tmp_path / "xfail.txt"
    # One failing case (xfail) and one passing case (xpass: a failure) exercise the expectation mapping.
    xfail.write_text("add_binary.relu_quant8\nadd_binary.relu\n")
    family_args = [a for f in FAMILIES for a in ("--family", f)]
    run = nnvts("run", "--driver", QUANT_BROKEN, *family_args, "--expected-failures", str(xfail),
                "--jsonl", str(tmp_path / "run.jsonl"))
    assert run.returncode == 1, run.stderr
    by_nnvts = cases_of(tmp_path / "run.jsonl")
    assert {"passed", "failed", "xfail", "xpass"} <= {c["verdict"] for c in by_nnvts.values()}

    plugin_args = [a for f in FAMILIES for a in ("--nnvts-family", f)]
    result = pytest_run("-n", "2", "--nnvts-specs", "generated_tests", "--nnvts-driver", QUANT_BROKEN,
                        *plugin_args, "--nnvts-expected-failures", str(xfail), "--junitxml", str(tmp_path / "p.xml"),
                        "--nnvts-jsonl", str(tmp_path / "p.jsonl"))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert "gw1" in result.stdout  # two xdist workers did run
    by_pytest = junit_outcomes(tmp_path / "p.xml")
    assert set(by_pytest) == set(by_nnvts)
    for name, case in by_nnvts.items():
        got = by_pytest[name]
        assert got["verdict"] == case["verdict"], name
        assert got["outcome"] == expected_outcome(case["verdict"]), name
        if got["outcome"] != "passed":
            assert case["reason"] in got["message"], (name, case["reason"], got["message"])
    # The controller's nnvts stream holds the same records (reasons and details too).
    streamed = cases_of(tmp_path / "p.jsonl")
    assert {n: (c["verdict"], c["reason"], c.get("details")) for n, c in streamed.items()} == \
        {n: (c["verdict"], c["reason"], c.get("details")) for n, c in by_nnvts.items()}


def test_last_failed_reruns_only_the_failed_items(tmp_path):
    args = ("--nnvts-specs", "generated_tests", "--nnvts-family", "generated", "--nnvts-driver", QUANT_BROKEN,
            "-k", "relu_clamp or abs_elementwise", "-p", "cacheprovider", "-o", f"cache_dir={tmp_path / 'cache'}")
    first = pytest_run(*args, "--nnvts-jsonl", str(tmp_path / "first.jsonl"))
    assert first.returncode == 1
    failed = {n for n, c in cases_of(tmp_path / "first.jsonl").items() if c["verdict"] == "failed"}
    assert failed and len(failed) < len(cases_of(tmp_path / "first.jsonl"))
    again = pytest_run(*args, "--lf", "--nnvts-jsonl", str(tmp_path / "again.jsonl"))
    assert again.returncode == 1
    assert set(cases_of(tmp_path / "again.jsonl")) == failed


@pytest.mark.parametrize(("factory", "verdict"), [("segfault_device", "crash"), ("hang_device", "timeout")])
def test_a_crashing_or_hanging_driver_fails_the_item_with_the_reason(nnvts, tmp_path, factory, verdict):
    spec = write_spec(tmp_path, hand_mul_float())
    driver = f"tests.fakes.misbehaving:{factory}"
    run = nnvts("run", "--driver", driver, "--family", "generated", "--timeout", "2", "--jsonl",
                str(tmp_path / "run.jsonl"), spec)
    (case,) = cases_of(tmp_path / "run.jsonl").values()
    assert case["verdict"] == verdict and run.returncode == 1
    result = pytest_run("--nnvts-specs", spec, "--nnvts-driver", driver, "--nnvts-family", "generated",
                        "--nnvts-timeout", "2", "--junitxml", str(tmp_path / "p.xml"))
    assert result.returncode == 1
    got = junit_outcomes(tmp_path / "p.xml")[case["name"]]
    assert got["outcome"] == "failed" and got["verdict"] == verdict
    assert f"{verdict}: {case['reason']}" in result.stdout


def test_pytest_selection_tools_apply_to_cases(tmp_path):
    result = pytest_run("--nnvts-specs", "generated_tests", "--nnvts-family", "generated", "--nnvts-driver",
                        QUANT_BROKEN, "-k", "relu_clamp", "-x")  # (the project's addopts has -q)
    assert result.returncode == 1
    assert "1 failed" in result.stdout and "stopping after 1 failures" in result.stdout
    collected = pytest_run("--nnvts-specs", "generated_tests", "--nnvts-family", "generated", "--collect-only",
                           "-k", "add_binary and not quant")
    names = [line.split("::")[-1] for line in collected.stdout.splitlines() if "::" in line]
    assert names and all(n.startswith("add_binary.") and "quant" not in n for n in names)


def test_an_unmatched_expectation_is_a_usage_error(tmp_path):
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("no_such_case\n")
    result = pytest_run("--nnvts-specs", "generated_tests", "--nnvts-family", "generated",
                        "--nnvts-expected-failures", str(xfail), "--collect-only")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "'no_such_case' (line 1)" in result.stderr


def test_without_nnvts_options_the_plugin_collects_nothing(tmp_path):
    result = pytest_run("--collect-only", "generated_tests")
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout


def test_remote_style_xdist_workers_run_from_their_own_copy_of_the_specs(tmp_path):
    """Workers in another directory with the specs sent over (``--tx ...//chdir=`` and ``--rsyncdir``)."""
    remote = tmp_path / "remote"
    remote.mkdir()
    result = pytest_run("-d", "--tx", f"2*popen//chdir={remote}", "--rsyncdir=generated_tests",
                        "--nnvts-specs=generated_tests", "--nnvts-family", "generated", "-k", "relu_clamp",
                        f"--nnvts-jsonl={tmp_path / 'r.jsonl'}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert (remote / "generated_tests" / "relu_clamp.json").exists()
    cases = cases_of(tmp_path / "r.jsonl")
    assert cases and all(c["verdict"] == "passed" for c in cases.values())


def test_case_index_names_the_cases_of_iter_cases_in_order_and_rebuilds_them():
    from vts.run.caseindex import CaseIndex
    from vts.run.runner import Selection, iter_cases
    from vts.spec.loader import iter_spec_paths

    specs = ["generated_tests/relu_clamp.json", "generated_tests/add_binary.json"]
    families = ["discovery", "generated", "validation"]
    index = CaseIndex(families)
    refs = index.device_refs() + [ref for path in iter_spec_paths(specs) for ref in index.file_refs(path)]
    expected = [(f.name, c.name) for f, c in iter_cases(Selection(spec_paths=specs, families=families))]
    assert [(r.family, r.name) for r in refs] == expected
    family, case = index.case("generated_tests/add_binary.json", "add_binary.relu")
    assert family.name == "generated" and case.name == "add_binary.relu" and case.model is not None
    with pytest.raises(LookupError, match="no case 'nope'"):
        index.case(None, "nope")


def test_nnvts_reruns_turn_a_flaky_driver_into_flaky_passes(tmp_path):
    from tests.scale.conftest import FLAKY

    markers = tmp_path / "markers"
    markers.mkdir()
    result = pytest_run("--nnvts-specs", "generated_tests", "--nnvts-family", "generated", "--nnvts-driver", FLAKY,
                        "-k", "relu_clamp", "--nnvts-reruns", "1", "--nnvts-jsonl", str(tmp_path / "r.jsonl"),
                        NNVTS_FLAKY_DIR=str(markers), NNVTS_SANDBOX="none")
    assert result.returncode == 0, result.stdout[-2000:]
    cases = cases_of(tmp_path / "r.jsonl")
    assert "flaky" in {c["verdict"] for c in cases.values()}
    assert all(len(c["extra"]["attempts"]) == 2 for c in cases.values() if c["verdict"] == "flaky")


def test_a_driver_that_cannot_be_found_is_one_usage_error_at_session_start():
    """Not thousands of collected cases each failing to start it."""
    result = pytest_run("--nnvts-specs", "generated_tests", "--nnvts-family", "generated",
                        "--nnvts-driver", "no_such_driver_anywhere")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "driver 'no_such_driver_anywhere' not found" in result.stdout + result.stderr
    assert "collected" not in result.stdout
    result = pytest_run("--nnvts-specs", "generated_tests", "--nnvts-driver", "tests.fakes.no_such_module:create")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "cannot import driver module 'tests.fakes.no_such_module'" in result.stdout + result.stderr
