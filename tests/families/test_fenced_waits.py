"""Issue 22 (2): wait-for fences that signal later, never, or in error (the ``fenced`` family).

Chaining only on signalled fences let a driver that never waits pass; the
family now hands over pending fences of its own, in process and across
the protocol (eventfds).
"""

from __future__ import annotations

import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken_coverage
from tests.families.test_concurrency import isolated, not_passed
from tests.families.test_generated_variants import run_family
from tests.ipc.conftest import hand_mul_float
from vts.families.fenced import PENDING_S, SHORTEST_PENDING_S, FencedFamily, signal_at
from vts.model.casemodel import parse_spec
from vts.results import Verdict


def test_reference_passes():
    results = run_family("fenced", create_device(), [hand_add_float(), hand_add_quant8(), hand_mul_float()])
    assert len(results) == 3 and not not_passed(results)


@pytest.mark.parametrize(("factory", "reason"), [
    (broken_coverage.fence_no_wait, "before its wait fence signalled"),
    (broken_coverage.fence_error_blind, "signalled an error, and the execution succeeded"),
    (broken_coverage.fence_timed_wait, "fence that has not signalled, timeout_after_fence 1 ms"),
])
def test_drivers_not_honouring_wait_fences_are_caught(factory, reason):
    results = run_family("fenced", factory(), [hand_add_float(), hand_add_quant8()])
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all(reason in r.reason for r in results.values()), [r.reason for r in results.values()]


def test_the_fence_fakes_pass_generated():
    for factory in (broken_coverage.fence_no_wait, broken_coverage.fence_error_blind,
                    broken_coverage.fence_timed_wait):
        results = run_family("generated", factory(), [hand_add_float()])
        assert results and not not_passed(results)


def _run_isolated(driver: str) -> dict:
    runner = isolated(driver)
    family = FencedFamily()
    try:
        return {case.name: runner.run_case(family, case) for model in parse_spec(hand_add_float())
                for case in family.model_cases(model, "<inline>")}
    finally:
        assert runner.host is not None
        runner.host.stop()


def test_reference_passes_out_of_process():
    results = _run_isolated("reference")
    assert results and not not_passed(results)


@pytest.mark.parametrize("driver", ["fence_no_wait", "fence_error_blind"])
def test_caught_out_of_process(driver):
    results = _run_isolated(f"tests.fakes.broken_coverage:{driver}")
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)


def test_goldens_run_while_the_own_fences_are_pending(monkeypatch):
    """The golden executions share the own-fence checks' wait instead of following it."""
    from vts.families import fenced

    monkeypatch.setattr(fenced, "PENDING_S", 2.0)  # far longer than the goldens take, however loaded the machine
    device = broken_coverage.fence_log()
    results = run_family("fenced", device, [hand_add_float()])
    assert results and not not_passed(results)
    kinds = [kind for kind, _ in device.log]
    assert kinds.count("own") == 2 and kinds.count("golden") == 2, device.log
    assert all(pending for kind, pending in device.log if kind == "golden"), device.log


def test_a_driver_serializing_fence_waits_is_not_deadlocked():
    """Goldens held up behind the checks' blocked calls resume at the signal: the case ends and passes."""
    from tests.fakes import broken_concurrency

    results = run_family("fenced", broken_concurrency.serialized(), [hand_add_float(), hand_add_quant8()])
    assert len(results) == 2 and not not_passed(results)


def test_a_driver_serializing_fence_waits_is_not_deadlocked_out_of_process():
    results = _run_isolated("tests.fakes.broken_concurrency:serialized")
    assert results and not not_passed(results)


def test_a_driver_starting_late_without_waiting_is_caught(monkeypatch):
    """It returns at once and starts later: the fences pend until the goldens are over, which take that long too.

    A window that ended once both calls had returned signalled before this driver started, and it passed.
    """
    from vts.families import fenced

    monkeypatch.setattr(fenced, "PENDING_S", 30.0)  # the goldens close the window, not this
    results = run_family("fenced", broken_coverage.fence_late_start(), [hand_add_float()])
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all("waiting on a fence that signals later" in r.reason for r in results.values()), results


def test_the_late_starter_passes_generated():
    results = run_family("generated", broken_coverage.fence_late_start(), [hand_add_float()])
    assert results and not not_passed(results)


@pytest.mark.parametrize(("goldens_over", "expected"), [
    (None, PENDING_S),  # goldens held until the signal: the longest wait
    (0.001, SHORTEST_PENDING_S),  # over at once: a call may still be on its way
    (0.012, 0.012),  # the goldens' own time
    (5.0, PENDING_S),  # slower goldens do not hold the fences longer
])
def test_the_fences_signal_when_the_goldens_are_over(goldens_over, expected):
    launched = 100.0
    over = None if goldens_over is None else launched + goldens_over
    assert signal_at(launched, over) == pytest.approx(launched + expected)


def test_a_driver_starting_late_without_waiting_is_caught_out_of_process(monkeypatch):
    from vts.families import fenced

    monkeypatch.setattr(fenced, "PENDING_S", 30.0)
    results = _run_isolated("tests.fakes.broken_coverage:fence_late_start")
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all("waiting on a fence that signals later" in r.reason for r in results.values()), results
