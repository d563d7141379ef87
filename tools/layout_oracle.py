"""The numpy oracle behind the ``layout_distinct_*`` specs (pooling, conv, shape).

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
the real pixels), never from a driver: ``python -m tools.layout_oracle``
rewrites the two spec files, ``--check`` says whether they are current
(tests/spec/test_layout_oracle.py runs it).
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


def outputs() -> dict[str, str]:
    """Each spec path and the text the oracle gives it."""
    return {POOLING_SPEC: pooling_spec(), CONV_SPEC: conv_spec(), SPACE_SPEC: space_spec()}


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
