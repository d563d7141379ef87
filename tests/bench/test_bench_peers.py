"""The bench peers agree with the reference driver on a small MobileNet (no timing: bench/ compares ratios).

ONNX Runtime is a dev-only dependency (``pip install -e .[bench]``): its tests skip without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.mobilenet import example_input, numpy_baseline, reference
from bench.prefix import prefix, single
from vts.models.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8

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
