"""A never-ending loop run under a 1 ms loop timeout: what its answer must be (two families judge it).

``infinite_loop_timeout`` gives the timeout as an execution argument, ``with_config`` in AIDL v4's
``ExecutionConfig``; both expect the same: the loop aborted in time with a missed deadline.  The bound
is the timeout plus ``LOOP_TIMEOUT_SLACK_S`` (room for scheduling, IPC and the driver noticing between
iterations); GENERAL_FAILURE (a driver that cannot run the model) skips.
"""

from __future__ import annotations

from vts.families._kit.executions import timing_problems
from vts.families._kit.per_example import Executed, Judgement
from vts.families.base import failed, skipped
from vts.hal.enums import ErrorStatus

__all__ = ["LOOP_TIMEOUT_NS", "LOOP_TIMEOUT_SLACK_S", "MISSED", "loop_abort_judgement"]

LOOP_TIMEOUT_NS = 1_000_000
#: Seconds beyond the loop timeout an execution may take to come back aborted.
LOOP_TIMEOUT_SLACK_S = 0.5
MISSED = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)


def loop_abort_judgement(executed: Executed, where_timeout: str = "") -> Judgement:
    """The verdict of one execution of a never-ending loop under ``LOOP_TIMEOUT_NS``; ``where_timeout`` says
    where the timeout was given (for the messages)."""
    answer, where = executed.answer, executed.where
    if answer.status == ErrorStatus.GENERAL_FAILURE:
        return skipped(f"{where}: GENERAL_FAILURE")
    if answer.status not in MISSED:
        return failed(f"{where} with a 1 ms loop timeout{where_timeout} returned {answer.status.name}, expected "
                      "MISSED_DEADLINE_TRANSIENT or MISSED_DEADLINE_PERSISTENT")
    problems = timing_problems(answer, executed.execution.measure)
    if problems:
        return failed(f"{where}: {problems[0]}")
    bound = LOOP_TIMEOUT_NS / 1e9 + LOOP_TIMEOUT_SLACK_S
    if executed.seconds > bound:
        return failed(f"{where} took {executed.seconds:.3f} s with a {LOOP_TIMEOUT_NS / 1e6:g} ms loop "
                      f"timeout{where_timeout}; the loop must be aborted within the timeout (allowed: {bound:.3f} s)")
    return []
