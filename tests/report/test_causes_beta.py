"""Issue 45's vendor driver "beta" (tests/fakes/beta.py) over bundled cases: its three bugs come out as
three causes named by operation and parameter, every failing case in exactly one cause, and the support
summary counts the claims, not the validation passes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

#: The bundled models each bug shows on, one quant8 model for the coupling rule, and the honoured-deadline
#: case of the synchronous path; families kept to those that see them (the whole run: the lead's note).
SUBSET = ("softmax_beta_axis.float32_axis0 or fully_connected_hand.rank4_relu_quant8 or add_binary.relu_quant8 "
          "or long_add_chain.honoured_sync")
FAMILIES = ("generated", "deadline", "concurrency", "quantization_coupling")
SPECS = ("softmax_beta_axis", "fully_connected_hand", "add_binary")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    from vts.cli.main import main

    path = tmp_path_factory.mktemp("beta") / "beta.json"
    argv = ["run", "--driver", "tests.fakes.beta:create_device", "--in-process", "-q", "-k", SUBSET,
            "--json", str(path)]
    for family in FAMILIES:
        argv += ["--family", family]
    for spec in SPECS:
        argv += ["--specs", f"generated_tests/{spec}.json"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1, result.output
    return json.loads(path.read_text())


def test_the_three_bugs_are_three_causes_named_by_operation_and_parameter(report):
    causes = report["causes"]
    assert 3 <= len(causes) <= 8
    summaries = [c["summary"] for c in causes]
    assert any(s.startswith("SOFTMAX (TENSOR_FLOAT32, beta ≠ 1.0): outputs wrong") for s in summaries)
    assert any(s.startswith("FULLY_CONNECTED (TENSOR_QUANT8_ASYMM, input rank 4): claimed supported, then refused")
               for s in summaries)
    assert any(s.startswith("deadline ignored: sync execution") for s in summaries)
    assert [c["cases"] for c in causes] == sorted((c["cases"] for c in causes), reverse=True)


def test_every_failing_case_is_in_exactly_one_cause(report):
    failing = {c["name"] for c in report["cases"] if c["verdict"] == "failed"}
    assert sum(c["cases"] for c in report["causes"]) == len(failing) == report["summary"]["failed"]
    assert all(c["example"] in failing for c in report["causes"])
    # The deadline family's refused preparations of the claimed model are the claim's, not the arguments'.
    claim = next(c for c in report["causes"] if c["summary"].startswith("FULLY_CONNECTED"))
    assert set(claim["families"]) == {"generated", "deadline", "concurrency", "quantization_coupling"}


def test_support_counts_claims_and_keeps_validation_apart(report):
    rows = {(r["operation"], r["operand_type"]): r for r in report["support"]}
    softmax = rows[("SOFTMAX", "TENSOR_FLOAT32")]
    assert softmax["supported"] == "yes" and softmax["passed"] < softmax["ran"]
    add = rows[("ADD", "TENSOR_QUANT8_ASYMM")]
    assert add["supported"] == "yes" and add["validation"] == {"cases": 0, "passed": 0}


def test_the_report_keeps_its_json_schema(report):
    import jsonschema

    with open("docs/report.schema.json", encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator(schema).validate(report)
