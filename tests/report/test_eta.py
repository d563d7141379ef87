"""The ETA: none until every family left is timed on its own cases, then per family; or from stored durations.

Times are given (``now``), never measured: the arithmetic is checked, not the clock.
"""

from __future__ import annotations

from collections import Counter

import pytest

from vts.report.eta import MIN_CASES, Eta


def test_no_eta_before_every_family_left_has_run_enough_cases():
    eta = Eta(totals=Counter(discovery=3, validation=1000, deadline=100))
    eta.add("discovery", 3, 3.0)  # done: a family with nothing left needs no timing
    eta.add("validation", 500, 0.5)
    assert eta.remaining(0.0) is None
    eta.add("deadline", MIN_CASES - 1, 1.0)
    assert eta.remaining(10.0) is None and eta.unmeasured() == ["deadline"]
    eta.add("deadline", 1, 1.0)
    assert eta.unmeasured() == []
    assert eta.remaining(20.0) is not None


def test_what_is_left_is_weighed_by_each_familys_own_case_time():
    """The slow first cases (the device-level families) do not set the pace of the cheap sweep after them."""
    eta = Eta(totals=Counter(caching=10, validation=10_000, deadline=200))
    eta.add("caching", 10, 30.0)  # 3 s a case, all done
    eta.add("validation", 1_000, 1.0)  # 1 ms a case
    eta.add("deadline", 20, 2.0)  # 100 ms a case
    eta.remaining(0.0)
    eta.add("validation", 1_000, 1.0)
    # 1 s of case time in 2 s of wall time: a pace of 2 (the harness's cost, a loaded machine).
    left = eta.remaining(2.0)
    assert left == pytest.approx(2 * (8_000 * 0.001 + 180 * 0.1))


def test_with_stored_durations_the_eta_is_the_seconds_not_yet_run():
    eta = Eta(expected_seconds=100.0)
    eta.add("generated", 10, 10.0)
    eta.remaining(0.0)
    eta.add("generated", 10, 10.0)
    assert eta.remaining(10.0) == pytest.approx((100 - 20) * 1.0)


def test_the_terminal_says_what_it_is_counting_and_which_family_it_is_timing():
    from tests.report.test_terminal import _report
    from vts.results import CaseResult, Verdict

    report, _, _ = _report(progress_interval=0)
    report.counted = 31_245
    assert "counting total: 31,245 so far" in report.progress_line()
    report.set_total(120, Counter(generated=100, deadline=20))
    for index in range(30):
        report.add(CaseResult(name=f"g{index}", family="generated", verdict=Verdict.PASSED, duration=0.01))
    line = report.progress_line()
    assert "ETA timing deadline" in line, line
    report.finish(False)
