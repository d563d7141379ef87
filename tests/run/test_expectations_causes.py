"""``nnvts expectations update`` writes one block per root cause: a ``# cause:`` line, then entries that cover
that cause's failing cases and nothing else; the list still holds the gate (no unexpected pass, no new failure)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vts.run.expectations import CAUSE_MARK, MIN_CAUSE_CASES, parse_file, update_expectations
from vts.run.globset import GlobSet, is_glob

#: As tests/report/test_causes_beta.py: the beta fake's bugs over a few bundled models (a -k run: exact names).
SUBSET = ("softmax_beta_axis.float32_axis0 or fully_connected_hand.rank4_relu_quant8 or add_binary.relu_quant8 "
          "or long_add_chain.honoured_sync")
FAMILIES = ("generated", "deadline", "concurrency", "quantization_coupling")
SPECS = ("softmax_beta_axis", "fully_connected_hand", "add_binary")


def _argv(json_path: str, *extra: str) -> list[str]:
    argv = ["run", "--driver", "tests.fakes.beta:create_device", "--in-process", "-q", "-k", SUBSET,
            "--json", json_path, *extra]
    for family in FAMILIES:
        argv += ["--family", family]
    for spec in SPECS:
        argv += ["--specs", f"generated_tests/{spec}.json"]
    return argv


def _blocks(text: str) -> dict[str, list[str]]:
    """The entries of a written list by block (``""``: the entries outside any block)."""
    found: dict[str, list[str]] = {}
    for entry in parse_file(text)[1]:
        found.setdefault(entry.block, []).append(entry.pattern)
    return found


@pytest.fixture(scope="module")
def beta(tmp_path_factory) -> dict:
    from vts.cli.main import main

    folder = tmp_path_factory.mktemp("beta-causes")
    first, listed = str(folder / "first.json"), folder / "xfail.txt"
    result = CliRunner().invoke(main, _argv(first))
    assert result.exit_code == 1, result.output
    result = CliRunner().invoke(main, ["expectations", "update", "--from", first, "--out", str(listed)])
    assert result.exit_code == 0, result.output
    second = str(folder / "second.json")
    rerun = CliRunner().invoke(main, _argv(second, "--expected-failures", str(listed)))
    with open(first, encoding="utf-8") as one, open(second, encoding="utf-8") as two:
        return {"report": json.load(one), "text": listed.read_text(encoding="utf-8"), "rerun": rerun,
                "rerun_report": json.load(two)}


def test_one_block_per_cause_of_many_cases_covering_exactly_its_cases(beta):
    report, blocks = beta["report"], _blocks(beta["text"])
    many = [c for c in report["causes"] if c["cases"] >= MIN_CAUSE_CASES]
    assert len(many) == 2  # the broken claim and SOFTMAX's beta; the deadline and coupling causes are few
    marks = [m for m in blocks if m]
    assert [m.split(" in ", 1)[0] for m in marks] == [f"{CAUSE_MARK} {c['summary']}".split(" in ", 1)[0] for c in many]
    assert marks[0].startswith(f"{CAUSE_MARK} FULLY_CONNECTED (TENSOR_QUANT8_ASYMM, input rank 4): claimed supported")
    assert marks[1].startswith(f"{CAUSE_MARK} SOFTMAX (TENSOR_FLOAT32, beta ≠ 1.0): outputs wrong")
    cases = {c["name"]: c for c in report["cases"]}
    failing = {n for n, c in cases.items() if c["verdict"] == "failed"}
    for mark, cause in zip(marks, many, strict=True):
        matcher = GlobSet(blocks[mark])
        matched = {n for n in cases if matcher(n)}
        assert len(matched) == cause["cases"] and matched <= failing and cause["example"] in matched
        kind = "FULLY_CONNECTED" if mark.startswith(f"{CAUSE_MARK} FULLY") else "SOFTMAX"
        assert {cases[n]["extra"]["operation"]["operation"] for n in matched} == {kind}
    # Every failure listed once, nothing else; from a -k run, exact names only (no glob could be checked
    # against the cases the -k left out).
    every = [p for patterns in blocks.values() for p in patterns]
    assert sorted(every) == sorted(failing) and not any(is_glob(p) for p in every)


def test_the_rerun_with_the_written_list_passes(beta):
    rerun, summary = beta["rerun"], beta["rerun_report"]["summary"]
    assert rerun.exit_code == 0, rerun.output
    assert summary["xfail"] == beta["report"]["summary"]["failed"] and summary.get("xpass", 0) == 0
    assert summary["failed"] == 0


# Synthetic results: two causes whose cases share a name prefix, so one glob would span both.
CLAIM = "prepare_model failed with GENERAL_FAILURE although every operation was reported supported"
WRONG = "output 0: 3 elements out of tolerance"
CLAIMED = [f"generated/net.c{i}_fc" for i in range(9)]
OUTPUTS = [f"generated/net.c{i}_sm" for i in range(8)]
PASSING = ["generated/other.c0_fc", "generated/net.c0_add"]


def _case(name: str, verdict: str, reason: str = "", operation: str = "FULLY_CONNECTED") -> dict:
    return {"name": name, "family": "generated", "verdict": verdict, "reason": reason,
            "operations": [operation], "operand_types": ["TENSOR_FLOAT32"]}


def _results(tmp_path, claimed_fail: bool = True) -> str:
    cases = [_case(n, "failed" if claimed_fail else "passed", CLAIM if claimed_fail else "") for n in CLAIMED]
    cases += [_case(n, "failed", WRONG, "SOFTMAX") for n in OUTPUTS] + [_case(n, "passed") for n in PASSING]
    path = tmp_path / f"run-{claimed_fail}.json"
    path.write_text(json.dumps({"selection": {"specs": ["generated_tests"]}, "cases": cases}))
    return str(path)


def test_a_cause_glob_never_takes_in_another_causes_cases(tmp_path):
    update = update_expectations(_results(tmp_path), None)
    blocks = _blocks(update.text)
    assert len(update.causes) == 2 and "" not in blocks
    by_kind = {("claimed" if "claimed" in m else "outputs"): patterns for m, patterns in blocks.items()}
    # generated/*_fc would take in a passing case; generated/*_sm takes in none, nor a case of the claim.
    assert by_kind == {"claimed": ["generated/net.*_fc"], "outputs": ["generated/*_sm"]}, blocks


def test_an_update_keeps_its_blocks_and_drops_a_fixed_one(tmp_path):
    written = update_expectations(_results(tmp_path), None).text
    assert update_expectations(_results(tmp_path), written).text == written  # kept as written
    fixed = update_expectations(_results(tmp_path, claimed_fail=False), written)
    assert fixed.dropped == ["generated/net.*_fc (too broad: it matches cases that passed)"]
    blocks = _blocks(fixed.text)
    assert list(blocks.values()) == [["generated/*_sm"]] and "outputs wrong" in next(iter(blocks))


def test_a_block_is_only_comments_around_entries(tmp_path):
    """An older reader (entries and ``#`` comments, blank lines ignored) reads the same entries."""
    from vts.run.selection import ExpectationList

    text = update_expectations(_results(tmp_path), None).text
    assert all(line.startswith("#") or not line or " " not in line for line in text.splitlines())
    listed = ExpectationList([line for line in text.splitlines() if line and not line.startswith("#")])
    assert all(listed.expects_failure(n) for n in CLAIMED + OUTPUTS)
    assert not any(listed.expects_failure(n) for n in PASSING)


def test_a_small_glob_in_a_block_names_one_model_whole(tmp_path):
    """``deadline/mdl.v.execute_*`` (4 checks of one model) is written; ``deadline/avg_*`` (4 models whose
    names start alike, and any model named so later) is not: the cause's other cases are exact names."""
    one_model = [f"deadline/mdl.v.execute_{k}" for k in "abcd"]
    models = [f"deadline/avg_{i}.q" for i in range(4)]
    cases = [_case(n, "failed", WRONG, "SOFTMAX") for n in one_model + models]
    cases += [_case(n, "passed") for n in ("deadline/mdl.v.prepare_x", "deadline/other.q")]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"selection": {"specs": ["generated_tests"]}, "cases": cases}))
    blocks = _blocks(update_expectations(str(path), None).text)
    assert list(blocks.values()) == [sorted([*models, "deadline/mdl.v.execute_*"])], blocks
