"""The support summary (vts/report/support.py): claims from the generated family, validation apart."""

from __future__ import annotations

from collections import Counter

from vts.report.support import support_rows


def test_validation_passes_are_not_support_and_claims_come_from_the_generated_family():
    grid = {
        ("generated", "ABS", "TENSOR_FLOAT32"): Counter(skipped=4),
        ("validation", "ABS", "TENSOR_FLOAT32"): Counter(passed=67),  # refusals pass whatever the support
        ("generated", "ADD", "TENSOR_FLOAT32"): Counter(passed=10, failed=2),
        ("burst", "ADD", "TENSOR_FLOAT32"): Counter(passed=12, skipped=1),
        ("generated", "CONV_2D", "TENSOR_QUANT8_ASYMM"): Counter(passed=3, skipped=1),
        ("burst", "MUL", "TENSOR_FLOAT32"): Counter(passed=2),  # no generated case: a case that ran claims it
        ("discovery", "-", "-"): Counter(passed=5),  # device-level cases are no operation's
    }
    rows = {(r.operation, r.operand_type): r for r in support_rows(grid)}
    assert set(rows) == {("ABS", "TENSOR_FLOAT32"), ("ADD", "TENSOR_FLOAT32"), ("CONV_2D", "TENSOR_QUANT8_ASYMM"),
                         ("MUL", "TENSOR_FLOAT32")}
    abs_row = rows[("ABS", "TENSOR_FLOAT32")]
    assert (abs_row.supported, abs_row.ran, abs_row.passed) == ("no", 0, 0)
    assert (abs_row.validation_cases, abs_row.validation_passed) == (67, 67)
    add = rows[("ADD", "TENSOR_FLOAT32")]
    assert (add.supported, add.claimed, add.ran, add.passed) == ("yes", 12, 24, 22)
    conv = rows[("CONV_2D", "TENSOR_QUANT8_ASYMM")]
    assert (conv.supported, conv.claimed, conv.refused) == ("partly", 3, 1)
    assert rows[("MUL", "TENSOR_FLOAT32")].supported == "yes"
    assert [r.supported for r in support_rows(grid)] == ["yes", "yes", "partly", "no"]
