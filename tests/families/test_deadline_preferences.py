"""Issue 22 (3): results must not depend on the execution preference or priority of the preparation.

A driver computing float32 in float16 when prepared for LOW_POWER (the
model not relaxed) passes every family that prepares FAST_SINGLE_ANSWER at
MEDIUM; the ``deadline`` family prepares every preference and priority and
judges each prepared model's answer with the model's own bounds.
"""

from __future__ import annotations

from nnvts.drivers.reference import create_device
from tests.conftest import hand_add_float, hand_add_quant8
from tests.fakes import broken_coverage
from tests.families.test_generated_variants import run_family
from tests.ipc.conftest import hand_mul_float
from vts.families.deadline import PREFERENCE_TESTS, rotated_priority
from vts.hal.enums import ExecutionPreference, Priority
from vts.results import Verdict


def hand_mul_decimals() -> dict:
    """MUL of float32 values float16 cannot hold: 1.1 * 3.3 = 3.63, 2.2 * 1.7 = 3.74, 3.3 * 0.3 = 0.99,
    4.4 * 2.9 = 12.76 (by hand; float16 is off by up to 4e-3 on them)."""
    document = hand_mul_float()
    document["name"] = "hand_mul_decimals"
    document["models"][0]["examples"] = [{"inputs": {"a": [1.1, 2.2, 3.3, 4.4], "b": [3.3, 1.7, 0.3, 2.9]},
                                          "outputs": {"out": [3.63, 3.74, 0.99, 12.76]}}]
    return document


def test_each_model_gets_every_preference_and_priority():
    for name in ("add", "mul", "conv_2d_nchw", "x"):
        priorities = {rotated_priority(name, preference) for preference in PREFERENCE_TESTS.values()}
        assert len(priorities) == 2  # LOW_POWER and SUSTAINED_SPEED never share one
    # Over many model names every pair of the 3 x 3 occurs.
    pairs = {(p, rotated_priority(f"m{i}", p)) for i in range(50) for p in PREFERENCE_TESTS.values()}
    assert pairs == {(p, q) for p in (ExecutionPreference.LOW_POWER, ExecutionPreference.SUSTAINED_SPEED)
                     for q in Priority}


def test_reference_passes_every_preference():
    # hand_add_float and hand_add_quant8 share the model name "add" (and "<inline>"), which the family's
    # prepared-model cache keys on: separate runs.
    results = run_family("deadline", create_device(), [hand_add_float(), hand_mul_decimals()])
    results.update(run_family("deadline", create_device(), [hand_add_quant8()]))
    preference_cases = {n: r for n, r in results.items() if ".prepare_preference_" in n}
    assert len(preference_cases) == 6
    assert all(r.verdict is Verdict.PASSED for r in results.values()), {n: r.reason for n, r in results.items()
                                                                         if r.verdict is not Verdict.PASSED}


def test_float16_under_low_power_is_caught():
    results = run_family("deadline", broken_coverage.low_power_half(), [hand_mul_decimals()])
    failures = {n: r for n, r in results.items() if r.verdict is not Verdict.PASSED}
    assert list(failures) == ["deadline/hand_mul_decimals.mul.prepare_preference_low_power"], \
        {n: r.reason for n, r in failures.items()}
    reason = failures["deadline/hand_mul_decimals.mul.prepare_preference_low_power"].reason
    assert "preference LOW_POWER" in reason


def test_float16_under_low_power_passes_generated():
    results = run_family("generated", broken_coverage.low_power_half(), [hand_mul_decimals(), hand_add_float()])
    assert results and all(r.verdict is Verdict.PASSED for r in results.values())


def _bundled(name: str) -> dict:
    import json
    import os

    from tests.ipc.conftest import ROOT

    with open(os.path.join(ROOT, "generated_tests", f"{name}.json")) as handle:
        return json.load(handle)


def test_float16_under_low_power_is_caught_on_the_bundled_cases():
    """Issue 43: the bundled MUL's golden inputs are exact in float16, so the golden check alone passed
    this driver; the LOW_POWER preparation is now also run on random real-valued inputs and compared with
    the FAST_SINGLE_ANSWER preparation of the same model."""
    results = run_family("deadline", broken_coverage.low_power_half(), [_bundled("mul_binary")])
    failures = {n: r.reason for n, r in results.items() if r.verdict is not Verdict.PASSED}
    assert failures and all(n.endswith(".prepare_preference_low_power") for n in failures), failures
    assert all("on random inputs" in reason and "against its FAST_SINGLE_ANSWER preparation" in reason
               for reason in failures.values()), failures
    float32 = [n for n in results if n.endswith(".prepare_preference_low_power") and "float16" not in n
               and "quant" not in n and "relaxed" not in n and "int32" not in n]
    assert set(float32) <= set(failures) and float32, (float32, failures)


def test_reference_passes_preferences_on_fresh_inputs():
    results = run_family("deadline", create_device(), [_bundled("mul_binary")])
    assert results and all(r.verdict is Verdict.PASSED for r in results.values()), \
        {n: r.reason for n, r in results.items() if r.verdict is not Verdict.PASSED}
