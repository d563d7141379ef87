"""The generated family on the operations of feature levels 6 and 7: the reference passes, each misreading fake
fails exactly the models that tell its misreading apart, and a HAL 1.3 driver is not asked for them."""

from __future__ import annotations

import json
import os

from nnvts.drivers.reference import create_device
from tests.fakes import broken_aidl
from vts.hal.enums import HalVersion
from vts.results import Verdict

GENERATED = os.path.join(os.path.dirname(__file__), "..", "..", "generated_tests")


def _document(name: str) -> dict:
    with open(os.path.join(GENERATED, name + ".json"), encoding="utf-8") as file:
        return json.load(file)


def _verdicts(results) -> dict[str, Verdict]:
    return {r.name: r.verdict for r in results}


def test_reference_passes_the_new_operations(run_generated):
    for spec in ("batch_matmul_hand", "pack_basic", "mirror_pad_basic", "reverse_basic", "rsqrt_quant8_hand"):
        results = run_generated(_document(spec), create_device())
        assert {r.verdict for r in results} == {Verdict.PASSED}, [(r.name, r.reason) for r in results]


def test_swapped_adjoint_flags_fail_only_where_one_side_is_adjointed(run_generated):
    verdicts = _verdicts(run_generated(_document("batch_matmul_hand"), broken_aidl.batch_matmul_adjoints_swapped()))
    failed = sorted(name for name, verdict in verdicts.items() if verdict is Verdict.FAILED)
    assert failed == [f"batch_matmul_hand.{m}{v}" for m in ("adj_x", "adj_y") for v in ("", "_float16", "_int32")]
    assert verdicts["batch_matmul_hand.plain"] is Verdict.PASSED
    assert verdicts["batch_matmul_hand.adj_both"] is Verdict.PASSED  # both set: swapping them changes nothing


def test_swapped_mirror_modes_fail_every_mirrored_model(run_generated):
    verdicts = _verdicts(run_generated(_document("mirror_pad_basic"), broken_aidl.mirror_pad_modes_swapped()))
    failed = {name for name, verdict in verdicts.items() if verdict is Verdict.FAILED}
    # Every model (20 mirrored, in every type) and REFLECT by 3 on a dimension of 3, legal as SYMMETRIC: the fake
    # runs it instead of failing.
    assert failed == set(verdicts) and len(failed) == 21


def test_a_hal_1_3_driver_is_not_asked_for_feature_level_6(run_generated):
    device = create_device()
    device.hal_version = HalVersion.V1_3
    results = run_generated(_document("batch_matmul_hand"), device)
    assert {r.verdict for r in results} == {Verdict.SKIPPED}
    assert results[0].reason == "the model needs feature level 6; the driver speaks HAL 1.3"
    reshape = {r.name: r.verdict for r in run_generated(_document("reshape_basic"), device)}
    assert reshape["reshape_basic.int32"] is Verdict.SKIPPED
    assert reshape["reshape_basic.infer"] is Verdict.PASSED
