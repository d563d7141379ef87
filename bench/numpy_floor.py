"""What any numpy implementation of the float MobileNet must at least spend: its arithmetic alone.

``bench.mobilenet`` times these next to the reference driver and ONNX Runtime,
so the reference's float32 ratio can be read against the ratio no numpy
driver can go below on the same machine:

- ``numpy 1x1 matmuls only``: the 13 pointwise convolutions as bare
  ``[H*W, C_in] @ [C_in, C_out]`` products;
- ``numpy arithmetic floor``: every multiply-add of the network through
  numpy's fastest primitive for it: BLAS for the convolutions (the first one
  on a ready-made im2col matrix) and the classifier, ``einsum`` for the
  depthwise layers (``bench/depthwise_primitives.py`` measures it against the
  ufunc alternatives), run over input strips filled once at setup, in the
  reference driver's own blocking.  No bias, no activation, no padding copy,
  no pooling, no softmax, no request handling: work every real driver has on
  top.

Inputs and weights are random (the values do not change the time of float
arithmetic).  Each layer reads what the one before wrote, from two scratch
buffers, so no run pays for allocation and the working set is as small as
any implementation's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnvts.drivers.reference.ops.conv import (
    PADDING_SAME,
    DepthwiseGeometry,
    Window,
    implicit_padding,
    pixels_per_run,
    strip_view,
    tap_run,
)
from vts.hal.enums import OperationType
from vts.model.casemodel import CaseModel, CaseSubgraph

Step = Callable[[], None]
#: Elements of each scratch buffer: more than any MobileNet-v1-224 layer reads or writes (the largest, the
#: stride-2 depthwise strip of the 112x112x64 layer, holds about 0.83M).
SCRATCH_ELEMENTS = 1 << 20


class Scratch:
    """Two buffers every step reads from and writes into, alternately.

    Whatever one layer writes, the next one reads, so the floor's working set
    is as small as any implementation's could be (one layer's input and
    output), not a set of arrays per layer that no cache holds.
    """

    def __init__(self, rng: np.random.Generator, elements: int) -> None:
        self.buffers = [rng.standard_normal(elements, dtype=np.float32) for _ in range(2)]
        self.turn = 0

    def take(self, *shapes: tuple[int, ...]) -> list[np.ndarray]:
        """Views of the input buffer (first shape) and the output buffer (the others, packed one after another)."""
        source, target = self.buffers[self.turn], self.buffers[1 - self.turn]
        self.turn = 1 - self.turn
        views, offset = [source[:int(np.prod(shapes[0]))].reshape(shapes[0])], 0
        for shape in shapes[1:]:
            size = int(np.prod(shape))
            views.append(target[offset:offset + size].reshape(shape))
            offset += size
        return views


def matmul_step(scratch: Scratch, rows: int, depth: int, columns: int, weights: np.ndarray) -> Step:
    a, out = scratch.take((rows, depth), (rows, columns))
    return lambda: np.matmul(a, weights, out=out)


def same_window(in_size: int, stride: int) -> Window:
    """SAME padding of a 3x3 filter (the models' only scheme), as the driver resolves it."""
    head, tail = implicit_padding(in_size, stride, 1, 3, PADDING_SAME)
    return Window(head, tail, head, tail, stride, stride)


def depthwise_step(scratch: Scratch, in_hw: int, out_hw: int, channels: int, stride: int,
                   weights: np.ndarray) -> Step:
    """The reference's depthwise einsums, in its blocking, over a strip holding the whole padded input."""
    window = same_window(in_hw, stride)
    geometry = DepthwiseGeometry.of(in_hw, (3, 3), window, (out_hw, out_hw))
    run_pixels = pixels_per_run(out_hw, channels, 4)
    taps = tap_run(weights, geometry, run_pixels)
    strip, out = scratch.take((1, geometry.strip_rows(out_hw), stride, geometry.width_q, channels),
                              (1, out_hw, out_hw * channels))
    block = geometry.rows_per_block(stride * geometry.width_q * channels * 4)
    starts = range(0, out_hw, block)

    def run() -> None:
        for y0 in starts:
            rows = min(block, out_hw - y0)
            view = strip_view(strip[:, y0 * stride:], geometry, rows, run_pixels)
            target = out[:, y0:y0 + rows].reshape(1, rows, out_hw // run_pixels, run_pixels * channels)
            np.einsum("nyiqrkl,iqrl->nykl", view, taps, out=target)

    return run


def weights_like(rng: np.random.Generator, fan_in: int, *shape: int) -> np.ndarray:
    """Random weights scaled by 1/sqrt(fan_in), so values flowing through 28 layers stay near 1.

    (Unscaled, they overflow to inf and NaN within a few layers; denormals or
    special values must not decide the floor's speed.)
    """
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(1 / np.sqrt(fan_in))


def pointwise_steps(main: CaseSubgraph, rng: np.random.Generator) -> list[Step]:
    """One matmul into the scratch per 1x1 CONV_2D."""
    scratch = Scratch(rng, SCRATCH_ELEMENTS)
    steps = []
    for op in main.operations:
        filters = main.operands[op.inputs[1]].dims
        if op.type != OperationType.CONV_2D or tuple(filters[1:3]) != (1, 1):
            continue
        rows = int(np.prod(main.operands[op.outputs[0]].dims[:-1]))
        weights = weights_like(rng, filters[3], filters[3], filters[0])
        steps.append(matmul_step(scratch, rows, filters[3], filters[0], weights))
    return steps


def arithmetic_steps(main: CaseSubgraph, rng: np.random.Generator) -> list[Step]:
    """Every CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED of the model, in order."""
    scratch = Scratch(rng, SCRATCH_ELEMENTS)
    steps = []
    for op in main.operations:
        weights = main.operands[op.inputs[1]].dims
        out_dims = main.operands[op.outputs[0]].dims
        if op.type == OperationType.CONV_2D:
            depth = int(np.prod(weights[1:]))
            steps.append(matmul_step(scratch, int(np.prod(out_dims[:-1])), depth, weights[0],
                                     weights_like(rng, depth, depth, weights[0])))
        elif op.type == OperationType.DEPTHWISE_CONV_2D:
            in_size, out_size = main.operands[op.inputs[0]].dims[1], out_dims[1]
            steps.append(depthwise_step(scratch, in_size, out_size, out_dims[3], in_size // out_size,
                                        weights_like(rng, 9, 3, 3, out_dims[3])))
        elif op.type == OperationType.FULLY_CONNECTED:
            steps.append(matmul_step(scratch, out_dims[0], weights[1], weights[0],
                                     weights_like(rng, weights[1], weights[1], weights[0])))
    return steps


def runner(steps: list[Step]) -> Callable[[], None]:
    def run() -> None:
        for step in steps:
            step()

    return run


def floor_runners(model: CaseModel) -> list[tuple[str, Callable[[], None]]]:
    """(name, run) of the two floors, for the float model."""
    rng = np.random.default_rng(0)
    return [("numpy 1x1 matmuls only", runner(pointwise_steps(model.main, rng))),
            ("numpy arithmetic floor", runner(arithmetic_steps(model.main, rng)))]
