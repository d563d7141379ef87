"""The numpy oracle behind the ``layout_distinct_*`` specs (pooling, conv, transpose conv, shape, ROI).

Issue 43: the bundled NCHW cases of the layout-sensitive operations used shapes
that cannot tell the axes apart (one channel, stride 1, square maps), so a
driver computing NCHW padding from NHWC positions passed them all.  These
models use shapes where every axis is distinct and the padding matters: odd
and even sizes, C, H and W all different, stride 2 (and 3), SAME and VALID,
a rectangular filter.  Each model is written once in NHWC; its
``nchw`` variation transposes the input and output and their goldens (the
NHWC golden transposed: the second oracle the spec names).

The goldens are computed here, in float64 numpy, from the NNAPI definitions
(NeuralNetworks.h: implicit padding ``total = max((out - 1) * stride +
filter - in, 0)``, head ``total / 2``; average and L2 pooling count only
the real pixels; TRANSPOSE_CONV_2D, ROI_ALIGN and ROI_POOLING as their
OperationType.aidl entries and the hand-computed specs of those operations
say), never from a driver: ``python -m tools.layout_oracle`` rewrites the
spec files, ``--check`` says whether they are current (tests/spec/test_layout_oracle.py
runs it).  An implicit TRANSPOSE_CONV_2D's output-shape tensor is 1-D, which the
``nchw`` variation cannot reorder: those models are written in both layouts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POOLING_SPEC = os.path.join(ROOT, "specs", "pooling", "layout_distinct_pooling.yaml")
CONV_SPEC = os.path.join(ROOT, "specs", "conv", "layout_distinct_conv.yaml")
SPACE_SPEC = os.path.join(ROOT, "specs", "shape", "layout_distinct_space.yaml")
TRANSPOSE_SPEC = os.path.join(ROOT, "specs", "conv", "layout_distinct_transpose_conv.yaml")
ROI_SPEC = os.path.join(ROOT, "specs", "detection", "layout_distinct_roi.yaml")
SAME, VALID = 1, 2


@dataclass(frozen=True)
class Geometry:
    """One window geometry: NHWC input shape, filter (h, w), strides (h, w), padding scheme."""

    name: str
    shape: tuple[int, int, int, int]
    filter_hw: tuple[int, int]
    stride_hw: tuple[int, int]
    scheme: int


#: H, W and C all different, and SAME padding differing between the axes (it depends on each size).
GEOMETRIES = (
    Geometry("same_s2", (1, 5, 6, 4), (3, 3), (2, 2), SAME),
    Geometry("valid_s2", (1, 5, 6, 4), (3, 3), (2, 2), VALID),
    Geometry("same_rect", (1, 7, 5, 2), (2, 3), (3, 2), SAME),
)


def padding(size: int, stride: int, filter_size: int, scheme: int) -> tuple[int, int, int]:
    """(out, head, tail) for one axis, as NeuralNetworks.h defines the implicit schemes."""
    if scheme == SAME:
        out = (size + stride - 1) // stride
        total = max((out - 1) * stride + filter_size - size, 0)
        return out, total // 2, total - total // 2
    return (size - filter_size) // stride + 1, 0, 0


def values(shape: tuple[int, ...], salt: int) -> np.ndarray:
    """Deterministic, distinct-looking multiples of 0.25 in [-2.75, 2.75] (exact in float16 and float32)."""
    count = int(np.prod(shape))
    return ((np.arange(count) * 37 + salt * 11) % 23 - 11).astype(np.float64).reshape(shape) / 4


def windows(x: np.ndarray, g: Geometry):
    """Yield (y, x, patch, mask) for each output position: the padded patch (NaN outside) of shape kh x kw x C."""
    _, h, w, c = x.shape
    (kh, kw), (sh, sw) = g.filter_hw, g.stride_hw
    oh, top, _ = padding(h, sh, kh, g.scheme)
    ow, left, _ = padding(w, sw, kw, g.scheme)
    for oy in range(oh):
        for ox in range(ow):
            patch = np.full((kh, kw, c), np.nan)
            for i in range(kh):
                for j in range(kw):
                    yy, xx = oy * sh - top + i, ox * sw - left + j
                    if 0 <= yy < h and 0 <= xx < w:
                        patch[i, j] = x[0, yy, xx]
            yield oy, ox, patch, (oh, ow)


def pool(kind: str, x: np.ndarray, g: Geometry) -> np.ndarray:
    out = None
    for oy, ox, patch, (oh, ow) in windows(x, g):
        if out is None:
            out = np.zeros((1, oh, ow, x.shape[3]))
        real = ~np.isnan(patch[:, :, 0])
        pixels = patch[real]  # count x C
        if kind == "AVERAGE_POOL_2D":
            out[0, oy, ox] = pixels.mean(axis=0)
        elif kind == "MAX_POOL_2D":
            out[0, oy, ox] = pixels.max(axis=0)
        else:
            out[0, oy, ox] = np.sqrt((pixels ** 2).mean(axis=0))
    assert out is not None
    return out


def conv(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, g: Geometry) -> np.ndarray:
    """CONV_2D, filter OHWI."""
    out = None
    for oy, ox, patch, (oh, ow) in windows(x, g):
        if out is None:
            out = np.zeros((1, oh, ow, weights.shape[0]))
        taps = np.nan_to_num(patch)  # padding reads zeros
        out[0, oy, ox] = np.einsum("hwc,ohwc->o", taps, weights) + bias
    assert out is not None
    return out


def depthwise(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, g: Geometry, multiplier: int) -> np.ndarray:
    """DEPTHWISE_CONV_2D, filter [1, H, W, C * multiplier]: output channel c * M + m reads input channel c."""
    out = None
    for oy, ox, patch, (oh, ow) in windows(x, g):
        if out is None:
            out = np.zeros((1, oh, ow, weights.shape[3]))
        taps = np.repeat(np.nan_to_num(patch), multiplier, axis=2)
        out[0, oy, ox] = (taps * weights[0]).sum(axis=(0, 1)) + bias
    assert out is not None
    return out


def depth_to_space(x: np.ndarray, block: int) -> np.ndarray:
    """Input pixel (h, w), channel (dy * block + dx) * C + c goes to output pixel (h * block + dy, w * block + dx)."""
    n, h, w, depth = x.shape
    c = depth // (block * block)
    return x.reshape(n, h, w, block, block, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * block, w * block, c)


def space_to_depth(x: np.ndarray, block: int) -> np.ndarray:
    n, h, w, c = x.shape
    return x.reshape(n, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h // block, w // block, block * block * c)


def space_to_batch(x: np.ndarray, block_hw: tuple[int, int], pads: tuple[int, int, int, int]) -> np.ndarray:
    """Pad (top, bottom, left, right), then output batch (dy * bw + dx) * N + i takes pixels
    (h * bh + dy, w * bw + dx) of image i."""
    (bh, bw), (top, bottom, left, right) = block_hw, pads
    padded = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, h, w, c = padded.shape
    out = np.zeros((n * bh * bw, h // bh, w // bw, c))
    for dy in range(bh):
        for dx in range(bw):
            out[(dy * bw + dx) * n:(dy * bw + dx + 1) * n] = padded[:, dy::bh, dx::bw, :]
    return out


def batch_to_space(x: np.ndarray, block_hw: tuple[int, int]) -> np.ndarray:
    bh, bw = block_hw
    batches, h, w, c = x.shape
    n = batches // (bh * bw)
    out = np.zeros((n, h * bh, w * bw, c))
    for dy in range(bh):
        for dx in range(bw):
            out[:, dy::bh, dx::bw, :] = x[(dy * bw + dx) * n:(dy * bw + dx + 1) * n]
    return out


def resize(x: np.ndarray, out_hw: tuple[int, int], bilinear: bool) -> np.ndarray:
    """The legacy scheme (no align_corners, no half-pixel centres): position i samples s = i * in / out;
    nearest takes floor(s); bilinear blends floor(s) and min(ceil(s), in - 1) by s - floor(s)."""
    n, h, w, c = x.shape
    oh, ow = out_hw
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        sy = i * h / oh
        y0, y1 = int(np.floor(sy)), min(int(np.ceil(sy)), h - 1)
        for j in range(ow):
            sx = j * w / ow
            x0, x1 = int(np.floor(sx)), min(int(np.ceil(sx)), w - 1)
            if not bilinear:
                out[:, i, j] = x[:, min(y0, h - 1), min(x0, w - 1)]
                continue
            fy, fx = sy - y0, sx - x0
            top = (1 - fx) * x[:, y0, x0] + fx * x[:, y0, x1]
            bottom = (1 - fx) * x[:, y1, x0] + fx * x[:, y1, x1]
            out[:, i, j] = (1 - fy) * top + fy * bottom
    return out


def transpose_conv(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, stride_hw: tuple[int, int],
                   pads: tuple[int, int, int, int]) -> np.ndarray:
    """TRANSPOSE_CONV_2D, filter [O, kh, kw, C], explicit pads (top, bottom, left, right): output pixel
    (oy, ox) gathers every input pixel (y, x) and tap (i, j) with y * stride_h - top + i == oy (and the same
    along the width); the output is (in - 1) * stride + filter - head - tail per axis."""
    n, h, w, _ = x.shape
    channels_out, kh, kw, _ = weights.shape
    (sh, sw), (top, bottom, left, right) = stride_hw, pads
    oh, ow = (h - 1) * sh + kh - top - bottom, (w - 1) * sw + kw - left - right
    out = np.zeros((n, oh, ow, channels_out))
    for oy in range(oh):
        for ox in range(ow):
            total = np.array(bias, np.float64)
            for y in range(h):
                i = oy + top - y * sh
                if not 0 <= i < kh:
                    continue
                for xx in range(w):
                    j = ox + left - xx * sw
                    if 0 <= j < kw:
                        total = total + weights[:, i, j, :] @ x[0, y, xx]
            out[0, oy, ox] = total
    return out


def transpose_pads(out_hw: tuple[int, int], stride_hw: tuple[int, int], filter_hw: tuple[int, int],
                   scheme: int) -> tuple[int, int, int, int]:
    """Implicit TRANSPOSE_CONV_2D padding (top, bottom, left, right): the forward-convolution scheme
    measured on the requested output size (Android's calculateExplicitPaddingTransposeConv)."""
    _, top, bottom = padding(out_hw[0], stride_hw[0], filter_hw[0], scheme)
    _, left, right = padding(out_hw[1], stride_hw[1], filter_hw[1], scheme)
    return top, bottom, left, right


def _bilinear(fmap: np.ndarray, y: float, x: float) -> np.ndarray:
    """fmap [H, W, C] at (y, x): the four neighbours blended; at or past the last row/column, that row/column."""
    h, w, _ = fmap.shape
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    fy, fx = y - y0, x - x0
    if y0 >= h - 1:
        y0, fy = h - 1, 0.0
    if x0 >= w - 1:
        x0, fx = w - 1, 0.0
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    return ((1 - fy) * ((1 - fx) * fmap[y0, x0] + fx * fmap[y0, x1])
            + fy * ((1 - fx) * fmap[y1, x0] + fx * fmap[y1, x1]))


def roi_align(x: np.ndarray, rois: np.ndarray, batches: list[int], out_hw: tuple[int, int],
              ratio_hw: tuple[float, float], sampling_hw: tuple[int, int]) -> np.ndarray:
    """ROI_ALIGN: region (x1, y1, x2, y2) / ratio, sides below 1 count as 1, cut into out_h x out_w bins; each
    bin averages sampling_h x sampling_w bilinear samples at its sub-bin centres (0: ceil(bin size))."""
    (oh, ow), (rh, rw) = out_hw, ratio_hw
    out = np.zeros((len(batches), oh, ow, x.shape[3]))
    for r, (region, image) in enumerate(zip(rois, batches, strict=True)):
        x1, y1, x2, y2 = region[0] / rw, region[1] / rh, region[2] / rw, region[3] / rh
        bin_h, bin_w = max(y2 - y1, 1.0) / oh, max(x2 - x1, 1.0) / ow
        sh = sampling_hw[0] or int(np.ceil(bin_h))
        sw = sampling_hw[1] or int(np.ceil(bin_w))
        for i in range(oh):
            for j in range(ow):
                samples = [_bilinear(x[image], y1 + i * bin_h + (a + 0.5) * bin_h / sh,
                                     x1 + j * bin_w + (b + 0.5) * bin_w / sw)
                           for a in range(sh) for b in range(sw)]
                out[r, i, j] = np.mean(samples, axis=0)
    return out


def roi_pool(x: np.ndarray, rois: np.ndarray, batches: list[int], out_hw: tuple[int, int],
             ratio_hw: tuple[float, float]) -> np.ndarray:
    """ROI_POOLING (max): corners / ratio rounded half away from zero, the region spans x1..x2 inclusive
    (at least 1 pixel); bin j covers [floor(j * step + x1), ceil((j + 1) * step + x1)), step = span / out_w."""
    (oh, ow), (rh, rw) = out_hw, ratio_hw
    out = np.zeros((len(batches), oh, ow, x.shape[3]))
    for r, (region, image) in enumerate(zip(rois, batches, strict=True)):
        x1, y1, x2, y2 = (int(np.floor(v + 0.5)) for v in (region[0] / rw, region[1] / rh,
                                                           region[2] / rw, region[3] / rh))
        step_h, step_w = max(y2 - y1 + 1, 1) / oh, max(x2 - x1 + 1, 1) / ow
        for i in range(oh):
            rows = slice(int(np.floor(i * step_h + y1)), min(int(np.ceil((i + 1) * step_h + y1)), x.shape[1]))
            for j in range(ow):
                cols = slice(int(np.floor(j * step_w + x1)), min(int(np.ceil((j + 1) * step_w + x1)), x.shape[2]))
                out[r, i, j] = x[image, rows, cols].max(axis=(0, 1))
    return out


def _flat(array: np.ndarray) -> str:
    return json.dumps([float(v) for v in np.asarray(array, np.float32).reshape(-1)])


def _scalars(g: Geometry) -> list[str]:
    return [f"    - {{name: scheme, type: INT32, lifetime: CONSTANT_COPY, value: {g.scheme}}}",
            f"    - {{name: stride_w, type: INT32, lifetime: CONSTANT_COPY, value: {g.stride_hw[1]}}}",
            f"    - {{name: stride_h, type: INT32, lifetime: CONSTANT_COPY, value: {g.stride_hw[0]}}}"]


def _tail(inputs: str, x: np.ndarray, golden: np.ndarray) -> list[str]:
    return [
        "    inputs: [op1]", "    outputs: [op2]",
        "  examples:",
        f"  - inputs: {{op1: {_flat(x)}}}",
        f"    outputs: {{op2: {_flat(golden)}}}",
        "  variations:",
        "  - [{name: nhwc}, {nchw: [op1, op2, layout]}]",
    ]


def _dims(shape: tuple[int, ...]) -> str:
    return json.dumps(list(shape))


HEADER = ("# Generated by tools/layout_oracle.py (python -m tools.layout_oracle): do not edit by hand.\n"
          "# Shapes that tell the layouts and axes apart (issue 43): C, H and W distinct, SAME padding that differs\n"
          "# between the axes, stride 2 and 3, a rectangular filter.  Goldens: a float64 numpy oracle of the\n"
          "# NeuralNetworks.h definitions (tools/layout_oracle.py); the nchw variation's goldens are the NHWC\n"
          "# goldens transposed.\n")


def pooling_spec() -> str:
    lines = [HEADER.rstrip("\n"), "nnvts: 1", "name: layout_distinct_pooling", 'hal_version: "1.2"',
             "description: AVERAGE, MAX and L2 pooling, NHWC and NCHW, on shapes whose axes are all distinct.",
             'source: {kind: oracle, detail: "numpy float64 oracle, tools/layout_oracle.py; NCHW goldens are the '
             'NHWC goldens transposed"}', "models:"]
    for kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
        for index, g in enumerate(GEOMETRIES):
            x = values(g.shape, index)
            golden = pool(kind, x, g)
            lines += [
                f"- name: {kind.lower().replace('_2d', '').replace('_pool', '')}_{g.name}",
                "  main:", "    operands:",
                f"    - {{name: op1, type: TENSOR_FLOAT32, dims: {_dims(g.shape)}, lifetime: SUBGRAPH_INPUT}}",
                *_scalars(g),
                f"    - {{name: filter_w, type: INT32, lifetime: CONSTANT_COPY, value: {g.filter_hw[1]}}}",
                f"    - {{name: filter_h, type: INT32, lifetime: CONSTANT_COPY, value: {g.filter_hw[0]}}}",
                "    - {name: act, type: INT32, lifetime: CONSTANT_COPY, value: 0}",
                "    - {name: layout, type: BOOL, lifetime: CONSTANT_COPY, value: false}",
                f"    - {{name: op2, type: TENSOR_FLOAT32, dims: {_dims(golden.shape)}, lifetime: SUBGRAPH_OUTPUT}}",
                "    operations:",
                f"    - {{type: {kind}, inputs: [op1, scheme, stride_w, stride_h, filter_w, filter_h, act, layout], "
                "outputs: [op2]}",
                *_tail("op1", x, golden),
            ]
    return "\n".join(lines) + "\n"


def conv_spec() -> str:
    lines = [HEADER.rstrip("\n"), "nnvts: 1", "name: layout_distinct_conv", 'hal_version: "1.2"',
             "description: CONV_2D and DEPTHWISE_CONV_2D, NHWC and NCHW, on shapes whose axes are all distinct.",
             'source: {kind: oracle, detail: "numpy float64 oracle, tools/layout_oracle.py; NCHW goldens are the '
             'NHWC goldens transposed"}', "models:"]
    for index, g in enumerate(GEOMETRIES):
        channels = g.shape[3]
        x = values(g.shape, index)
        kh, kw = g.filter_hw
        weights = values((3, kh, kw, channels), index + 5) / 2
        bias = values((3,), index + 7)
        golden = conv(x, weights, bias, g)
        lines += [
            f"- name: conv_{g.name}", "  main:", "    operands:",
            f"    - {{name: op1, type: TENSOR_FLOAT32, dims: {_dims(g.shape)}, lifetime: SUBGRAPH_INPUT}}",
            f"    - {{name: filter, type: TENSOR_FLOAT32, dims: {_dims(weights.shape)}, lifetime: CONSTANT_COPY, "
            f"value: {_flat(weights)}}}",
            f"    - {{name: bias, type: TENSOR_FLOAT32, dims: [3], lifetime: CONSTANT_COPY, value: {_flat(bias)}}}",
            *_scalars(g),
            "    - {name: act, type: INT32, lifetime: CONSTANT_COPY, value: 0}",
            "    - {name: layout, type: BOOL, lifetime: CONSTANT_COPY, value: false}",
            f"    - {{name: op2, type: TENSOR_FLOAT32, dims: {_dims(golden.shape)}, lifetime: SUBGRAPH_OUTPUT}}",
            "    operations:",
            "    - {type: CONV_2D, inputs: [op1, filter, bias, scheme, stride_w, stride_h, act, layout], "
            "outputs: [op2]}",
            *_tail("op1", x, golden),
        ]
        multiplier = 2
        dw = values((1, kh, kw, channels * multiplier), index + 3) / 2
        dbias = values((channels * multiplier,), index + 9)
        golden = depthwise(x, dw, dbias, g, multiplier)
        lines += [
            f"- name: depthwise_{g.name}", "  main:", "    operands:",
            f"    - {{name: op1, type: TENSOR_FLOAT32, dims: {_dims(g.shape)}, lifetime: SUBGRAPH_INPUT}}",
            f"    - {{name: filter, type: TENSOR_FLOAT32, dims: {_dims(dw.shape)}, lifetime: CONSTANT_COPY, "
            f"value: {_flat(dw)}}}",
            f"    - {{name: bias, type: TENSOR_FLOAT32, dims: [{channels * multiplier}], lifetime: CONSTANT_COPY, "
            f"value: {_flat(dbias)}}}",
            *_scalars(g),
            f"    - {{name: multiplier, type: INT32, lifetime: CONSTANT_COPY, value: {multiplier}}}",
            "    - {name: act, type: INT32, lifetime: CONSTANT_COPY, value: 0}",
            "    - {name: layout, type: BOOL, lifetime: CONSTANT_COPY, value: false}",
            f"    - {{name: op2, type: TENSOR_FLOAT32, dims: {_dims(golden.shape)}, lifetime: SUBGRAPH_OUTPUT}}",
            "    operations:",
            "    - {type: DEPTHWISE_CONV_2D, inputs: [op1, filter, bias, scheme, stride_w, stride_h, multiplier, act, "
            "layout], outputs: [op2]}",
            *_tail("op1", x, golden),
        ]
    return "\n".join(lines) + "\n"


def _simple(name: str, operation: str, x: np.ndarray, golden: np.ndarray, scalars: list[str], args: str) -> list[str]:
    """A one-operation model: op1 in, op2 out, ``scalars`` (operand lines) between, then the layout flag."""
    return [
        f"- name: {name}", "  main:", "    operands:",
        f"    - {{name: op1, type: TENSOR_FLOAT32, dims: {_dims(x.shape)}, lifetime: SUBGRAPH_INPUT}}",
        *scalars,
        "    - {name: layout, type: BOOL, lifetime: CONSTANT_COPY, value: false}",
        f"    - {{name: op2, type: TENSOR_FLOAT32, dims: {_dims(golden.shape)}, lifetime: SUBGRAPH_OUTPUT}}",
        "    operations:",
        f"    - {{type: {operation}, inputs: [op1, {args}, layout], outputs: [op2]}}",
        *_tail("op1", x, golden),
    ]


def space_spec() -> str:
    lines = [HEADER.rstrip("\n"), "nnvts: 1", "name: layout_distinct_space", 'hal_version: "1.2"',
             "description: DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND and both RESIZEs, "
             "NHWC and NCHW, on shapes whose axes are all distinct.",
             'source: {kind: oracle, detail: "numpy float64 oracle, tools/layout_oracle.py; NCHW goldens are the '
             'NHWC goldens transposed"}', "models:"]
    block = "    - {name: block, type: INT32, lifetime: CONSTANT_COPY, value: 2}"
    x = values((1, 2, 3, 12), 1)
    lines += _simple("depth_to_space", "DEPTH_TO_SPACE", x, depth_to_space(x, 2), [block], "block")
    x = values((1, 4, 6, 3), 2)
    lines += _simple("space_to_depth", "SPACE_TO_DEPTH", x, space_to_depth(x, 2), [block], "block")
    x = values((1, 5, 6, 3), 3)
    pads = (1, 2, 0, 0)
    tensors = ["    - {name: block, type: TENSOR_INT32, dims: [2], lifetime: CONSTANT_COPY, value: [2, 3]}",
               f"    - {{name: paddings, type: TENSOR_INT32, dims: [2, 2], lifetime: CONSTANT_COPY, "
               f"value: {json.dumps(list(pads))}}}"]
    lines += _simple("space_to_batch", "SPACE_TO_BATCH_ND", x, space_to_batch(x, (2, 3), pads), tensors,
                     "block, paddings")
    x = values((6, 4, 2, 3), 4)
    lines += _simple("batch_to_space", "BATCH_TO_SPACE_ND", x, batch_to_space(x, (2, 3)), tensors[:1], "block")
    x = values((1, 5, 6, 4), 5)
    size = ["    - {name: width, type: INT32, lifetime: CONSTANT_COPY, value: 8}",
            "    - {name: height, type: INT32, lifetime: CONSTANT_COPY, value: 7}"]
    lines += _simple("resize_nearest", "RESIZE_NEAREST_NEIGHBOR", x, resize(x, (7, 8), False), size, "width, height")
    lines += _simple("resize_bilinear", "RESIZE_BILINEAR", x, resize(x, (7, 8), True), size, "width, height")
    return "\n".join(lines) + "\n"


def _transpose_model(name: str, x: np.ndarray, weights: np.ndarray, bias: np.ndarray, golden: np.ndarray,
                     padding_lines: list[str], padding_args: str, nchw: bool | None) -> list[str]:
    """One TRANSPOSE_CONV_2D model; ``nchw`` None adds the nchw variation, True/False writes that layout
    directly (an implicit model's output-shape tensor is 1-D, which the nchw variation cannot reorder)."""
    shown_x, shown_golden = (x.transpose(0, 3, 1, 2), golden.transpose(0, 3, 1, 2)) if nchw else (x, golden)
    lines = [
        f"- name: {name}", "  main:", "    operands:",
        f"    - {{name: op1, type: TENSOR_FLOAT32, dims: {_dims(shown_x.shape)}, lifetime: SUBGRAPH_INPUT}}",
        f"    - {{name: filter, type: TENSOR_FLOAT32, dims: {_dims(weights.shape)}, lifetime: CONSTANT_COPY, "
        f"value: {_flat(weights)}}}",
        f"    - {{name: bias, type: TENSOR_FLOAT32, dims: [{weights.shape[0]}], lifetime: CONSTANT_COPY, "
        f"value: {_flat(bias)}}}",
        *padding_lines,
        "    - {name: act, type: INT32, lifetime: CONSTANT_COPY, value: 0}",
        f"    - {{name: layout, type: BOOL, lifetime: CONSTANT_COPY, value: {'true' if nchw else 'false'}}}",
        f"    - {{name: op2, type: TENSOR_FLOAT32, dims: {_dims(shown_golden.shape)}, lifetime: SUBGRAPH_OUTPUT}}",
        "    operations:",
        f"    - {{type: TRANSPOSE_CONV_2D, inputs: [op1, filter, bias, {padding_args}, act, layout], outputs: [op2]}}",
    ]
    tail = _tail("op1", shown_x, shown_golden)
    return lines + (tail if nchw is None else tail[:-2])


def transpose_spec() -> str:
    lines = [HEADER.rstrip("\n"), "nnvts: 1", "name: layout_distinct_transpose_conv", 'hal_version: "1.2"',
             "description: TRANSPOSE_CONV_2D, NHWC and NCHW, implicit (SAME, VALID) and explicit padding, on shapes "
             "whose axes are all distinct.",
             'source: {kind: oracle, detail: "numpy float64 oracle, tools/layout_oracle.py; NCHW goldens are the '
             'NHWC goldens transposed"}', "models:"]
    # Implicit: H 3, W 5, C 2 in; a 3 x 4 filter at stride 2, so SAME pads the height 0 + 1 and the width 1 + 1.
    x = values((1, 3, 5, 2), 6)
    weights = values((3, 3, 4, 2), 8) / 2
    bias = values((3,), 10)
    strides = (2, 2)
    for label, scheme, out_hw in (("same_s2", SAME, (6, 10)), ("valid_s2", VALID, (7, 12))):
        golden = transpose_conv(x, weights, bias, strides, transpose_pads(out_hw, strides, (3, 4), scheme))
        assert golden.shape[1:3] == out_hw
        for nchw in (False, True):
            shape = [1, 3, *out_hw] if nchw else [1, *out_hw, 3]
            implicit = [f"    - {{name: shape, type: TENSOR_INT32, dims: [4], lifetime: CONSTANT_COPY, "
                        f"value: {json.dumps(shape)}}}",
                        f"    - {{name: scheme, type: INT32, lifetime: CONSTANT_COPY, value: {scheme}}}",
                        "    - {name: stride_w, type: INT32, lifetime: CONSTANT_COPY, value: 2}",
                        "    - {name: stride_h, type: INT32, lifetime: CONSTANT_COPY, value: 2}"]
            lines += _transpose_model(f"transpose_{label}_{'nchw' if nchw else 'nhwc'}", x, weights, bias, golden,
                                      implicit, "shape, scheme, stride_w, stride_h", nchw)
    # Explicit: H 5, W 3, C 4 in; pads top 2, bottom 1, left 1, right 0; strides h 3, w 2; a 3 x 2 filter.
    x = values((1, 5, 3, 4), 7)
    weights = values((2, 3, 2, 4), 9) / 2
    bias = values((2,), 11)
    pads = (2, 1, 1, 0)
    golden = transpose_conv(x, weights, bias, (3, 2), pads)
    explicit = [f"    - {{name: {name}, type: INT32, lifetime: CONSTANT_COPY, value: {value}}}"
                for name, value in (("pad_left", pads[2]), ("pad_right", pads[3]), ("pad_top", pads[0]),
                                    ("pad_bottom", pads[1]), ("stride_w", 2), ("stride_h", 3))]
    lines += _transpose_model("transpose_explicit", x, weights, bias, golden, explicit,
                              "pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h", None)
    return "\n".join(lines) + "\n"


def roi_spec() -> str:
    lines = [HEADER.rstrip("\n"), "nnvts: 1", "name: layout_distinct_roi", 'hal_version: "1.2"',
             "description: ROI_ALIGN and ROI_POOLING, NHWC and NCHW, on a feature map whose axes are all distinct "
             "(N 2, H 5, W 7, C 3), distinct output sides and height/width ratios.",
             'source: {kind: oracle, detail: "numpy float64 oracle, tools/layout_oracle.py; NCHW goldens are the '
             'NHWC goldens transposed"}', "models:"]
    x = values((2, 5, 7, 3), 12)
    batches = [0, 1, 0]
    ratio_hw = (2.0, 1.0)
    # Image coordinates; / (2, 1) in the map: x 0.5..6 y 0.5..4 | x 2..5 y 0..1.5 | x 1..3.5 y 1.5..4.5 (clamps).
    align_rois = np.array([[0.5, 1.0, 6.0, 8.0], [2.0, 0.0, 5.0, 3.0], [1.0, 3.0, 3.5, 9.0]])
    # x 0..6 y 0.5 -> 1 (half away from zero)..4 | x 2..5 y 0..1.5 -> 2 | x 1..5 y 2..4.
    pool_rois = np.array([[0.0, 1.0, 6.0, 8.0], [2.0, 0.0, 5.0, 3.0], [1.0, 4.0, 5.0, 8.0]])

    def common(rois: np.ndarray, out_hw: tuple[int, int]) -> list[str]:
        return [f"    - {{name: rois, type: TENSOR_FLOAT32, dims: [3, 4], lifetime: CONSTANT_COPY, "
                f"value: {_flat(rois)}}}",
                f"    - {{name: batches, type: TENSOR_INT32, dims: [3], lifetime: CONSTANT_COPY, "
                f"value: {json.dumps(batches)}}}",
                f"    - {{name: out_h, type: INT32, lifetime: CONSTANT_COPY, value: {out_hw[0]}}}",
                f"    - {{name: out_w, type: INT32, lifetime: CONSTANT_COPY, value: {out_hw[1]}}}",
                f"    - {{name: h_ratio, type: FLOAT32, lifetime: CONSTANT_COPY, value: {ratio_hw[0]}}}",
                f"    - {{name: w_ratio, type: FLOAT32, lifetime: CONSTANT_COPY, value: {ratio_hw[1]}}}"]

    for label, sampling in (("sampled", (2, 1)), ("adaptive", (0, 0))):
        golden = roi_align(x, align_rois, batches, (2, 4), ratio_hw, sampling)
        scalars = [
            *common(align_rois, (2, 4)),
            f"    - {{name: sampling_h, type: INT32, lifetime: CONSTANT_COPY, value: {sampling[0]}}}",
            f"    - {{name: sampling_w, type: INT32, lifetime: CONSTANT_COPY, value: {sampling[1]}}}"]
        lines += _simple(f"roi_align_{label}", "ROI_ALIGN", x, golden, scalars,
                         "rois, batches, out_h, out_w, h_ratio, w_ratio, sampling_h, sampling_w")
    golden = roi_pool(x, pool_rois, batches, (2, 4), ratio_hw)
    lines += _simple("roi_pooling", "ROI_POOLING", x, golden, common(pool_rois, (2, 4)),
                     "rois, batches, out_h, out_w, h_ratio, w_ratio")
    return "\n".join(lines) + "\n"


def outputs() -> dict[str, str]:
    """Each spec path and the text the oracle gives it."""
    return {POOLING_SPEC: pooling_spec(), CONV_SPEC: conv_spec(), SPACE_SPEC: space_spec(),
            TRANSPOSE_SPEC: transpose_spec(), ROI_SPEC: roi_spec()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a spec file is not what the oracle gives")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        current = None
        if os.path.exists(path):
            with open(path) as handle:
                current = handle.read()
        if current != text:
            stale.append(path)
            if not args.check:
                with open(path, "w") as handle:
                    handle.write(text)
    if args.check and stale:
        print("stale: " + ", ".join(os.path.relpath(p, ROOT) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
