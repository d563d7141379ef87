"""Root causes (vts/report/causes.py): one cause per bug, whatever the families and reason texts."""

from __future__ import annotations

from vts.report.causes import CauseTally, classify, stripped_reason
from vts.results import CaseResult, Verdict


def _op(operation: str, operand_type: str = "TENSOR_FLOAT32", rank: int | None = 4, **parameters: object) -> dict:
    described: dict = {"operation": operation, "operand_type": operand_type,
                       "parameters": [{"input": i + 1, "name": k, "value": v}
                                      for i, (k, v) in enumerate(parameters.items())]}
    if rank is not None:
        described["rank"] = rank
    return described


def _failed(name: str, family: str, reason: str, operation: dict, operations: tuple[str, ...] = (),
            comparison: bool = False) -> CaseResult:
    extra: dict = {"operation": operation}
    if comparison:
        extra["comparison"] = [{"operand": "output", "bad": 1, "total": 4}]
    return CaseResult(name, family, Verdict.FAILED, reason, operations=operations or (operation["operation"],),
                      operand_types=(operation["operand_type"],), extra=extra)


WRONG = "output: 4/6 elements out of tolerance; worst at [0, 0]: expected 0.2689, got 0.1192 (error 0.1497)"
CLAIM = "prepare_model failed with GENERAL_FAILURE although every operation was reported supported"


def _beta_like() -> list[CaseResult]:
    """A beta-ignoring SOFTMAX and a broken claim seen through several families and reason texts."""
    results = []
    for family, where in (("generated", "sync execution (timing NO): "), ("burst", "burst execution (A, slots 1, 2): "),
                          ("concurrency", "request 3 (m1 x, sync, timing NO): "), ("fenced", "")):
        for beta in (0.5, 2.0, 1e-6):
            results.append(_failed(f"{family}/softmax.beta{beta}", family, where + WRONG.replace("0.1192", str(beta)),
                                   _op("SOFTMAX", beta=beta, axis=-1), comparison=family == "generated"))
    for family in ("generated", "validation", "deadline", "caching"):
        results.append(_failed(f"{family}/fc.rank4_quant8", family, CLAIM,
                               _op("FULLY_CONNECTED", "TENSOR_QUANT8_ASYMM", activation=1)))
    return results


def test_one_bug_is_one_cause_across_families_and_reasons():
    tally = CauseTally()
    for result in _beta_like():
        tally.add(result)
    causes = tally.causes()
    assert [c.summary for c in causes] == [
        "SOFTMAX (TENSOR_FLOAT32, beta ≠ 1.0): outputs wrong in 12 cases across 4 families",
        "FULLY_CONNECTED (TENSOR_QUANT8_ASYMM, input rank 4): claimed supported, then refused by prepare_model "
        "(GENERAL_FAILURE) in 4 cases across 4 families"]
    assert causes[0].example == "generated/softmax.beta0.5" and set(causes[0].families) == {
        "generated", "burst", "concurrency", "fenced"}
    assert sum(c.cases for c in causes) == len(_beta_like())


