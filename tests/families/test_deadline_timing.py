"""A wrong output under a deadline that timing decides is not a deadline verdict that flips with the load.

The 5 ms cases of the deadline family judge the status and its channel
only; the wrong outputs of a success are the generated family's (and the
other deadline cases', whose deadline is expired or unlimited whatever the
load).  So a rerun on a busier or idler machine gives the same verdicts, and
an expected-failures list written from one run holds for the next.
"""

from __future__ import annotations

from tests.fakes.deadline_timing import wrong_outputs_timed
from tests.families.test_qos_and_validation import run_family
from vts.results import Verdict

SHORT = ("execute_sync_short", "execute_async_short", "prepare_deadline_short")


def _verdicts(device) -> dict[str, tuple[Verdict, str]]:
    return {name.rsplit(".", 1)[1]: (r.verdict, r.reason)
            for name, r in run_family("deadline", device, device_cases=False).items()}


def test_verdicts_do_not_depend_on_meeting_a_short_deadline():
    device = wrong_outputs_timed()
    met = _verdicts(device)
    device.meets_short_deadlines = False
    missed = _verdicts(device)
    assert {k: v for k, (v, _) in met.items()} == {k: v for k, (v, _) in missed.items()}
    for test in SHORT:
        assert met[test][0] is Verdict.PASSED and "depends on timing" in met[test][1], met[test]
        assert missed[test][0] is Verdict.PASSED and "MISSED_DEADLINE" in missed[test][1], missed[test]


def test_the_wrong_outputs_still_fail_where_timing_cannot_decide():
    verdicts = _verdicts(wrong_outputs_timed())
    for test in ("execute_sync_unlimited", "execute_async_unlimited", "prepare_deadline_unlimited",
                 "prepare_priority_low"):
        assert verdicts[test][0] is Verdict.FAILED, (test, verdicts[test])
