"""Bursts: the base Burst's identifier rules, the burst family on the reference (in and out of
process), and a driver keeping burst memory by pool position instead of identifier caught."""

from __future__ import annotations

import numpy as np
import pytest

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken_concurrency
from tests.families.test_concurrency import corpus_documents, isolated, not_passed
from tests.ipc.conftest import hand_mul_float
from vts.families._kit.executions import prepare_for_case
from vts.families.base import RunOptions
from vts.families.burst import BurstFamily, burst_mutations
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import MAX_BURST_SLOT, Burst, PreparedModel
from vts.hal.types import Request
from vts.model.casemodel import build_request, parse_spec
from vts.results import Verdict
from vts.run.runner import Runner


def run_cases(runner, documents, kind: str | None = None) -> dict:
    family = BurstFamily()
    results = {}
    for document in documents:
        for model in parse_spec(document):
            for case in family.model_cases(model, "<inline>"):
                if kind is None or case.config["kind"] == kind:
                    results[case.name] = runner.run_case(family, case)
    return results


@pytest.fixture
def add_burst():
    model = parse_spec(hand_add_float())[0]
    prepared, _ = prepare_for_case(create_device(hal="1.3"), model, RunOptions())  # HIDL's slot rules
    built = build_request(model, model.examples[0])
    yield model, prepared.configure_execution_burst(), built
    built.close()


def _sums(built) -> list[float]:
    return built.read_output(0, np.dtype("<f4"), 4).tolist()


# -- the base Burst's rules under HIDL --------------------------------------------------------------------------


def test_held_slots_are_used_until_freed(add_burst):
    _model, burst, built = add_burst
    burst.execute(built.request, [4, 9])
    assert burst.held_slots() == {4, 9}
    built.output_pool.write(0, bytes(16))
    burst.execute(Request(built.request.inputs, built.request.outputs, [None, None]), [4, 9])
    assert _sums(built) == [1.75, 2.0, 0.25, 0.5]  # the hand-computed sums
    burst.free_memory(4)
    burst.free_memory(4)  # twice, and an unknown slot: harmless
    burst.free_memory(1234)
    with pytest.raises(DriverError) as refused:
        burst.execute(Request(built.request.inputs, built.request.outputs, [None, None]), [4, 9])
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("ids", [[1], [1, 2, 3], [5, 5], [-1, 2], [MAX_BURST_SLOT + 1, 2]])
def test_malformed_identifiers_are_refused_and_nothing_is_kept(add_burst, ids):
    _model, burst, built = add_burst
    with pytest.raises(DriverError) as refused:
        burst.execute(built.request, ids)
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    assert burst.held_slots() == frozenset()


def test_a_memory_given_for_a_held_slot_is_refused(add_burst):
    _model, burst, built = add_burst
    burst.execute(built.request, [1, 2])
    with pytest.raises(DriverError) as refused:
        burst.execute(built.request, [1, 2])
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT


def test_a_driver_without_bursts_inherits_a_working_one(add_burst):
    """The default PreparedModel.configure_execution_burst is the base Burst over execute."""
    _model, reference_burst, built = add_burst
    reference = reference_burst.prepared_model

    class Plain(PreparedModel):
        def execute(self, request, measure=MeasureTiming.NO, deadline=None, loop_timeout=None):
            return reference.execute(request, measure, deadline, loop_timeout)

    burst = Plain().configure_execution_burst()
    assert type(burst) is Burst
    burst.execute(built.request, [7, 8])
    built.output_pool.write(0, bytes(16))
    burst.execute(Request(built.request.inputs, built.request.outputs, [None, None]), [7, 8])
    assert _sums(built) == [1.75, 2.0, 0.25, 0.5]


def test_every_catalogue_mutation_is_listed():
    model = parse_spec(hand_add_float())[0]
    slugs = [m.slug for m in burst_mutations(model)]
    assert {"fewer_ids", "more_ids", "duplicate_id", "unknown_id", "freed_id", "given_while_held",
            "remove_input_0", "remove_input_1", "remove_output_0"} <= set(slugs)
    assert len(slugs) == len(set(slugs))


# -- the family --------------------------------------------------------------------------------------


def test_reference_passes_in_process():
    documents = [hand_add_float(), hand_add_quant8(), hand_mul_float(), *corpus_documents()]
    results = run_cases(Runner(create_device(), RunOptions(case_timeout=60)), documents)
    assert results and not not_passed(results)


def test_reference_passes_out_of_process():
    runner = isolated("reference")
    try:
        results = run_cases(runner, [hand_add_float(), hand_add_quant8()])
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert len(results) == 4 and not not_passed(results)


def test_positional_burst_is_caught_in_process():
    results = run_cases(Runner(broken_concurrency.burst_positions(), RunOptions(case_timeout=60)),
                        [hand_add_float(), hand_add_quant8()])
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    golden = results["burst/hand_add_float.add"]
    assert "both slots held" in golden.reason


def test_positional_burst_is_caught_out_of_process():
    runner = isolated("tests.fakes.broken_concurrency:burst_positions")
    try:
        results = run_cases(runner, [hand_add_float()])
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert [r.verdict for r in results.values()] == [Verdict.FAILED, Verdict.FAILED], not_passed(results)


def test_a_burst_ignoring_free_memory_is_caught():
    results = run_cases(Runner(broken_concurrency.burst_ignores_free(), RunOptions(case_timeout=60)),
                        [hand_add_float()])
    assert {name: r.verdict for name, r in results.items()} == {
        "burst/hand_add_float.add": Verdict.FAILED, "burst/validation/hand_add_float.add": Verdict.FAILED}
    assert "freed" in results["burst/hand_add_float.add"].reason
    assert results["burst/validation/hand_add_float.add"].reason.startswith("freed_id")


def test_a_burst_caching_slot_contents_is_caught():
    """Steady-state streaming: the client rewrites a held input slot; a snapshot burst answers the old inputs."""
    results = run_cases(Runner(broken_concurrency.burst_snapshots(), RunOptions(case_timeout=60)),
                        [hand_add_float(), hand_add_quant8(), hand_mul_float()], kind="golden")
    assert results and all(r.verdict is Verdict.FAILED for r in results.values()), not_passed(results)
    assert all("held input memory" in r.reason for r in results.values()), [r.reason for r in results.values()]


def test_a_burst_caching_slot_contents_is_caught_out_of_process():
    runner = isolated("tests.fakes.broken_concurrency:burst_snapshots")
    try:
        results = run_cases(runner, [hand_add_float()], kind="golden")
    finally:
        assert runner.host is not None
        runner.host.stop()
    assert [r.verdict for r in results.values()] == [Verdict.FAILED], not_passed(results)
