"""The bench peers agree with the reference driver on a small MobileNet (no timing: bench/ compares ratios).

ONNX Runtime is a dev-only dependency (``pip install -e .[bench]``): its tests skip without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.mobilenet import example_input, numpy_baseline, reference
from bench.prefix import prefix, single
from vts.model.builtin.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8

SIZE, ALPHA = 32, 0.25


def _steps(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())


def test_prefix_cuts_after_an_operation() -> None:
    model = build_mobilenet_v1_quant8(SIZE, alpha=ALPHA)
    part = prefix(model, 3)
    assert len(part.main.operations) == 3
    assert part.main.operands[part.main.outputs[0]].dims == (1, SIZE // 2, SIZE // 2, 16)
    ours = reference(part)
    try:
        assert ours.run().shape == (1, SIZE // 2, SIZE // 2, 16)
    finally:
        ours.close()


def test_numpy_baseline_within_a_step_of_the_reference_on_every_layer() -> None:
    """Float requantization vs NNAPI's fixed point: one step at most on any layer fed the same input."""
    model = build_mobilenet_v1_quant8(SIZE, alpha=ALPHA)
    current = example_input(model)
    for index in range(len(model.main.operations)):
        alone = single(model, index, current)
        ours, theirs = reference(alone), numpy_baseline(alone)
        try:
            current = ours.run()
            assert _steps(current, theirs.run()) <= 1, f"operation {index}"
        finally:
            ours.close()


def test_onnxruntime_agrees_with_the_reference() -> None:
    pytest.importorskip("onnxruntime")
    from bench.mobilenet import ort_session

    for build, check in ((build_mobilenet_v1_float, lambda a, b: np.abs(a - b).max() < 1e-5),
                         (build_mobilenet_v1_quant8, lambda a, b: _steps(a, b) <= 4)):
        model = build(SIZE, alpha=ALPHA)
        ours, theirs = reference(model), ort_session(model)
        try:
            assert check(ours.run(), theirs.run())
        finally:
            ours.close()
    assert example_input(model).shape == (1, SIZE, SIZE, 3)


def test_numpy_floors_do_every_layers_multiply_adds_and_stay_finite() -> None:
    """The arithmetic floor has one step per CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, in order, and
    its values stay finite through the network (inf or NaN would time other arithmetic than a driver's)."""
    from bench.numpy_floor import Scratch, arithmetic_steps, floor_runners, pointwise_steps
    from vts.hal.enums import OperationType

    model = build_mobilenet_v1_float(SIZE, alpha=ALPHA)
    counted = [op.type for op in model.main.operations if op.type in (
        OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED)]
    rng = np.random.default_rng(0)
    steps = arithmetic_steps(model.main, rng)
    assert len(steps) == len(counted) == 28
    assert len(pointwise_steps(model.main, rng)) == 13
    for step in steps:
        step()
    for _name, run in floor_runners(model):
        run()
    scratch = Scratch(rng, 64)
    source, target = scratch.take((8,), (2, 4))
    assert source.base is scratch.buffers[0] and target.base is scratch.buffers[1]
    for step in steps:  # the buffers every step wrote
        step()
    for cell in steps[-1].__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, np.ndarray):
            assert np.isfinite(value).all()


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_primitives_compute_the_same_convolution(stride: int) -> None:
    """The ufunc and einsum alternatives bench/depthwise_primitives.py times all compute the depthwise sum."""
    from bench.depthwise_primitives import einsum_rows, multiply_reduce, padded_input, ufunc_per_tap

    rng = np.random.default_rng(1)
    size, channels = 14, 8
    padded = padded_input(rng, size, channels)
    w = rng.standard_normal((3, 3, channels), dtype=np.float32)
    out_size = size // stride
    expected = np.zeros((out_size, out_size, channels))
    for i in range(3):
        for j in range(3):
            rows = padded[i:i + stride * (out_size - 1) + 1:stride].reshape(-1, size + 2, channels)
            expected += rows[:, j:j + stride * (out_size - 1) + 1:stride] * w[i, j]
    for kernel in (einsum_rows, ufunc_per_tap, multiply_reduce):
        out = np.empty((out_size, out_size, channels), dtype=np.float32)
        kernel(padded, w, out, stride)()
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_depthwise_primitives_table_runs(capsys) -> None:
    from bench import depthwise_primitives

    assert depthwise_primitives.main(runs=1) == 0
    table = capsys.readouterr().out
    assert "network total" in table and table.count(" x") >= 9
