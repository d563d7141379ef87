"""Issue 22 (4, 5): the differential family beyond the corpus's quantization parameters and sizes."""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference import create_device
from tests.fakes import broken_coverage
from tests.families.test_concurrency import not_passed
from tests.families.test_generated_variants import run_family
from tests.ipc.conftest import hand_mul_float
from vts.families.differential import quant_params
from vts.model.casemodel import parse_spec
from vts.results import Verdict


def hand_mul_quant8() -> dict:
    """Quant8 MUL of [4, 30] tensors, scales 0.5 and 0.5 into 1, zero points 0: a = i mod 10 and b = i mod 12
    in real values (stored doubled), out = a * b (integers up to 99, exact)."""
    document = hand_mul_float()
    document["name"] = "hand_mul_quant8"
    model = document["models"][0]
    operands = model["main"]["operands"]
    for operand, scale in ((operands[0], 0.5), (operands[1], 0.5), (operands[3], 1.0)):
        operand.update(type="TENSOR_QUANT8_ASYMM", scale=scale, zero_point=0, dims=[4, 30])
    a, b = [i % 10 for i in range(120)], [i % 12 for i in range(120)]
    model["examples"] = [{"inputs": {"a": [2 * x for x in a], "b": [2 * y for y in b]},
                          "outputs": {"out": [x * y for x, y in zip(a, b, strict=True)]}}]
    return document


def test_drawn_parameters_are_valid_and_wide():
    model = parse_spec(hand_mul_quant8())[0]
    assert quant_params.eligible(model)
    assert not quant_params.eligible(parse_spec(hand_mul_float())[0])
    rng = np.random.Generator(np.random.PCG64(1))
    zero_points = set()
    for draw in range(40):
        drawn = quant_params.drawn_model(model, rng, draw)
        a, b, _act, out = drawn.main.operands
        assert out.scale > a.scale * b.scale  # MUL's rule in every HAL version
        zero_points |= {a.zero_point, b.zero_point, out.zero_point}
        example = quant_params.full_range_example(drawn, rng, "x")
        assert example.inputs[0].value.dtype == np.uint8
    assert {0, 255} <= zero_points and len(zero_points) > 10


def test_reference_passes_drawn_quant_params():
    results = run_family("differential", create_device(), [hand_mul_quant8()])
    (result,) = results.values()
    assert result.verdict is Verdict.PASSED and "3 drawn quantization parameter sets matched" in result.reason, \
        not_passed(results)


def test_mul_with_a_16_bit_product_is_caught():
    results = run_family("differential", broken_coverage.mul_product_in_16_bits(), [hand_mul_quant8()])
    (result,) = results.values()
    assert result.verdict is Verdict.FAILED and "drawn quantization parameters" in result.reason, not_passed(results)


def test_mul_with_a_16_bit_product_passes_generated():
    results = run_family("generated", broken_coverage.mul_product_in_16_bits(), [hand_mul_quant8()])
    assert results and not not_passed(results)


def _large(device, budget: float = 600.0) -> dict:
    from vts.families.base import RunOptions
    from vts.families.differential.family import DifferentialFamily
    from vts.run.runner import Runner

    family = DifferentialFamily()
    runner = Runner(device, RunOptions(case_timeout=300, large_budget=budget))
    wanted = ("differential/large/add_float32_4x128x128x64", "differential/large/mul_quant8_2x64x128x128")
    return {case.name: runner.run_case(family, case) for case in family.device_cases() if case.name in wanted}


def test_reference_passes_realistic_sizes():
    results = _large(create_device())
    assert len(results) == 2 and not not_passed(results)


def test_add_wrong_past_2_20_elements_is_caught_at_realistic_sizes():
    results = _large(broken_coverage.add_wrong_past_2_20())
    assert results["differential/large/add_float32_4x128x128x64"].verdict is Verdict.FAILED
    assert results["differential/large/mul_quant8_2x64x128x128"].verdict is Verdict.PASSED


def test_a_spent_budget_skips_the_large_cases():
    results = _large(create_device(), budget=0)
    assert {r.verdict for r in results.values()} == {Verdict.SKIPPED}
    assert "--large-budget" in next(iter(results.values())).reason
