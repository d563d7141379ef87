"""The C sample driver: a driver in another language, tested through ``exec:`` like any other.

It must pass every family on its own operations (float32 ADD and MUL) and
get the other cases skipped, not failed, by reporting their operations
unsupported.  The validation family is left out for unsupported operations:
the HAL requires a driver to check the signature of every operation, even
one it does not run, and this small driver knows only its own two.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import hand_add_float
from tests.ipc.conftest import ROOT, hand_mul_float, hand_sub_float, write_spec

SAMPLE = os.path.join(ROOT, "nnvts", "drivers", "sample_c")
DRIVER = f"exec:{os.path.join(SAMPLE, 'sample_driver')}"


@pytest.fixture(scope="module")
def built() -> str:
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C toolchain")
    result = subprocess.run(["make", "-C", SAMPLE], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return DRIVER


def _cases(path) -> dict[str, dict]:
    return {case["name"]: case for case in json.loads(path.read_text())["cases"]}


def test_c_driver_passes_every_family_on_add_and_mul(built, nnvts, tmp_path):
    specs = [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float())]
    report = tmp_path / "r.json"
    result = nnvts("run", "--driver", built, "--json", str(report), *specs)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = _cases(report)
    assert {c["verdict"] for c in cases.values()} <= {"passed", "skipped"}
    assert cases["hand_add_float.add"]["verdict"] == "passed"
    assert cases["hand_mul_float.mul"]["verdict"] == "passed"
    families = {c["family"] for c in cases.values() if c["verdict"] == "passed"}
    assert {"generated", "validation", "fenced", "dynamic_output_shape", "deadline"} <= families
    honoured = [c for name, c in cases.items() if "long_add_chain.honoured" in name]
    assert honoured and all(c["verdict"] == "passed" for c in honoured)  # deadlines checked between operations
    assert json.loads(report.read_text())["driver"]["name"] == "nnvts-sample_c"


def test_c_driver_speaks_aidl_v4_with_reusable_executions_and_aidl_bursts(built, nnvts, tmp_path):
    """It grants aidl:4 (docs/protocol.md §5.3): judged as AIDL v4, its REUSABLE_* kinds pass the family."""
    specs = [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float())]
    report = tmp_path / "r.json"
    result = nnvts("run", "--driver", built, "--family", "reusable_execution", "--family", "burst",
                   "--family", "validation", "--json", str(report), *specs)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = _cases(report)
    assert {c["verdict"] for c in cases.values()} <= {"passed", "skipped"}
    reusable = [c for c in cases.values() if c["family"] == "reusable_execution"]
    assert len(reusable) == 10 and all(c["verdict"] == "passed" for c in reusable)
    # No bursts of its own: the harness's stand-in runs AIDL's token cases (-1, reused, released; -2 refused).
    bursts = [c for c in cases.values() if c["family"] == "burst"]
    assert len(bursts) == 4 and all(c["verdict"] == "passed" for c in bursts)
    assert all("token -1" in c["reason"] for name, c in cases.items() if name.startswith("burst/validation/"))
    shown = nnvts("info", "--driver", built, "--json")
    assert json.loads(shown.stdout)["interface"] == "AIDL v4, feature level 8"


def test_unsupported_operations_are_skipped_not_failed(built, nnvts, tmp_path):
    specs = [write_spec(tmp_path, hand_sub_float())]
    report = tmp_path / "r.json"
    result = nnvts("run", "--driver", built, "--family", "generated", "--family", "fenced",
                   "--family", "dynamic_output_shape", "--family", "deadline", "--json", str(report), *specs)
    assert result.returncode == 0, result.stdout + result.stderr
    model_cases = {n: c for n, c in _cases(report).items() if "hand_sub_float" in n}
    assert model_cases and all(c["verdict"] == "skipped" for c in model_cases.values())
    assert "unsupported: SUB" in model_cases["hand_sub_float.sub"]["reason"]


def test_c_driver_on_the_corpus_add_spec(built, nnvts, tmp_path):
    corpus = os.path.join(ROOT, "..", "shared", "corpus", "V1_0", "add.json.gz")
    if not os.path.exists(corpus):
        pytest.skip("the shared corpus is not present")
    report = tmp_path / "r.json"
    result = nnvts("run", "--driver", built, "--specs", corpus, "--json", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(report.read_text())["summary"]
    assert summary["failed"] == summary["crash"] == summary["timeout"] == summary["error"] == 0
    assert summary["passed"] > 200


def test_c_driver_passes_the_with_config_kinds_ignoring_every_hint(built, nnvts, tmp_path):
    """It serves PREPARE_MODEL_WITH_CONFIG / EXECUTE_WITH_CONFIG / EXECUTE_FENCED_WITH_CONFIG (docs/protocol.md
    §5.5) as the kinds they extend, its hints read and ignored: with_config and hints pass."""
    specs = [write_spec(tmp_path, hand_add_float()), write_spec(tmp_path, hand_mul_float())]
    report = tmp_path / "r.json"
    result = nnvts("run", "--driver", built, "--family", "with_config", "--family", "hints", "--json", str(report),
                   *specs)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = _cases(report).values()
    assert {c["family"] for c in cases} == {"with_config", "hints"}
    assert cases and {c["verdict"] for c in cases} == {"passed"}
