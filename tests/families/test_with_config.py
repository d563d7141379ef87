"""The with_config and hints families (AIDL v4 ``*WithConfig`` calls and hints): the reference passes both; a
driver whose hints change results, or which refuses an unknown hint, fails ``hints`` and passes ``with_config``;
a HIDL driver is skipped with the rule named; a driver overriding none of the calls works through the defaults."""

from __future__ import annotations

import json
import os

from nnvts.drivers.reference import create_device
from tests.fakes import broken_config, broken_hints
from vts.families.base import RunOptions
from vts.families.dynamic_output_shape import DynamicOutputShapeFamily
from vts.families.hints import HintsFamily
from vts.families.memory_domain.family import MemoryDomainFamily
from vts.families.with_config import WithConfigFamily
from vts.hal.config import ExecutionConfig, PrepareModelConfig, TokenValuePair
from vts.hal.enums import MeasureTiming
from vts.model.casemodel import build_request, parse_spec, to_hal_model
from vts.results import Verdict
from vts.run.runner import Runner

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests", "add_binary.json")


def _model(name: str = "relu"):
    with open(SPEC, encoding="utf-8") as file:
        return next(m for m in parse_spec(json.load(file)) if m.name == name)


def _results(family, device) -> list:
    runner = Runner(device, RunOptions())
    return [runner.run_case(family, case) for case in family.model_cases(_model(), SPEC)]


def _verdicts(family, device) -> set[Verdict]:
    return {result.verdict for result in _results(family, device)}


def test_the_reference_passes_with_config_and_hints():
    assert _verdicts(WithConfigFamily(), create_device()) == {Verdict.PASSED}
    assert _verdicts(HintsFamily(), create_device()) == {Verdict.PASSED}


def test_a_hidl_driver_is_skipped_with_the_rule_named():
    for family in (WithConfigFamily(), HintsFamily()):
        results = _results(family, create_device(hal="1.3"))
        assert {r.verdict for r in results} == {Verdict.SKIPPED}
        assert all("AIDL v4" in r.reason and "HIDL 1.3" in r.reason for r in results)


def test_hints_that_change_results_fail_hints_only():
    results = _results(HintsFamily(), broken_hints.hints_change_results())
    assert {r.verdict for r in results} == {Verdict.FAILED}
    assert "differs from the run without hints" in results[0].reason
    assert _verdicts(WithConfigFamily(), broken_hints.hints_change_results()) == {Verdict.PASSED}


def test_refusing_an_unknown_hint_fails_hints_only():
    results = _results(HintsFamily(), broken_hints.refuses_unknown_hints())
    assert {r.verdict for r in results} == {Verdict.FAILED}
    assert "must never fail a preparation" in results[0].reason
    assert _verdicts(WithConfigFamily(), broken_hints.refuses_unknown_hints()) == {Verdict.PASSED}


def test_the_base_classes_map_the_config_calls_onto_the_older_ones():
    device, model = create_device(), _model()
    prepared = device.prepare_model_with_config(to_hal_model(model), PrepareModelConfig(
        compilation_hints=(TokenValuePair(0x7FFF0001, b"x"),)))
    built = build_request(model, model.examples[0])
    try:
        config = ExecutionConfig(MeasureTiming.YES, None, (TokenValuePair(1),))
        result = prepared.execute_synchronously_with_config(built.request, config)
        assert result.timing.time_in_driver != 0xFFFF_FFFF_FFFF_FFFF
        fence, callback = prepared.execute_fenced_with_config(built.request, [], ExecutionConfig())
        assert fence is None or fence.wait(10)
        assert int(callback.get_execution_info()[0]) == 0
    finally:
        built.close()


LOOP_SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests", "while_infinite_loop.json")


def _loop_results(device) -> list:
    with open(LOOP_SPEC, encoding="utf-8") as file:
        models = parse_spec(json.load(file))
    family, runner = WithConfigFamily(), Runner(device, RunOptions())
    cases = [case for model in models for case in family.model_cases(model, LOOP_SPEC)]
    assert cases and all(case.config == {"kind": "loop_timeout"} for case in cases)
    return [runner.run_case(family, case) for case in cases[:1]]


def test_the_configs_loop_timeout_aborts_a_never_ending_loop():
    assert {r.verdict for r in _loop_results(create_device())} == {Verdict.PASSED}


def test_a_driver_dropping_the_configs_loop_timeout_fails_with_config():
    (result,) = _loop_results(broken_config.drops_loop_timeout())
    assert result.verdict is Verdict.FAILED
    assert "loop timeout from ExecutionConfig; the loop must be aborted" in result.reason


def test_config_calls_that_skip_the_checks_fail_the_invalid_case_only():
    results = {r.name: r for r in _results(WithConfigFamily(), broken_config.skips_checks_with_config())}
    invalid = [r for name, r in results.items() if name.endswith(".invalid")]
    assert len(invalid) == 1 and invalid[0].verdict is Verdict.FAILED
    assert "accepted preference 3" in invalid[0].reason
    assert any("sync_with_config of a request with its input 0 removed returned NONE" in d for d in invalid[0].details)
    assert {r.verdict for name, r in results.items() if not name.endswith(".invalid")} == {Verdict.PASSED}


def test_the_dynamic_shape_reruns_go_through_the_config_calls():
    family = WithConfigFamily()
    cases = [case for case in family.model_cases(_model(), SPEC) if case.config.get("kind") == "dynamic_output_shape"]
    assert len(cases) == len(_model().examples) and all("/dynamic_output_shape/" in case.name for case in cases)
    runner = Runner(create_device(), RunOptions())
    assert {runner.run_case(family, case).verdict for case in cases} == {Verdict.PASSED}


def test_config_calls_reporting_the_declared_shapes_fail_the_dynamic_reruns_only():
    device = broken_config.declared_shapes_with_config()
    results = _results(WithConfigFamily(), device)
    failed = {r.name: r for r in results if r.verdict is Verdict.FAILED}
    assert failed and all("/dynamic_output_shape/" in name for name in failed)
    assert all(r.verdict is Verdict.PASSED for r in results if r.name not in failed)
    reason = next(iter(failed.values())).reason
    assert reason.startswith("unspecified sync_with_config execution (timing NO): ")
    assert "shape [0], expected [4]" in reason
    assert _verdicts(DynamicOutputShapeFamily(), device) == {Verdict.PASSED}


def test_config_calls_refusing_driver_buffers_fail_the_memory_domain_reruns_only():
    device = broken_config.refuses_buffers_with_config()
    results = _results(WithConfigFamily(), device)
    memory = [r for r in results if "/memory_domain/" in r.name]
    assert memory and {r.verdict for r in memory} == {Verdict.FAILED}
    assert "sync_with_config execution with device memory" in memory[0].reason
    assert {r.verdict for r in results if r not in memory} == {Verdict.PASSED}
    assert _verdicts(MemoryDomainFamily(), device) == {Verdict.PASSED}
