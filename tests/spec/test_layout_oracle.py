"""Shapes that tell layouts apart (issue 43): the oracle's specs are current, its arithmetic is NNAPI's,
and a driver computing NCHW pooling padding from NHWC positions fails them (it passed every older case)."""

from __future__ import annotations

import json
import os

import numpy as np
import yaml

from nnvts.drivers.reference import create_device
from tests.fakes.layouts import nchw_pool_padding_from_nhwc, nchw_transpose_shape_from_nhwc
from tests.families.test_generated_variants import run_family
from tests.ipc.conftest import ROOT
from tools import layout_oracle
from vts.results import Verdict


def _bundled(name: str) -> dict:
    with open(os.path.join(ROOT, "generated_tests", f"{name}.json")) as handle:
        return json.load(handle)


def test_the_specs_are_what_the_oracle_gives():
    assert layout_oracle.main(["--check"]) == 0


def test_the_oracle_pads_and_averages_as_nnapi_does():
    # SAME, stride 2, filter 3: 5 -> 3 outputs, (3 - 1) * 2 + 3 - 5 = 2 -> 1 + 1; 6 -> 3, total 1 -> 0 + 1.
    assert layout_oracle.padding(5, 2, 3, layout_oracle.SAME) == (3, 1, 1)
    assert layout_oracle.padding(6, 2, 3, layout_oracle.SAME) == (3, 0, 1)
    assert layout_oracle.padding(6, 2, 3, layout_oracle.VALID) == (2, 0, 0)
    x = np.arange(1, 10, dtype=np.float64).reshape(1, 3, 3, 1)  # the hand-computed average_pool_2d_hand case
    g = layout_oracle.Geometry("t", (1, 3, 3, 1), (2, 2), (1, 1), layout_oracle.SAME)
    assert layout_oracle.pool("AVERAGE_POOL_2D", x, g).reshape(-1).tolist() == [3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9]
    # depth_to_space_basic's hand case: (pixel w0) 1 2 3 4, (pixel w1) 5 6 7 8 -> 1 2 5 6 / 3 4 7 8.
    d2s = layout_oracle.depth_to_space(np.arange(1, 9, dtype=np.float64).reshape(1, 1, 2, 4), 2)
    assert d2s.reshape(-1).tolist() == [1, 2, 5, 6, 3, 4, 7, 8]
    assert np.array_equal(layout_oracle.space_to_depth(d2s, 2), np.arange(1, 9).reshape(1, 1, 2, 4))
    # space_to_batch_nd_basic's: x [1, 2, 4, 1] = 1 3 2 4 / 5 7 6 8, block [2, 2] -> 1 2 | 3 4 | 5 6 | 7 8.
    s2b = layout_oracle.space_to_batch(np.array([1, 3, 2, 4, 5, 7, 6, 8], np.float64).reshape(1, 2, 4, 1), (2, 2),
                                       (0, 0, 0, 0))
    assert s2b.reshape(-1).tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    # resize_bilinear_basic's 3x3 legacy centre: (1 + 2*3 + 2*2 + 4*4) / 9 = 3.
    x = np.array([1, 2, 3, 4], np.float64).reshape(1, 2, 2, 1)
    assert layout_oracle.resize(x, (3, 3), True)[0, 1, 1, 0] == 3.0
    assert layout_oracle.resize(x, (3, 3), False).reshape(-1).tolist() == [1, 1, 2, 1, 1, 2, 3, 3, 4]


def test_the_transpose_oracle_matches_transpose_conv_2d_hand():
    # specs/conv/transpose_conv_2d.yaml, hand-computed: stride2 (pads 0, stride 2) and overlap (pads 1, stride 1).
    x = np.array([1, 2, 3, 4], np.float64).reshape(1, 2, 2, 1)
    f2 = np.array([1, 2, 3, 4], np.float64).reshape(1, 2, 2, 1)
    stride2 = [1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16]
    assert layout_oracle.transpose_conv(x, f2, np.zeros(1), (2, 2), (0, 0, 0, 0)).reshape(-1).tolist() == stride2
    f3 = np.arange(1, 10, dtype=np.float64).reshape(1, 3, 3, 1)
    overlap = layout_oracle.transpose_conv(x, f3, np.array([-3.0]), (1, 1), (1, 1, 1, 1))
    assert overlap.reshape(-1).tolist() == [20, 30, 50, 60]
    # implicit_same: output shape 4 x 4, SAME, stride 2, filter 2 -> no padding, the stride2 result again.
    pads = layout_oracle.transpose_pads((4, 4), (2, 2), (2, 2), layout_oracle.SAME)
    assert pads == (0, 0, 0, 0)
    # The new SAME model: 6 x 10 out, stride 2, a 3 x 4 filter: heights pad 0 + 1, widths 1 + 1.
    assert layout_oracle.transpose_pads((6, 10), (2, 2), (3, 4), layout_oracle.SAME) == (0, 1, 1, 1)
    assert layout_oracle.transpose_pads((7, 12), (2, 2), (3, 4), layout_oracle.VALID) == (0, 0, 0, 0)


