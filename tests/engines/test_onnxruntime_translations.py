"""The ONNX Runtime translations of RESIZE_*, STRIDED_SLICE and LRN on any axis, on hand-computed goldens.

Skipped when the onnxruntime extra is not installed.  Before these
translations the driver answered every one of these models unsupported
(so the generated cases were skipped, and the pass counts below fail).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from vts.model.casemodel import close_model, parse_spec, to_hal_model
from vts.results import Verdict
from vts.spec.loader import load_file

pytestmark = pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None,
                                reason="onnxruntime extra not installed (pip install 'nnvts[onnxruntime]')")


@pytest.fixture(scope="module")
def device():
    from vts.ipc.drivers import DriverRef

    return DriverRef("onnxruntime").load()


def _document(name: str) -> dict:
    return load_file(f"generated_tests/{name}.json").document


def _reasons(device, name: str) -> dict[str, list]:
    reasons = {}
    for model in parse_spec(_document(name)):
        hal = to_hal_model(model)
        try:
            reasons[model.case_name()] = device.unsupported_reasons(hal)
        finally:
            close_model(hal)
    return reasons


@pytest.mark.parametrize("name", ["resize_bilinear_basic", "resize_nearest_neighbor_basic", "strided_slice_basic",
                                  "local_response_normalization_axis"])
def test_every_valid_model_passes_its_golden(device, run_generated, name):
    results = run_generated(_document(name), device)
    expect_failure = {m.case_name() for m in parse_spec(_document(name)) if m.expect_failure}
    for result in results:
        if any(result.name.startswith(n) for n in expect_failure):
            continue
        assert result.verdict is Verdict.PASSED, (result.name, result.reason)
    assert sum(r.verdict is Verdict.PASSED for r in results) >= 4


def test_lrn_on_the_first_axis_is_supported(device):
    reasons = _reasons(device, "local_response_normalization_axis")
    assert reasons["local_response_normalization_axis.float32_axis0"] == [None]


def test_models_nnapi_must_fail_are_unsupported_with_the_reason(device):
    """ONNX would return a result where NNAPI fails: never claimed, so never a wrong answer."""
    slices = _reasons(device, "strided_slice_basic")
    for name in ("strided_slice_basic.shrink_two_rows", "strided_slice_basic.shrink_negative_stride"):
        (reason,) = slices[name]
        assert reason and "shrinks axis 0" in reason, reason
    (reason,) = _reasons(device, "resize_bilinear_basic")["resize_bilinear_basic.align_corners_and_half_pixel"]
    assert reason and "align_corners with half_pixel_centers" in reason


def test_nnapi_nearest_indices_by_hand():
    from nnvts.drivers.onnxruntime.resize import nnapi_nearest_indices

    assert nnapi_nearest_indices(14, 2, False, False) == [0, 7]  # floor(1 * 14 / 2)
    assert nnapi_nearest_indices(2, 4, False, True) == [0, 0, 1, 1]  # floor((y + 0.5) / 2)
    assert nnapi_nearest_indices(3, 5, True, False) == [0, 1, 1, 2, 2]  # round(y * 2 / 4), halves up


def _ort_nearest(in_size: int, out_size: int, ctm: str, nearest_mode: str) -> list[int]:
    from onnx import TensorProto, helper

    from nnvts.drivers.onnxruntime.translator import session

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, in_size])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 1, 1, out_size])
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                            coordinate_transformation_mode=ctm, nearest_mode=nearest_mode)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [sizes]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    out = session(model.SerializeToString()).run(None, {"x": np.arange(in_size, dtype=np.float32).reshape(1, 1, 1, -1)})
    return [int(v) for v in out[0].reshape(-1)]


@pytest.mark.parametrize(("align", "half", "ctm", "nearest_mode"), [
    (False, False, "asymmetric", "floor"), (True, False, "align_corners", "round_prefer_ceil"),
    (False, True, "tf_half_pixel_for_nn", "floor")])
def test_onnx_nearest_indices_mirror_the_engine(align, half, ctm, nearest_mode):
    """The support decision rests on this mirror of ONNX Runtime's arithmetic: hold it to the engine."""
    from nnvts.drivers.onnxruntime.resize import onnx_nearest_indices

    for in_size in (1, 2, 3, 5, 7, 14, 20):
        for out_size in (1, 2, 3, 4, 6, 9, 12, 16, 24):
            assert onnx_nearest_indices(in_size, out_size, align, half) == \
                _ort_nearest(in_size, out_size, ctm, nearest_mode), (in_size, out_size)


def test_a_size_where_onnx_picks_another_pixel_is_unsupported(device):
    """14 -> 2 pixels: NNAPI reads pixel 7, ONNX Runtime's arithmetic pixel 6."""
    from nnvts.drivers.onnxruntime.resize import onnx_nearest_indices

    assert onnx_nearest_indices(14, 2, False, False) == [0, 6]
    document = _document("resize_nearest_neighbor_basic")
    model = next(m for m in document["models"] if m["name"] == "legacy_nhwc")
    operands = model["main"]["operands"]
    data = next(o for o in operands if o["lifetime"] == "SUBGRAPH_INPUT")
    result = next(o for o in operands if o["lifetime"] == "SUBGRAPH_OUTPUT")
    width, height = (o for o in operands if o["lifetime"] == "CONSTANT_COPY" and o["type"] == "INT32")
    data["dims"], result["dims"] = [1, 1, 14, 1], [1, 1, 2, 1]
    width["value"], height["value"] = 2, 1
    model["examples"] = [{"inputs": {data["name"]: list(range(14))}, "outputs": {result["name"]: [0, 7]}}]
    model.pop("variations", None)
    document["models"] = [model]
    (parsed,) = parse_spec(document)
    hal = to_hal_model(parsed)
    try:
        (reason,) = device.unsupported_reasons(hal)
    finally:
        close_model(hal)
    assert reason and "from 14 to 2 along W" in reason, reason
