"""The engines report script's classification: cases grouped by (operation, types, reason pattern)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "engines_report.py"


def _report():
    spec = importlib.util.spec_from_file_location("engines_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _case(name: str, verdict: str, reason: str, operations=("EQUAL",), types=("TENSOR_QUANT8_ASYMM",)) -> dict:
    return {"name": name, "verdict": verdict, "reason": reason, "operations": list(operations),
            "operand_types": list(types)}


def test_reasons_differing_only_in_particulars_share_a_pattern():
    report = _report()
    a = report.reason_pattern("sync execution: output04: 1/1 elements out of tolerance; worst at [0]: expected 0.0")
    b = report.reason_pattern("sync execution: output05: 3/8 elements out of tolerance; worst at [1, 2]: expected 7")
    assert a == b == "sync execution: OUTPUT: #/# elements out of tolerance"


def test_classes_count_cases_and_keep_one_example_without_the_inputs_as_internal_add():
    report = _report()
    cases = [
        _case("equal.q1", "failed", "sync execution: output0: 1/1 elements out of tolerance; worst at [0]: x"),
        _case("equal.q1_all_inputs_as_internal", "failed",
              "sync execution: output1: 2/2 elements out of tolerance; worst at [1]: y", ("ADD", "EQUAL")),
        _case("equal.q2", "passed", ""),
        _case("cast.q", "crash", "driver crashed: killed by SIGABRT", ("CAST",)),
    ]
    groups = report.classify(cases, ("failed", "crash"))
    (first, first_group), (second, second_group) = groups.items()
    assert first == ("EQUAL", "TENSOR_QUANT8_ASYMM", "failed: sync execution: OUTPUT: #/# elements out of tolerance")
    assert first_group.count == 2 and first_group.examples[0]["name"] == "equal.q1"
    assert second[0] == "CAST" and second_group.count == 1


def test_oracle_comparison_counts_and_names_the_side_a_golden_proves_wrong():
    report = _report()
    comparison = [
        _case("differential/equal.q1", "failed",
              "random input 0, sync execution: output0: 1/1 elements out of tolerance; worst at [0]: x"),
        _case("differential/topk.ties", "failed",
              "random input 0, sync execution: indices: 4/6 elements out of tolerance; worst at [0, 0]: y",
              ("TOPK_V2",), ("TENSOR_INT32",)),
        _case("differential/add.a", "passed", "3 random inputs matched the oracle 'litert'", ("ADD",)),
        _case("differential/lstm.a", "skipped", "the oracle 'litert' does not support the model (unsupported: LSTM)",
              ("LSTM",)),
    ]
    generated = [_case("equal.q1", "failed", "sync execution: output0: 1/1 elements out of tolerance"),
                 _case("topk.ties", "passed", "", ("TOPK_V2",))]
    reference = [_case("equal.q1", "passed", ""), _case("topk.ties", "passed", "", ("TOPK_V2",))]
    lines = report.render_oracle_comparison({"litert": comparison}, {"litert": {"generated": generated}},
                                            reference, lambda engine: None)
    text = "\n".join(lines)
    assert "| litert | 4 | 1 | 2 | 1 | 0 | 0 | 0 |" in text
    equal_row = next(line for line in lines if line.startswith("| EQUAL |"))
    assert equal_row.endswith("| litert: fails this model's golden in the generated family |")
    topk_row = next(line for line in lines if line.startswith("| TOPK_V2 |"))
    assert "no golden decides: both pass this model's golden" in topk_row
    assert "does not support the model (unsupported: LSTM) | 1 |" in text


def test_a_disagreement_is_blamed_on_whichever_side_fails_the_golden():
    report = _report()
    case = _case("differential/cast.q", "failed", "", ("CAST",))
    engine_side = [_case("cast.q", "passed", "")]
    assert report.golden_verdict("litert", case, {"litert": engine_side, "reference": [_case("cast.q", "failed", "")]}
                                 ).startswith("reference: fails")
    assert report.golden_verdict("litert", case, {"litert": engine_side, "reference": []}
                                 ).startswith("no golden verdict")


def test_disagreements_on_different_draws_and_paths_share_a_pattern():
    report = _report()
    a = report.reason_pattern("random input 0, sync execution: output04: 1/1 elements out of tolerance; worst at [0]: "
                              "expected 1.0, got 0.0 (error 1) (expected: the oracle's answer)")
    b = report.reason_pattern("random input 3, async execution: output05: 1/1 elements out of tolerance; worst at [0]: "
                              "expected 0.0, got 1.0 (error 1) (expected: the oracle's answer)")
    assert a == b == "OUTPUT: #/# elements out of tolerance"