def test_parameters_decide_only_where_every_case_has_them_off_neutral():
    tally = CauseTally()
    for i in range(5):  # one of them with a stride too: the parameter off neutral in more cases takes it
        tally.add(_failed(f"conv.d{i}", "generated", WRONG, _op("CONV_2D", dilation_width=2, stride_width=1 + i // 4)))
    for i in range(3):
        tally.add(_failed(f"conv.s{i}", "generated", WRONG, _op("CONV_2D", stride_width=2, activation=0)))
    tally.add(_failed("conv.plain", "generated", WRONG, _op("CONV_2D", stride_width=1)))
    summaries = sorted(c.summary for c in tally.causes())
    assert summaries == [
        "CONV_2D (TENSOR_FLOAT32): outputs wrong in 1 case across 1 family",
        "CONV_2D (TENSOR_FLOAT32, dilation_width ≠ 1): outputs wrong in 5 cases across 1 family",
        "CONV_2D (TENSOR_FLOAT32, stride_width ≠ 1): outputs wrong in 3 cases across 1 family"]


def test_rules_gather_every_operation_and_name_them():
    tally = CauseTally()
    for op in ("ADD", "CONV_2D", "RESHAPE"):
        tally.add(_failed(f"quantization_coupling/{op}", "quantization_coupling",
                          "the signed twin was refused while the other encoding prepared: QUANT8_ASYMM and "
                          "QUANT8_ASYMM_SIGNED must be supported alike", _op(op, "TENSOR_QUANT8_ASYMM")))
    tally.add(_failed("deadline/long_add_chain.honoured_sync", "deadline",
                      "sync execution succeeded 48.1 ms after its deadline (the chain needs 51.0 ms without a "
                      "deadline; deadline 2.5 ms): the driver ignores deadlines", _op("ADD")))
    # An unknown kind of failure on three operations alike is a rule too.
    for op in ("ADD", "MUL", "SUB"):
        tally.add(_failed(f"generated/{op}", "generated", "timing reported although not requested: 12 us",
                          _op(op)))
    summaries = [c.summary for c in tally.causes()]
    assert summaries == [
        "failed: timing reported although not requested: N us: on 3 operations (ADD, MUL, SUB; TENSOR_FLOAT32) "
        "in 3 cases across 1 family",
        "quantization coupling: the signed twin refused while the other encoding prepared: on 3 operations "
        "(ADD, CONV_2D, RESHAPE; TENSOR_QUANT8_ASYMM) in 3 cases across 1 family",
        "deadline ignored: sync execution succeeded long after its deadline: on 1 operation (ADD; TENSOR_FLOAT32) "
        "in 1 case across 1 family"]


def test_a_claim_broken_on_a_network_joins_the_claim_of_its_operation():
    tally = CauseTally()
    tally.add(_failed("caching/mobilenet_quant8.cache_saving_and_retrieval", "caching", CLAIM,
                      _op("CONV_2D", "TENSOR_QUANT8_ASYMM"),
                      operations=("AVERAGE_POOL_2D", "CONV_2D", "FULLY_CONNECTED", "SOFTMAX")))
    tally.add(_failed("generated/fc.rank4_quant8", "generated", CLAIM, _op("FULLY_CONNECTED", "TENSOR_QUANT8_ASYMM")))
    causes = tally.causes()
    assert len(causes) == 1 and causes[0].cases == 2 and causes[0].families == ("caching", "generated")
    assert causes[0].example == "generated/fc.rank4_quant8"  # the operation's own model, though it came later
    assert causes[0].summary.startswith("FULLY_CONNECTED (TENSOR_QUANT8_ASYMM, input rank 4): claimed")


def test_tallies_of_consecutive_parts_merge_into_the_tally_of_the_whole():
    results = _beta_like()
    whole, first, second = CauseTally(), CauseTally(), CauseTally()
    for result in results:
        whole.add(result)
    for result in results[:5]:
        first.add(result)
    for result in results[5:]:
        second.add(result)
    first.merge(second)
    assert first.causes() == whole.causes()


def test_passes_are_no_cause_and_other_verdicts_are_their_own():
    tally = CauseTally()
    tally.add(CaseResult("a", "generated", Verdict.PASSED))
    tally.add(CaseResult("b", "generated", Verdict.CRASH, "driver lost: killed by signal 11 (SIGSEGV)",
                         operations=("ADD",), operand_types=("TENSOR_FLOAT32",)))
    assert [c.summary for c in tally.causes()] == [
        "ADD (TENSOR_FLOAT32): crash: driver lost: killed by signal N in 1 case across 1 family"]
    assert classify(CaseResult("c", "x", Verdict.FAILED, WRONG)).kind == "outputs wrong"
    assert stripped_reason("request 12 (m2 'conv.x', sync): got 3.5e-06") == "request N : got N"


def test_merge_recomputes_causes_and_support_over_every_shard(tmp_path):
    """Each shard's report has its own causes; ``nnvts merge`` works them out again over all of them."""
    import json

    from click.testing import CliRunner

    from vts.cli.main import main
    from vts.report.files import FileReports

    results = _beta_like()
    shards = []
    for index, part in enumerate((results[:7], results[7:])):
        stream, report = str(tmp_path / f"s{index}.jsonl"), str(tmp_path / f"s{index}.json")
        files = FileReports({"driver": {"ref": "beta"}}, jsonl=stream, json_path=report)
        for result in part:
            files.add(result)
        files.finish(interrupted=False)
        assert sum(c["cases"] for c in json.loads((tmp_path / f"s{index}.json").read_text())["causes"]) == len(part)
        shards.append(stream)
    merged, page = tmp_path / "merged.json", tmp_path / "merged.html"
    done = CliRunner().invoke(main, ["merge", *shards, "--no-coverage-check", "--json", str(merged),
                                     "--html", str(page)])
    assert done.exit_code == 1, done.output
    report = json.loads(merged.read_text())
    assert [(c["cases"], c["example"]) for c in report["causes"]] == [
        (12, "generated/softmax.beta0.5"), (4, "generated/fc.rank4_quant8")]
    assert {(r["operation"], r["supported"]) for r in report["support"]} == {
        ("SOFTMAX", "yes"), ("FULLY_CONNECTED", "yes")}
    assert done.output.index("causes: 16 failing cases, 2 causes") < done.output.index("support by operation")
    html = page.read_text()
    assert html.index('<h2 id="causes">Root causes (2, 16 failing cases)') < html.index('<h2 id="summary">')
    assert "beta ≠ 1.0" in html and '<table id="support-table">' in html


def test_a_driver_with_endless_distinct_reasons_costs_bounded_memory():
    from vts.report import causes as causes_module

    tally = CauseTally()
    words = ["alpha", "beta", "gamma", "delta", "omega"]
    count = causes_module.MAX_GROUPS + 50
    for i in range(count):
        reason = " ".join(words[(i // 5 ** k) % 5] for k in range(6))  # no digits: each a reason of its own
        tally.add(CaseResult(f"c{i}", "generated", Verdict.FAILED, reason, operations=("ADD",),
                             operand_types=("TENSOR_FLOAT32",)))
    assert len(tally.groups) == causes_module.MAX_GROUPS + 1
    assert len(tally.subjects) <= causes_module.MAX_GROUPS
    found = tally.causes()
    assert sum(c.cases for c in found) == count
    assert any(c.summary.startswith("(other causes, past 2000 groups)") for c in found)
