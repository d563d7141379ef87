"""Authoring-layer variations expand into the expected concrete models."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.spec.helpers import BASE, base_document, write
from vts.spec.errors import SpecError
from vts.spec.loader import load_document, load_file
from vts.spec.transforms import quantize
from vts.spec.values import TYPES
from vts.spec.writer import render

CONV = """\
nnvts: 1
name: conv
hal_version: "1.0"
source: {kind: hand, detail: hand-computed}
models:
  - name: conv
    main:
      operands:
        - {name: op1, type: TENSOR_FLOAT32, dims: [1, 2, 2, 3], lifetime: SUBGRAPH_INPUT}
        - {name: op2, type: TENSOR_FLOAT32, dims: [1, 1, 1, 3], lifetime: CONSTANT_COPY,
           value: [0.5, 0.25, 1]}
        - {name: op3, type: TENSOR_FLOAT32, dims: [1], lifetime: CONSTANT_COPY, value: [0.1]}
        - {name: pad, type: INT32, lifetime: CONSTANT_COPY, value: 0}
        - {name: stride, type: INT32, lifetime: CONSTANT_COPY, value: 1}
        - {name: act, type: INT32, lifetime: CONSTANT_COPY, value: 0}
        - {name: layout, type: BOOL, lifetime: CONSTANT_COPY, value: false}
        - {name: op4, type: TENSOR_FLOAT32, dims: [1, 2, 2, 1], lifetime: SUBGRAPH_OUTPUT}
      operations:
        - {type: CONV_2D, inputs: [op1, op2, op3, pad, pad, pad, pad, stride, stride, act, layout],
           outputs: [op4]}
      inputs: [op1]
      outputs: [op4]
    examples:
      - inputs: {op1: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}
        outputs: {op4: [2.35, 7.6, 12.85, 18.1]}
