"""Dynamic output shapes, fenced compute, quantization coupling and the loop timeout:
the reference passes, and a driver broken in each way is caught by that family."""

from __future__ import annotations

import os

import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken
from vts.families.base import RunOptions
from vts.families.registry import families
from vts.model.casemodel import parse_spec
from vts.results import Verdict
from vts.run.runner import Runner

SPECS = os.path.join(os.path.dirname(__file__), "..", "..", "specs")


def run_family(name: str, device, documents) -> dict:
    family = families()[name]()
    runner = Runner(device, RunOptions(case_timeout=60))
    results = {}
    for document in documents:
        for model in parse_spec(document):
            for case in family.model_cases(model, "<inline>"):
                results[case.name] = runner.run_case(family, case)
    return results


@pytest.mark.parametrize("family", ["dynamic_output_shape", "fenced", "quantization_coupling"])
def test_reference_passes(family):
    results = run_family(family, create_device(), [hand_add_float(), hand_add_quant8()])
    assert results
    assert all(r.verdict is Verdict.PASSED for r in results.values()), {n: r.reason for n, r in results.items()}


def test_insufficient_without_shapes_is_caught():
    results = run_family("dynamic_output_shape", broken.insufficient_without_shapes(), [hand_add_float()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED and "0 output shapes with OUTPUT_INSUFFICIENT_SIZE" in result.reason


def test_fenced_path_errors_are_caught_only_by_the_fenced_family():
    device = broken.fenced_outputs_off()
    assert run_family("fenced", device, [hand_add_float()])["fenced/hand_add_float.add"].verdict is Verdict.FAILED
    generated = run_family("generated", device, [hand_add_float()])
    assert all(r.verdict is Verdict.PASSED for r in generated.values())


def test_refusing_signed_twin_is_caught():
    results = run_family("quantization_coupling", broken.unsigned_quant_only(), [hand_add_quant8()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED and "signed twin was refused" in result.reason


def test_infinite_loop_is_stopped_by_the_loop_timeout():
    from vts.spec.loader import load_paths

    path = os.path.join(SPECS, "control_flow")
    if not os.path.isdir(path):
        pytest.skip("no control-flow specs")
    documents = [f.document for f in load_paths([path])]
    results = run_family("infinite_loop_timeout", create_device(), documents)
    assert results and all(r.verdict is Verdict.PASSED for r in results.values()), results
