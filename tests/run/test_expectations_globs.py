"""``nnvts expectations update`` writes one glob where many cases fail alike, never one a passing case matches."""

from __future__ import annotations

import json

from vts.run.expectations import MIN_GLOB_CASES, parse_file, update_expectations
from vts.run.selection import ExpectationList

BETA = [f"deadline/softmax_basic.beta2.execute_{e}_{k}" for e in ("sync", "async") for k in ("now", "unlimited")]
BETA += [f"burst/softmax_basic.beta2.slots_{i}" for i in range(10)]
BETA += [f"generated/softmax_basic.beta2_{v}" for v in ("float32", "relaxed", "float16", "nchw", "axis0",
                                                           "axis1", "dim1", "dim3")]
FEW = ["generated/add_binary.relu_quant8", "generated/add_binary.relu6_quant8"]
PASSING = ["deadline/softmax_basic.beta2.execute_sync_short", "deadline/softmax_basic.beta1.execute_sync_now",
           "burst/softmax_basic.beta1.slots_0", "generated/softmax_basic.beta1_float32", "generated/add_binary.relu"]
SKIPPED = ["generated/softmax_basic.beta2_quant16"]


def _case(name: str, verdict: str) -> dict:
    return {"name": name, "family": name.split("/")[0], "verdict": verdict,
            "reason": "expected 0.2689, got 0.1192" if verdict == "failed" else "",
            "operations": ["SOFTMAX"], "operand_types": ["TENSOR_FLOAT32"]}


def _results(tmp_path, selection: dict | None = None, failing=BETA + FEW, passing=PASSING) -> str:
    cases = [_case(n, "failed") for n in failing] + [_case(n, "passed") for n in passing]
    cases += [_case(n, "skipped") for n in SKIPPED]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"selection": selection or {"specs": ["generated_tests"]}, "cases": cases}))
    return str(path)


def test_many_alike_failures_are_one_commented_glob_per_family(tmp_path):
    update = update_expectations(_results(tmp_path), None)
    _, entries, _ = parse_file(update.text)
    patterns = sorted(e.pattern for e in entries)
    deadline = [n for n in BETA if n.startswith("deadline/")]
    assert patterns == sorted(["burst/softmax_basic.beta2.*", "generated/softmax_basic.beta2_*", *deadline,
                               *FEW]), patterns
    glob = next(e for e in entries if e.pattern == "burst/softmax_basic.beta2.*")
    assert glob.comments == ["# 10 failing cases (burst: SOFTMAX TENSOR_FLOAT32); all: expected 0.2689, got 0.1192"]
    # The deadline family's alike failures share their prefix with a passing case and are fewer than
    # MIN_GLOB_CASES besides: exact names, so the list never expects a passing case to fail.
    assert len(deadline) < MIN_GLOB_CASES


def test_the_list_expects_every_failure_and_no_pass(tmp_path):
    """The gate holds: rerun with the list written from the run, no unexpected pass and no new failure."""
    update = update_expectations(_results(tmp_path), None)
    expectations = ExpectationList([e.pattern for e in parse_file(update.text)[1]])
    assert all(expectations.expects_failure(n) for n in BETA + FEW)
    assert not any(expectations.expects_failure(n) for n in PASSING)


def test_results_of_a_shard_get_exact_names_only(tmp_path):
    """A prefix seen whole in one shard may span cases of another shard that pass."""
    update = update_expectations(_results(tmp_path, {"specs": ["corpus"], "shard": "1/8"}), None)
    patterns = [e.pattern for e in parse_file(update.text)[1]]
    assert not update.globs_allowed and sorted(patterns) == sorted(BETA + FEW)


def test_a_glob_that_now_matches_a_passing_case_is_replaced(tmp_path):
    existing = "# known bugs\n\n# SOFTMAX\ngenerated/softmax_basic.*\n"
    update = update_expectations(_results(tmp_path), existing)
    assert update.dropped == ["generated/softmax_basic.* (too broad: it matches cases that passed)"]
    patterns = [e.pattern for e in parse_file(update.text)[1]]
    assert "generated/softmax_basic.beta2_*" in patterns and "generated/softmax_basic.*" not in patterns


def test_one_check_failing_for_every_model_is_one_glob_with_a_literal_ending(tmp_path):
    """``validation/*.async``: the same check fails for many models while their other checks pass."""
    models = [f"{op}_basic.{v}" for op in ("add", "mul", "conv") for v in ("float32", "quant8", "relu", "nchw")]
    failing = [f"validation/{m}.remove_input_0.async" for m in models]
    passing = [f"validation/{m}.remove_input_0.{path}" for m in models for path in ("sync", "fenced")]
    update = update_expectations(_results(tmp_path, failing=failing, passing=passing), None)
    patterns = [e.pattern for e in parse_file(update.text)[1]]
    assert patterns == ["validation/*.async"], patterns
    expectations = ExpectationList(patterns)
    assert all(expectations.expects_failure(n) for n in failing)
    assert not any(expectations.expects_failure(n) for n in passing)