"""
# A 1x1 convolution: op4 = 0.5 * c0 + 0.25 * c1 + 1 * c2 + 0.1 for each pixel (c0, c1, c2) of op1:
# (0, 1, 2) -> 2.35, (3, 4, 5) -> 7.6, (6, 7, 8) -> 12.85, (9, 10, 11) -> 18.1.


def conv(variations: list[Any] | None = None) -> dict[str, Any]:
    doc = yaml.safe_load(CONV)
    if variations is not None:
        doc["models"][0]["variations"] = variations
    return doc


def expand(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in load_document(doc)["models"]}


def operand(model: dict[str, Any], name: str) -> dict[str, Any]:
    return next(o for o in model["main"]["operands"] if o["name"] == name)


def test_concrete_document_is_returned_unchanged() -> None:
    doc = conv()
    assert load_document(doc) is doc


def test_cross_product_order_and_names() -> None:
    models = load_document(conv([
        [{"name": "nhwc"}, {"nchw": ["op1", "op4", "layout"]}],
        ["none", "relaxed", "float16"],
    ]))["models"]
    assert [m["name"] for m in models] == [
        "conv_nhwc", "conv_nhwc_relaxed", "conv_nhwc_float16",
        "conv_nchw", "conv_nchw_relaxed", "conv_nchw_float16",
    ]
    assert all("variations" not in m for m in models)


def test_float16_rounds_values_to_halves_and_raises_hal_version() -> None:
    model = expand(conv([["float16"]]))["conv_float16"]
    assert {o["type"] for o in model["main"]["operands"] if o["name"].startswith("op")} == {"TENSOR_FLOAT16"}
    assert operand(model, "op3")["value"] == [0.0999755859375]  # 0.1 to the nearest half
    assert model["examples"][0]["outputs"]["op4"] == [2.349609375, 7.6015625, 12.8515625, 18.09375]
    assert model["hal_version"] == "1.2"
    assert operand(model, "pad")["type"] == "INT32"


def test_relaxed_sets_the_flag() -> None:
    model = expand(conv([["relaxed"]]))["conv_relaxed"]
    assert model["relaxed"] is True and model["hal_version"] == "1.1"


def test_int32_converts_integral_values_and_refuses_others() -> None:
    doc = base_document()
    doc["models"][0]["variations"] = [["int32"]]
    model = expand(doc)["add_int32"]
    assert operand(model, "b") == {"name": "b", "type": "TENSOR_INT32", "dims": [2],
                                   "lifetime": "CONSTANT_COPY", "value": [1, 2]}
    with pytest.raises(SpecError, match=r"int32: value 0.5 \(element 0\) is not an integer") as info:
        load_document(conv([["int32"]]))
    assert info.value.pointer == "/models/0/variations/0/0"


QUANT = {"op1": [0.5, 128], "op2": [0.25, 0], "op3": {"type": "TENSOR_INT32", "scale": 0.125},
         "op4": {"scale": 0.5, "zero_point": 100}}


def test_quant8_quantizes_real_values_half_away_from_zero() -> None:
    model = expand(conv([[{"quant8": QUANT}]]))["conv_quant8"]
    op1, op2, op3 = (operand(model, n) for n in ("op1", "op2", "op3"))
    assert (op1["type"], op1["scale"], op1["zero_point"]) == ("TENSOR_QUANT8_ASYMM", 0.5, 128)
    # 0..11 / 0.5 + 128, clamped to 255
    assert model["examples"][0]["inputs"]["op1"] == [128 + 2 * i for i in range(12)]
    assert op2["value"] == [2, 1, 4] and "zero_point" not in op2
    assert (op3["type"], op3["scale"], op3["value"]) == ("TENSOR_INT32", 0.125, [1])  # 0.8 -> 1
    # 2.35 / 0.5 = 4.7 -> 5; 7.6 -> 15.2 -> 15; 12.85 -> 25.7 -> 26; 18.1 -> 36.2 -> 36; plus 100
    assert model["examples"][0]["outputs"]["op4"] == [105, 115, 126, 136]
    assert model.get("hal_version", "1.0") == "1.0"


def test_quantize_rounding_and_clamping() -> None:
    et = TYPES["TENSOR_QUANT8_ASYMM"]
    real = [0.25, -0.25, 0.75, -0.75, 1000.0, -1000.0]
    assert quantize(real, 0.5, 10, et).tolist() == [11, 9, 12, 8, 255, 0]
    signed = TYPES["TENSOR_QUANT8_ASYMM_SIGNED"]
    assert quantize([0.5, -0.5, 1e9], 1.0, -1, signed).tolist() == [0, -2, 127]
    channel = {"dim": 0, "scales": [0.5, 0.25]}
    per_channel_type = TYPES["TENSOR_QUANT8_SYMM_PER_CHANNEL"]
    per_channel = quantize([1.0, -1.0, 1.0, 100.0], 0.0, 0, per_channel_type, channel, [2, 2])
    assert per_channel.tolist() == [2, -2, 4, 127]


def test_quant8_signed_twin_of_quant8() -> None:
    models = expand(conv([["none", {"quant8": QUANT}, {"quant8_signed": QUANT}]]))
    unsigned, signed = models["conv_quant8"], models["conv_quant8_signed"]
    assert operand(signed, "op1")["type"] == "TENSOR_QUANT8_ASYMM_SIGNED"
    assert operand(signed, "op1")["zero_point"] == 0 and operand(signed, "op4")["zero_point"] == -28
    assert operand(signed, "op2")["zero_point"] == -128
    assert operand(signed, "op2")["value"] == [v - 128 for v in operand(unsigned, "op2")["value"]]
    assert operand(signed, "op3") == operand(unsigned, "op3")  # TENSOR_INT32 bias is unchanged
    for side, name in (("inputs", "op1"), ("outputs", "op4")):
        assert signed["examples"][0][side][name] == [v - 128 for v in unsigned["examples"][0][side][name]]
    assert signed["hal_version"] == "1.3"


def test_quant8_signed_shorthand_on_a_concrete_quant8_model() -> None:
    doc = base_document()
    for o in doc["models"][0]["main"]["operands"]:
        if o["type"] == "TENSOR_FLOAT32":
            o.update(type="TENSOR_QUANT8_ASYMM", scale=0.5, zero_point=3)
    doc["models"][0]["variations"] = [["none", "quant8_signed"]]
    signed = expand(doc)["add_quant8_signed"]
    assert operand(signed, "b")["value"] == [-127, -126]
    assert signed["examples"][0]["outputs"]["out"] == [-126, -124]
    assert operand(signed, "a")["zero_point"] == -125


def test_quant8_per_channel() -> None:
    channel = {"type": "TENSOR_QUANT8_SYMM_PER_CHANNEL",
               "channel_quant": {"dim": 3, "scales": [0.5, 0.25, 0.5]}}
    variation = {"name": "channelQuant8", "quant8": {**QUANT, "op2": channel}}
    model = expand(conv([[variation]]))["conv_channelQuant8"]
    op2 = operand(model, "op2")
    assert op2["value"] == [1, 1, 2] and op2["channel_quant"] == channel["channel_quant"]
    assert "scale" not in op2 and model["hal_version"] == "1.2"


def test_nchw_transposes_values_dims_and_sets_layout() -> None:
    model = expand(conv([[{"nchw": ["op1", "op4", "layout"]}]]))["conv_nchw"]
    assert operand(model, "op1")["dims"] == [1, 3, 2, 2]
    assert model["examples"][0]["inputs"]["op1"] == [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]
    assert operand(model, "op4")["dims"] == [1, 1, 2, 2]
    assert model["examples"][0]["outputs"]["op4"] == [2.35, 7.6, 12.85, 18.1]
    assert operand(model, "layout")["value"] is True
    assert operand(model, "op2")["dims"] == [1, 1, 1, 3]  # the filter keeps its layout


def test_nchw_long_form_and_b64() -> None:
    import base64

    import numpy as np

    doc = conv([[{"nchw": ["op1", "op2", "layout"]}]])
    doc["models"][0]["examples"][0]["inputs"]["op1"] = {"dims": [1, 2, 2, 3], "value": list(range(12))}
    doc["models"][0]["main"]["operands"][1]["value"] = {
        "b64": base64.b64encode(np.array([0.5, 0.25, 1], dtype="<f4").tobytes()).decode()}
    model = expand(doc)["conv_nchw"]
    assert model["examples"][0]["inputs"]["op1"] == {"dims": [1, 3, 2, 2],
                                                     "value": [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]}
    assert operand(model, "op2")["dims"] == [1, 3, 1, 1]


def test_all_tensors_as_inputs_moves_constants_into_examples() -> None:
    model = expand(conv([["all_tensors_as_inputs"]]))["conv_all_tensors_as_inputs"]
    assert model["main"]["inputs"] == ["op1", "op2", "op3"]
    assert operand(model, "op2")["lifetime"] == "SUBGRAPH_INPUT" and "value" not in operand(model, "op2")
    assert model["examples"][0]["inputs"]["op2"] == [0.5, 0.25, 1]
    assert model["examples"][0]["inputs"]["op3"] == [0.1]
    assert operand(model, "pad")["lifetime"] == "CONSTANT_COPY"  # scalars stay constants


def test_all_inputs_as_internal_feeds_inputs_through_add() -> None:
    models = expand(conv([[{"quant8": QUANT}], ["all_inputs_as_internal"]]))
    model = models["conv_quant8_all_inputs_as_internal"]
    main = model["main"]
    assert main["inputs"] == ["op1_new"]
    assert operand(model, "op1")["lifetime"] == "TEMPORARY_VARIABLE"
    new, placeholder, act = (operand(model, n) for n in ("op1_new", "op1_placeholder", "op1_activation"))
    assert new["lifetime"] == "SUBGRAPH_INPUT" and new["zero_point"] == 128
    assert placeholder["value"] == [128] and placeholder["dims"] == [1] and act["value"] == [0]
    assert main["operations"][0] == {
        "type": "ADD", "inputs": ["op1_new", "op1_placeholder", "op1_activation"], "outputs": ["op1"]}
    assert list(model["examples"][0]["inputs"]) == ["op1_new"]


def test_expansion_is_deterministic() -> None:
    variations = [[{"name": "nhwc"}, {"nchw": ["op1", "op4", "layout"]}],
                  ["none", "relaxed", "float16", {"quant8": QUANT}, {"quant8_signed": QUANT}],
                  ["none", "all_tensors_as_inputs", "all_inputs_as_internal"]]
    first = load_document(conv(copy.deepcopy(variations)))
    second = load_document(conv(copy.deepcopy(variations)))
    assert len(first["models"]) == 30 and render(first) == render(second)


def test_source_document_is_not_modified() -> None:
    doc = conv([["float16", "all_tensors_as_inputs"]])
    before = copy.deepcopy(doc)
    load_document(doc)
    assert doc == before


@pytest.mark.parametrize(("variations", "pointer", "words"), [
    ([[{"quant8": {"nope": [0.5, 0]}}]], "/models/0/variations/0/0/quant8/nope", "no operand named 'nope'"),
    ([[{"quant8": {"pad": [0.5, 0]}}]], "/models/0/variations/0/0/quant8/pad", "only float tensors"),
    ([[{"quant8": {"op1": [0.0, 0]}}]], "/models/0/variations/0/0/quant8/op1", "positive scale"),
    ([[{"nchw": ["op3"]}]], "/models/0/variations/0/0/nchw/0", "neither a 4-D tensor"),
    ([["quant8_signed"]], "/models/0/variations/0/0", "applies to no combination"),
    ([["relaxed", {"name": "relaxed", "float16": True}]], "/models/0/variations", "produced twice"),
    ([["bogus"]], "/models/0/variations/0/0", "expected a variation"),
    ([[{"float16": False}]], "/models/0/variations/0/0/float16", "expected true, got false"),
])
def test_variation_errors(variations: list[Any], pointer: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        load_document(conv(variations))
    assert info.value.pointer == pointer and words in str(info.value), str(info.value)


def test_variation_errors_are_located_in_the_file(tmp_path: Path) -> None:
    text = BASE + "    variations:\n      - [none, {quant8: {zz: [0.5, 0]}}]\n"
    with pytest.raises(SpecError) as info:
        load_file(write(tmp_path, "v.yaml", text))
    assert (info.value.line, info.value.pointer) == (21, "/models/0/variations/0/1/quant8/zz")


def test_skipped_combinations_are_left_out() -> None:
    # all_tensors_as_inputs applies to conv; quant8_signed only after quant8 made a QUANT8_ASYMM operand.
    doc = conv([["none", {"quant8": QUANT}], ["none", "quant8_signed"]])
    names = [m["name"] for m in load_document(doc)["models"]]
    assert names == ["conv", "conv_quant8", "conv_quant8_quant8_signed"]
