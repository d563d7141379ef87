"""Failed output comparisons carry a bounded structured record (``extra["comparison"]``) to the reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import yaml

from tests.conftest import hand_add_float, hand_add_quant8
from vts.model.compare import FLOAT32, HISTOGRAM_BINS, WORST_KEPT, compare_output

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_record_lists_the_worst_elements_worst_first_with_their_tolerance():
    expected = np.zeros((4, 100), np.float32)
    actual = expected.copy()
    actual.reshape(-1)[:50] = np.arange(1, 51, dtype=np.float32) * 1e-3  # 50 bad elements, growing error
    comparison = compare_output("out", expected, actual, FLOAT32)
    record = comparison.record("TENSOR_FLOAT32")
    assert record["operand"] == "out" and record["type"] == "TENSOR_FLOAT32"
    assert record["bad"] == 50 and record["total"] == 400
    worst = record["worst"]
    assert len(worst) == WORST_KEPT
    assert worst[0]["index"] == [0, 49] and worst[0]["expected"] == 0.0
    assert worst[0]["actual"] == float(np.float32(50e-3)) and worst[0]["tolerance"] == FLOAT32.atol
    assert [w["error"] for w in worst] == sorted((w["error"] for w in worst), reverse=True)
    histogram = record["histogram"]
    assert len(histogram["counts"]) == HISTOGRAM_BINS and len(histogram["edges"]) == HISTOGRAM_BINS + 1
    assert sum(histogram["counts"]) == 400 and histogram["counts"][0] >= 350  # the 350 exact elements
    assert (record["worst"][0]["index"], record["bad"]) == (list(comparison.worst_index), comparison.bad_count)


def test_record_is_strict_json_with_non_finite_values():
    comparison = compare_output("f", np.array([1.0, 2.0], np.float32), np.array([np.nan, np.inf], np.float32),
                                FLOAT32)
    text = json.dumps(comparison.record("TENSOR_FLOAT32"), allow_nan=False)  # raises on NaN or Infinity
    record = json.loads(text)
    assert {w["actual"] for w in record["worst"]} == {"nan", "inf"}
    assert record["histogram"]["nonfinite"] == 2


def test_passing_comparisons_carry_no_detail():
    comparison = compare_output("x", np.ones(3, np.float32), np.ones(3, np.float32), FLOAT32)
    assert comparison.passed and comparison.worst == () and comparison.histogram is None


def test_a_failed_run_puts_the_comparison_in_the_results(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    for document in (hand_add_float(), hand_add_quant8()):
        (specs / f"{document['name']}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "cli", "run", "-q", "--driver", "tests.fakes.broken:quant_off_by_2", "--specs",
         str(specs), "--family", "generated", "--json", str(tmp_path / "r.json")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    cases = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert "extra" not in cases["hand_add_float.add"]  # passed: nothing extra
    [record] = cases["hand_add_quant8.add"]["extra"]["comparison"]
    assert record["operand"] == "out" and record["type"] == "TENSOR_QUANT8_ASYMM"
    assert record["bad"] == record["total"] > 0
    assert all(w["error"] == 2 and w["tolerance"] == 1 for w in record["worst"])
