"""Faults the golden families used to miss (issue 11): each broken driver is caught by its family,
and the reference passes the same cases."""

from __future__ import annotations

import os

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken_verdicts
from tests.families.test_generated_variants import SPECS, run_family
from vts.results import Verdict


def _control_flow_documents(name: str) -> list[dict]:
    from vts.spec.loader import load_paths

    return [f.document for f in load_paths([os.path.join(SPECS, "control_flow", name)])]


def test_ignoring_the_requested_loop_timeout_is_caught():
    results = run_family("infinite_loop_timeout", broken_verdicts.ignores_loop_timeout(),
                         _control_flow_documents("while_infinite_loop.yaml"))
    assert results
    for result in results.values():
        assert result.verdict is Verdict.FAILED, result.reason
        assert "with a 1 ms loop timeout" in result.reason and "allowed: 0.501 s" in result.reason


def test_reference_honours_the_loop_timeout():
    results = run_family("infinite_loop_timeout", create_device(), _control_flow_documents("while_infinite_loop.yaml"))
    assert results and all(r.verdict is Verdict.PASSED for r in results.values()), results


def test_timing_reported_unasked_on_async_is_caught_by_generated():
    results = run_family("generated", broken_verdicts.async_timing_unasked(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED
    assert "async execution (timing NO)" in result.reason and "timing was not requested" in result.reason


def test_generated_runs_every_path_with_and_without_timing_on_the_reference():
    from vts.families.generated import FULL_MATRIX, executions_for

    assert set(executions_for(0)) == set(FULL_MATRIX) and len(FULL_MATRIX) == 4
    assert set(executions_for(1)) | set(executions_for(2)) == set(FULL_MATRIX)
    results = run_family("generated", create_device(), [hand_add_float(), hand_add_quant8()])
    assert all(r.verdict is Verdict.PASSED for r in results.values()), results


def test_general_failure_for_a_too_small_buffer_after_supporting_dynamic_shapes_is_caught():
    results = run_family("dynamic_output_shape", broken_verdicts.insufficient_as_general_failure(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED, result.reason
    assert "insufficient" in result.reason and "supports dynamic output shapes" in result.reason


def test_general_failure_without_dynamic_shape_support_is_still_a_skip():
    from tests.fakes import broken

    results = run_family("dynamic_output_shape", broken.wrong_status(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.SKIPPED, result.reason


# -- differential ------------------------------------------------------------------------


def _multi_example_add() -> dict:
    """hand_add_float with a second example: 1 + 2 = 3, 0.5 + 0.5 = 1, -1 + -1 = -2, 8 + -4 = 4."""
    document = hand_add_float()
    document["name"] = "hand_add_two_examples"
    document["models"][0]["examples"].append(
        {"name": "second", "inputs": {"a": [1.0, 0.5, -1.0, 8.0], "b": [2.0, 0.5, -1.0, -4.0]},
         "outputs": {"out": [3.0, 1.0, -2.0, 4.0]}})
    return document


def test_reference_passes_differential_against_itself():
    results = run_family("differential", create_device(), [hand_add_float(), hand_add_quant8(), _multi_example_add()])
    assert len(results) == 3
    for result in results.values():
        assert result.verdict is Verdict.PASSED, result.reason
        assert "3 random inputs matched the oracle 'reference'" in result.reason
    assert "2 examples forward and reverse" in results["differential/hand_add_two_examples.add"].reason


def test_outputs_cached_by_input_shape_pass_the_golden_families_and_fail_differential():
    device = broken_verdicts.caches_outputs_by_input_shape()
    for family in ("generated", "fenced", "dynamic_output_shape"):
        golden = run_family(family, device, [hand_add_float(), hand_add_quant8()])
        assert all(r.verdict is Verdict.PASSED for r in golden.values()), (family, golden)
    results = run_family("differential", broken_verdicts.caches_outputs_by_input_shape(),
                         [hand_add_float(), hand_add_quant8()])
    for result in results.values():
        assert result.verdict is Verdict.FAILED, result.reason
        assert "random input 1" in result.reason and "expected: the oracle's answer" in result.reason


def test_multi_example_orders_catch_a_shape_cache_even_without_an_oracle():
    results = run_family("differential", broken_verdicts.caches_outputs_by_input_shape(), [_multi_example_add()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED
    assert result.reason.startswith("forward order, example 1 (second)")


def test_right_only_on_golden_inputs_passes_generated_and_fails_differential():
    documents = [hand_add_float(), hand_add_quant8()]
    device = broken_verdicts.GoldenLookupDevice(broken_verdicts.known_inputs_of(documents))
    golden = run_family("generated", device, documents)
    assert all(r.verdict is Verdict.PASSED for r in golden.values()), golden
    results = run_family("differential", device, documents)
    assert [r.verdict for r in results.values()] == [Verdict.FAILED, Verdict.FAILED]
    assert all("random input 0" in r.reason for r in results.values())


def test_random_inputs_are_reproducible_and_differ_from_the_goldens():
    import numpy as np

    from vts.families._kit.random_inputs import plan_inputs, random_example, seed_of
    from vts.model.casemodel import parse_spec

    (model,) = parse_spec(hand_add_float())
    plan = plan_inputs(model)
    assert set(plan.varied) == {0, 1}

    def draw(name: str):
        rng = np.random.Generator(np.random.PCG64(seed_of(name)))
        return [random_example(model, plan, rng, str(i)).inputs[0].value for i in range(3)]

    first, again, other = draw("differential/x"), draw("differential/x"), draw("differential/y")
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not np.array_equal(first[0], other[0]) and not np.array_equal(first[0], first[1])
    lo, hi = -2.0, 100.0  # the range of input a over the example
    assert all(((v >= lo) & (v <= hi)).all() for v in first)


def test_domains_positive_nonzero_and_indices():
    import numpy as np

    from vts.families._kit.random_inputs import plan_inputs, random_example
    from vts.model.casemodel import parse_spec
    from vts.spec.loader import load_paths

    by_op = {}
    for name in ("elementwise/log.yaml", "elementwise/rsqrt.yaml", "binary/div.yaml", "shape/gather.yaml",
                 "shape/embedding_lookup.yaml", "detection/roi_align.yaml"):
        for spec in load_paths([os.path.join(SPECS, name)]):
            by_op[name] = parse_spec(spec.document)
    rng = np.random.Generator(np.random.PCG64(5))
    for model in by_op["elementwise/log.yaml"] + by_op["elementwise/rsqrt.yaml"]:
        plan = plan_inputs(model)
        for _ in range(5):
            example = random_example(model, plan, rng, "r")
            operand = model.main.operands[model.main.inputs[0]]
            value = example.inputs[0].value.astype(np.float64)
            real = (value - operand.zero_point) * operand.scale if operand.scale else value
            assert (real > 0).all(), (model.name, real)
    for model in by_op["binary/div.yaml"]:
        plan = plan_inputs(model)
        if 1 in plan.varied:
            assert (random_example(model, plan, rng, "r").inputs[1].value != 0).all()
    for model in by_op["shape/gather.yaml"] + by_op["shape/embedding_lookup.yaml"]:
        plan = plan_inputs(model)
        assert plan.varied, model.name
    for model in by_op["detection/roi_align.yaml"]:
        plan = plan_inputs(model)
        assert 1 in plan.held and "boxes" in plan.held[1]


# -- models only the runtime accepts, and models the HAL accepts but no driver can run ------------------


def _runtime_only_documents() -> list[dict]:
    return _control_flow_documents("while_unknown_size.yaml")


def test_refusing_runtime_only_control_flow_is_right():
    for device in (create_device(), broken_verdicts.refuses_runtime_only_control_flow()):
        for family in ("generated", "fenced", "memory_domain", "validation", "deadline", "differential"):
            results = run_family(family, device, _runtime_only_documents())
            assert results, family
            bad = {n: r.reason for n, r in results.items() if r.verdict not in (Verdict.PASSED, Verdict.SKIPPED)}
            assert not bad, (family, bad)
        generated = run_family("generated", device, _runtime_only_documents())
        assert all("only the NNAPI runtime accepts" in r.reason for r in generated.values()), generated


def test_a_driver_supporting_runtime_only_models_is_judged_on_its_outputs():
    right = run_family("generated", broken_verdicts.accepts_runtime_only_control_flow(), _runtime_only_documents())
    assert right and all(r.verdict is Verdict.PASSED and not r.reason for r in right.values()), right
    wrong = run_family("generated", broken_verdicts.accepts_runtime_only_control_flow_wrongly(),
                       _runtime_only_documents())
    assert wrong and all(r.verdict is Verdict.FAILED for r in wrong.values()), wrong


def test_refusing_a_valid_control_flow_model_with_invalid_argument_still_fails():
    """IF operands of unknown size are valid even in driver mode: refusing if.yaml's dynamic model is wrong."""
    documents = _control_flow_documents("if.yaml")
    results = run_family("generated", broken_verdicts.refuses_runtime_only_control_flow(), documents)
    assert all(r.verdict is Verdict.PASSED for r in results.values())  # it only refuses WHILE: nothing to catch

    class RefusesEveryControlFlow(broken_verdicts._StrictControlFlowDevice):
        def get_supported_operations(self, model):
            from vts.hal.enums import ErrorStatus, OperationType
            from vts.hal.errors import DriverError

            if any(op.type == OperationType.IF for op in model.main.operations):
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, "no IF")
            return super().get_supported_operations(model)

    refused = run_family("generated", RefusesEveryControlFlow("refuses-if"), documents)
    assert refused and all(r.verdict is Verdict.FAILED and "for a valid model" in r.reason
                           for r in refused.values())


def test_conv_2d_of_rank_3_is_valid_for_the_hal_but_unsupported():
    from vts.hal.validation import BeyondHalRule, validate_model
    from vts.model.casemodel import parse_spec, to_hal_model
    from vts.spec.loader import load_paths

    (spec,) = load_paths([os.path.join(SPECS, "conv", "conv_2d_rank3.yaml")])
    (model,) = parse_spec(spec.document)
    hal_model = to_hal_model(model)
    validate_model(hal_model, hal_rules_only=True)  # ValidateHal accepts it
    import pytest

    with pytest.raises(BeyondHalRule):
        validate_model(hal_model)
    device = create_device()
    assert device.get_supported_operations(hal_model) == [False]  # NONE, operation unsupported
    results = run_family("generated", device, [spec.document])
    (result,) = results.values()
    # Not claiming the operation is no evidence of catching the fault: skipped, not passed.
    assert result.verdict is Verdict.SKIPPED and result.reason.startswith("unsupported: CONV_2D")


# -- the command line: --oracle ---------------------------------------------------------------


def test_the_oracle_is_the_driver_named_by_the_oracle_option(tmp_path):
    """The reference judged against a wrong oracle fails: the answers really come from --oracle."""
    import json

    from tests.cli.test_cli import nnvts, write_specs

    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    right = nnvts("run", "--driver", "reference", "--family", "differential", "--specs", specs,
                  "--large-budget", "0", "--json", str(tmp_path / "right.json"))  # the spec cases alone
    assert right.returncode == 0, right.stdout + right.stderr
    assert json.loads((tmp_path / "right.json").read_text())["summary"]["passed"] == 2
    wrong = nnvts("run", "--driver", "reference", "--family", "differential", "--specs", specs, "-j", "2",
                  "--oracle", "tests.fakes.broken_verdicts:right_on_golden_inputs_only",
                  "--json", str(tmp_path / "wrong.json"))
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    cases = {c["name"]: c for c in json.loads((tmp_path / "wrong.json").read_text())["cases"]}
    # That oracle is 0.5 (float) or 3 steps (quant8) off on every input it does not know.
    assert cases["differential/hand_add_float.add"]["verdict"] == "failed"
    assert cases["differential/hand_add_quant8.add"]["verdict"] == "failed"
    unknown = nnvts("run", "--driver", "reference", "--family", "differential", "--specs", specs,
                    "--oracle", "no_such_driver")
    assert unknown.returncode == 2 and "no_such_driver" in unknown.stderr


# -- host deaths hidden by re-runs ------------------------------------------------------------


def test_a_rerun_that_passes_after_a_host_death_is_an_unreproduced_crash():
    from vts.families.base import Outcome
    from vts.run.isolated import unreproduced_crash_outcome

    death = Outcome(Verdict.CRASH, "driver crashed: killed by SIGKILL", ("memory limit",))
    passed_alone = unreproduced_crash_outcome(death, Outcome(Verdict.PASSED))
    assert passed_alone.verdict is Verdict.UNREPRODUCED_CRASH and passed_alone.verdict.is_failure
    assert "killed by SIGKILL" in passed_alone.reason and passed_alone.extra["rerun_verdict"] == "passed"
    skipped_alone = unreproduced_crash_outcome(death, Outcome(Verdict.SKIPPED, "unsupported"))
    assert skipped_alone.verdict is Verdict.UNREPRODUCED_CRASH
    failed_alone = unreproduced_crash_outcome(death, Outcome(Verdict.FAILED, "out: 4/4 elements"))
    assert failed_alone.verdict is Verdict.FAILED and failed_alone.reason == "out: 4/4 elements"
    assert any("died during the first attempt" in d for d in failed_alone.details)


def test_unreproduced_crashes_fail_the_exit_status_unless_allowed():
    from vts.results import CaseResult, summarize
    from vts.run.session import _exit_status

    summary = summarize([CaseResult("a", "generated", Verdict.PASSED),
                         CaseResult("b", "generated", Verdict.UNREPRODUCED_CRASH)])
    assert summary["unreproduced_crash"] == 1
    assert _exit_status(summary) == 1
    assert _exit_status(summary, allow_unreproduced_crashes=True) == 0


def test_refusing_a_hal_valid_conv_2d_of_rank_3_with_invalid_argument_is_caught():
    from vts.spec.loader import load_paths

    (spec,) = load_paths([os.path.join(SPECS, "conv", "conv_2d_rank3.yaml")])
    results = run_family("generated", broken_verdicts.refuses_hal_valid_models_as_invalid(), [spec.document])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED
    assert "get_supported_operations returned INVALID_ARGUMENT for a valid model" in result.reason


def test_a_broken_oracle_is_never_blamed_on_the_driver():
    """An oracle that refuses valid models or raises makes the case skipped or an ERROR, never FAILED."""
    from vts.families.base import RunOptions
    from vts.families.differential.family import DifferentialFamily
    from vts.model.casemodel import parse_spec
    from vts.run.runner import Runner

    family = DifferentialFamily()
    (model,) = parse_spec(hand_add_float())
    (case,) = family.model_cases(model, "<inline>")
    refusing = Runner(create_device(), RunOptions(oracle="tests.fakes.broken:wrong_status")).run_case(family, case)
    assert refusing.verdict is Verdict.SKIPPED and "the oracle did not answer" in refusing.reason, refusing.reason
    family = DifferentialFamily()
    raising = Runner(create_device(), RunOptions(oracle="tests.fakes.broken:raises_unexpected")).run_case(family,
                                                                                                         case)
    assert raising.verdict is Verdict.ERROR and "the oracle" in raising.reason, raising.reason
    family = DifferentialFamily()
    missing = Runner(create_device(), RunOptions(oracle="tests.fakes.no_such:thing")).run_case(family, case)
    assert missing.verdict is Verdict.ERROR and "cannot load the oracle" in missing.reason
