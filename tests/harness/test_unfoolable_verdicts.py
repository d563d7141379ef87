"""Faults the golden families used to miss (issue 11): each broken driver is caught by its family,
and the reference passes the same cases."""

from __future__ import annotations

import os

from drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.drivers import broken_verdicts
from tests.harness.test_generated_variants import SPECS, run_family
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
    from tests.drivers import broken

    results = run_family("dynamic_output_shape", broken.wrong_status(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.SKIPPED, result.reason