def _hand_model(path: str, model: str) -> tuple[dict, dict]:
    """The float32 model of a hand-computed spec: its operands by name and its first example."""
    with open(os.path.join(ROOT, "specs", "detection", path)) as handle:
        spec = yaml.safe_load(handle)
    found = next(m for m in spec["models"] if m["name"] == model)
    return {o["name"]: o for o in found["main"]["operands"]}, found["examples"][0]


def test_the_roi_oracles_match_the_hand_computed_roi_specs():
    for model, sampling in (("float32", (2, 2)), ("adaptive_float32", (0, 0))):
        operands, example = _hand_model("roi_align.yaml", model)
        assert [operands["sampling_h"]["value"], operands["sampling_w"]["value"]] == list(sampling)
        x = np.array(example["inputs"]["input"], np.float64).reshape(2, 4, 4, 2)
        rois = np.array(example["inputs"]["rois"], np.float64).reshape(-1, 4)
        got = layout_oracle.roi_align(x, rois, operands["batches"]["value"], (2, 2), (2.0, 2.0), sampling)
        assert got.reshape(-1).tolist() == example["outputs"]["output"], model
    operands, example = _hand_model("roi_pooling.yaml", "float32")
    x = np.array(example["inputs"]["input"], np.float64).reshape(2, 4, 4, 2)
    rois = np.array(example["inputs"]["rois"], np.float64).reshape(-1, 4)
    ratio = (operands["h_ratio"]["value"], operands["w_ratio"]["value"])
    got = layout_oracle.roi_pool(x, rois, operands["batches"]["value"], (2, 2), ratio)
    assert got.reshape(-1).tolist() == example["outputs"]["output"]


def test_every_axis_differs_in_every_geometry():
    for g in layout_oracle.GEOMETRIES:
        _, h, w, c = g.shape
        assert len({h, w, c}) == 3 and max(g.stride_hw) > 1


def test_the_reference_passes_the_new_shapes():
    results = run_family("generated", create_device(), [_bundled(f"layout_distinct_{name}")
                                                         for name in ("pooling", "conv", "space")])
    assert len(results) == 42 and all(r.verdict is Verdict.PASSED for r in results.values())


def test_the_reference_passes_the_transpose_conv_shapes():
    results = run_family("generated", create_device(), [_bundled("layout_distinct_transpose_conv")])
    assert len(results) == 6 and all(r.verdict is Verdict.PASSED for r in results.values()), results


def test_the_reference_passes_the_roi_shapes():
    results = run_family("generated", create_device(), [_bundled("layout_distinct_roi")])
    assert len(results) == 6 and all(r.verdict is Verdict.PASSED for r in results.values()), results


def test_nchw_pooling_padding_from_nhwc_positions_fails_only_on_the_new_shapes():
    old = run_family("generated", nchw_pool_padding_from_nhwc(),
                     [_bundled(n) for n in ("average_pool_2d_hand", "max_pool_2d_hand", "l2_pool_2d_hand")])
    assert old and all(r.verdict is Verdict.PASSED for r in old.values())  # what the older shapes missed
    new = run_family("generated", nchw_pool_padding_from_nhwc(), [_bundled("layout_distinct_pooling")])
    failing = {n for n, r in new.items() if r.verdict is not Verdict.PASSED}
    assert failing == {f"layout_distinct_pooling.{kind}_{g}_nchw" for kind in ("average", "max", "l2")
                       for g in ("same_s2", "same_rect")}, failing


def test_an_nchw_output_shape_read_at_nhwc_positions_fails_only_on_the_new_shapes():
    old = run_family("generated", nchw_transpose_shape_from_nhwc(), [_bundled("transpose_conv_2d_hand")])
    assert old and all(r.verdict is Verdict.PASSED for r in old.values())  # no NCHW implicit case there
    new = run_family("generated", nchw_transpose_shape_from_nhwc(), [_bundled("layout_distinct_transpose_conv")])
    failing = {n for n, r in new.items() if r.verdict is not Verdict.PASSED}
    # VALID pads nothing whatever the size: only SAME tells the axes apart.
    assert failing == {"layout_distinct_transpose_conv.transpose_same_s2_nchw"}, failing
