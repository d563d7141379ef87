"""Validation, deadline and priority families: the reference passes, each broken driver is caught.

Every broken driver fails in the family that should catch it and nowhere
else matters here; the reference driver must show no false alarm in any.
"""

from __future__ import annotations

from collections import Counter

import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float
from tests.fakes import broken
from vts.families.base import RunOptions
from vts.families.registry import families
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.runner import Runner


def run_family(name: str, device, model_cases: bool = True, device_cases: bool = True):
    family = families()[name]()
    runner = Runner(device, RunOptions(case_timeout=60))
    cases = list(family.device_cases()) if device_cases else []
    if model_cases:
        for model in parse_spec(hand_add_float()):
            cases += list(family.model_cases(model, "<inline>"))
    return {case.name: runner.run_case(family, case) for case in cases}


def verdicts(results) -> Counter:
    return Counter(r.verdict for r in results.values())


@pytest.mark.parametrize("family", ["validation", "deadline", "priority"])
def test_reference_driver_passes(family):
    results = run_family(family, create_device(hal="1.3"))
    assert verdicts(results) == Counter({Verdict.PASSED: len(results)}), [
        (n, r.reason) for n, r in results.items() if r.verdict is not Verdict.PASSED]


def test_reference_driver_passes_validation_under_aidl_skipping_only_what_aidl_lacks():
    results = run_family("validation", create_device())
    others = {r.reason for r in results.values() if r.verdict is not Verdict.PASSED}
    assert others == {"not a rule of AIDL v4: AIDL has no numberOfConsumers (Operand.aidl): a wrong count is no "
                      "fault"}
    assert verdicts(results)[Verdict.SKIPPED] == 7


def test_validation_yields_the_suites_126_preparation_cases_for_add():
    results = run_family("validation", create_device(), device_cases=False)
    model_cases = [n for n in results if ".remove_input" not in n and "fence" not in n and "_past_pool" not in n
                   and "pool_index" not in n and "remove_output" not in n and "input_dims" not in n]
    assert len(model_cases) == 126


def test_driver_accepting_bad_operand_types_fails_validation():
    results = run_family("validation", broken.accepts_bad_operand_type(), device_cases=False)
    failed = {n for n, r in results.items() if r.verdict is Verdict.FAILED}
    type_cases = {n for n in results if ".operand_type_" in n or ".operation_operand_type_" in n}
    assert type_cases and type_cases <= failed
    sample = results["validation/hand_add_float.add.operand_type_0_to_9999"]
    assert "get_supported_operations answered NONE for an invalid model" in sample.reason
    assert "operand 0 (TENSOR_FLOAT32) type changed to invalid value 9999" in sample.reason


@pytest.mark.parametrize("driver", [broken.ignores_deadlines, broken.ignores_deadlines_fast])
def test_driver_ignoring_deadlines_fails_deadline_family(driver):
    """However fast the driver: the deadline is set from the time the chain needs on that driver."""
    results = run_family("deadline", driver(), model_cases=False)
    for executor in ("sync", "async"):
        result = results[f"deadline/long_add_chain.honoured_{executor}"]
        assert result.verdict is Verdict.FAILED and "ignores deadlines" in result.reason


def test_driver_failing_without_a_deadline_fails_the_honoured_check():
    """The chain is timed without a deadline first; a driver that cannot run it at all fails there."""
    results = run_family("deadline", broken.wrong_status(), model_cases=False)
    for executor in ("sync", "async"):
        result = results[f"deadline/long_add_chain.honoured_{executor}"]
        assert result.verdict is Verdict.FAILED and "without a deadline returned" in result.reason


def test_driver_scheduling_first_come_first_served_fails_the_scheduling_case():
    """It declares priority scheduling; four LOW then four HIGH executions complete LLLLHHHH."""
    results = run_family("priority", broken.schedules_fifo_despite_priority(), model_cases=False)
    outcome = results["priority/scheduling_high_before_low"]
    assert outcome.verdict is Verdict.FAILED, outcome.reason
    assert "LLLLHHHH" in outcome.reason


def test_driver_accepting_invalid_priority_fails_priority_and_validation():
    results = run_family("priority", broken.accepts_invalid_priority(), model_cases=False)
    assert results["priority/prepare_invalid_3"].verdict is Verdict.FAILED
    assert results["priority/prepare_high"].verdict is Verdict.PASSED
    validation = run_family("validation", broken.accepts_invalid_priority(), device_cases=False)
    assert validation["validation/hand_add_float.add.execution_priority_3"].verdict is Verdict.FAILED


def test_driver_writing_outputs_of_rejected_requests_fails_validation():
    results = run_family("validation", broken.writes_outputs_on_rejected_request(), device_cases=False)
    bad = results["validation/hand_add_float.add.remove_input_0.sync"]
    assert bad.verdict is Verdict.FAILED and "wrote into the output pool" in bad.reason
    assert results["validation/hand_add_float.add.operand_type_0_to_9999"].verdict is Verdict.PASSED


def test_request_cases_of_a_model_share_one_request_until_one_is_not_cleanly_refused(monkeypatch):
    from vts.families.validation import family as validation_family

    built = []
    original = validation_family.build_request
    monkeypatch.setattr(validation_family, "build_request", lambda *a, **k: built.append(1) or original(*a, **k))
    run_family("validation", create_device(), device_cases=False)
    assert len(built) == 1  # every request case of the model (and the null fence case) on one request
    built.clear()
    results = run_family("validation", broken.writes_outputs_on_rejected_request(), device_cases=False)
    request_cases = [n for n in results if n.endswith((".sync", ".async", ".fenced"))]
    assert request_cases and all(results[n].verdict is Verdict.FAILED for n in request_cases)
    assert len(built) > len(request_cases)  # a request written into is never handed to the next case
