"""The reusable_execution family: the reference (AIDL v4) passes; each broken IExecution fails the case that owns
its rule; a HIDL driver is skipped, saying why."""

from __future__ import annotations

import json
import os

from nnvts.drivers.reference import create_device
from tests.fakes import broken_reusable
from vts.families.base import RunOptions
from vts.families.reusable_execution import ReusableExecutionFamily
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.runner import Runner

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests", "add_binary.json")


def _verdicts(device) -> dict[str, Verdict]:
    """The cases of add_binary.relu, whose inputs can be rolled into a second example with other goldens."""
    with open(SPEC, encoding="utf-8") as file:
        model = next(m for m in parse_spec(json.load(file)) if m.name == "relu")
    family, runner = ReusableExecutionFamily(), Runner(device, RunOptions())
    return {case.config["kind"]: runner.run_case(family, case).verdict for case in family.model_cases(model, SPEC)}


def test_the_reference_passes_every_case():
    assert _verdicts(create_device()) == dict.fromkeys(("sync", "fenced", "invalid_request", "one_at_a_time",
                                                        "prepared_with_config"), Verdict.PASSED)


def test_an_execution_keeping_its_first_inputs_fails_the_golden_runs():
    verdicts = _verdicts(broken_reusable.keeps_first_inputs())
    assert verdicts["sync"] is Verdict.FAILED and verdicts["fenced"] is Verdict.FAILED
    assert verdicts["one_at_a_time"] is Verdict.PASSED


def test_the_fault_only_in_models_prepared_with_config_fails_that_case_alone():
    verdicts = _verdicts(broken_reusable.keeps_first_inputs_prepared_with_config())
    assert verdicts.pop("prepared_with_config") is Verdict.FAILED
    assert set(verdicts.values()) == {Verdict.PASSED}


def test_two_executions_at_once_fail_one_at_a_time_only():
    verdicts = _verdicts(broken_reusable.runs_two_at_once())
    assert verdicts["one_at_a_time"] is Verdict.FAILED
    assert verdicts["sync"] is Verdict.PASSED and verdicts["fenced"] is Verdict.PASSED


def test_a_hidl_driver_has_no_reusable_executions():
    assert set(_verdicts(create_device(hal="1.3")).values()) == {Verdict.SKIPPED}


def test_no_execution_and_no_error_fails_every_case_that_needs_one():
    verdicts = _verdicts(broken_reusable.returns_no_execution())
    assert verdicts == {"sync": Verdict.FAILED, "fenced": Verdict.FAILED, "invalid_request": Verdict.FAILED,
                        "one_at_a_time": Verdict.FAILED, "prepared_with_config": Verdict.FAILED}
