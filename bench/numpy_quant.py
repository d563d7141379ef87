"""A plain numpy uint8 interpreter: the "naive but reasonable" peer of the reference driver.

What a competent engineer writes in an afternoon, written apart from
``nnvts/drivers/reference`` (it shares no code with it): constants are decoded and
zero-point-adjusted once at preparation; each convolution gathers im2col
patches with ``sliding_window_view`` and multiplies them in int32 (numpy's
integer matmul, no BLAS); depthwise convolutions multiply the patches by the
filter and sum; requantization is one float64 multiply by
``in_scale * w_scale / out_scale``, rounding to nearest, adding the zero
point and clamping to the fused activation's range.  No fixed-point
multipliers, so it may differ from NNAPI by a step here and there.

Covers what a MobileNet needs: CONV_2D, DEPTHWISE_CONV_2D (multiplier 1),
AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED and SOFTMAX on
TENSOR_QUANT8_ASYMM, NHWC.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bench import graph
from vts.hal.enums import OperandType, OperationType
from vts.model.casemodel import CaseModel, CaseOperation

_RANGES = {0: (-np.inf, np.inf), 1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}

Step = Callable[[list[np.ndarray | None]], None]


def _clamp_bounds(scale: float, zero_point: int, activation: int) -> tuple[int, int]:
    low, high = _RANGES[activation]
    q_low = 0 if low == -np.inf else max(0, zero_point + round(low / scale))
    q_high = 255 if high == np.inf else min(255, zero_point + round(high / scale))
    return q_low, q_high


def _requantize(acc: np.ndarray, multiplier: float, zero_point: int, bounds: tuple[int, int]) -> np.ndarray:
    return np.clip(np.rint(acc * multiplier) + zero_point, *bounds).astype(np.uint8)


class NumpyQuant8:
    """A MobileNet-shaped uint8 ``CaseModel``, prepared once, run many times."""

    def __init__(self, model: CaseModel) -> None:
        self.model = model
        main = model.main
        self.input_index = main.inputs[0]
        self.output_index = main.outputs[0]
        self.size = len(main.operands)
        builders = {
            OperationType.CONV_2D: self._conv,
            OperationType.DEPTHWISE_CONV_2D: self._depthwise,
            OperationType.AVERAGE_POOL_2D: self._pool,
            OperationType.RESHAPE: self._reshape,
            OperationType.FULLY_CONNECTED: self._fully_connected,
            OperationType.SOFTMAX: self._softmax,
        }
        self.steps: list[Step] = []
        for op in main.operations:
            if main.operands[op.inputs[0]].type != OperandType.TENSOR_QUANT8_ASYMM:
                raise NotImplementedError("the numpy baseline runs TENSOR_QUANT8_ASYMM models only")
            kind = OperationType(op.type)
            if kind not in builders:
                raise NotImplementedError(f"operation {kind.name}")
            self.steps.append(builders[kind](op))

    def run(self, image: np.ndarray) -> np.ndarray:
        values: list[np.ndarray | None] = [None] * self.size
        values[self.input_index] = image
        for step in self.steps:
            step(values)
        result = values[self.output_index]
        assert result is not None
        return result

    # -- preparation: each returns the step that computes one operation --------------------------

    def _conv_parts(self, op_inputs: tuple[int, ...], output: int, activation: int
                    ) -> tuple[np.ndarray, np.ndarray, float, int, int, tuple[int, int]]:
        """Zero-adjusted int32 weights, int32 bias, multiplier, input and output zero points, clamp bounds."""
        model = self.model
        x, w = graph.operand(model, op_inputs[0]), graph.operand(model, op_inputs[1])
        out = graph.operand(model, output)
        filt = graph.constant(model, op_inputs[1]).astype(np.int32) - w.zero_point
        bias = graph.constant(model, op_inputs[2]).astype(np.int32)
        bounds = _clamp_bounds(out.scale, out.zero_point, activation)
        return filt, bias, x.scale * w.scale / out.scale, x.zero_point, out.zero_point, bounds

    @staticmethod
    def _patches(x: np.ndarray, in_zero: int, win: graph.Window) -> np.ndarray:
        """[N, oh, ow, kh, kw, C] windows of the zero-point-adjusted int32 input (padding is real zero)."""
        top, bottom, left, right = win.pads
        xi = np.pad(x.astype(np.int32) - in_zero, ((0, 0), (top, bottom), (left, right), (0, 0)))
        view = np.lib.stride_tricks.sliding_window_view(xi, win.kernel, axis=(1, 2))
        view = view[:, :: win.strides[0], :: win.strides[1]]
        return view.transpose(0, 1, 2, 4, 5, 3)

    def _conv(self, op: CaseOperation) -> Step:
        win = graph.window(self.model, op)
        filt, bias, multiplier, in_zero, out_zero, bounds = self._conv_parts(op.inputs, op.outputs[0],
                                                                            win.activation)
        matrix = np.ascontiguousarray(filt.reshape(filt.shape[0], -1).T)
        x_index, out_index = op.inputs[0], op.outputs[0]

        def step(values: list[np.ndarray | None]) -> None:
            patches = self._patches(values[x_index], in_zero, win)
            n, oh, ow = patches.shape[:3]
            acc = patches.reshape(n * oh * ow, -1) @ matrix + bias
            values[out_index] = _requantize(acc, multiplier, out_zero, bounds).reshape(n, oh, ow, -1)

        return step

    def _depthwise(self, op: CaseOperation) -> Step:
        win = graph.window(self.model, op)
        filt, bias, multiplier, in_zero, out_zero, bounds = self._conv_parts(op.inputs, op.outputs[0],
                                                                            win.activation)
        taps = filt[0]  # kh, kw, C
        x_index, out_index = op.inputs[0], op.outputs[0]

        def step(values: list[np.ndarray | None]) -> None:
            patches = self._patches(values[x_index], in_zero, win)
            acc = (patches * taps).sum(axis=(3, 4), dtype=np.int32) + bias
            values[out_index] = _requantize(acc, multiplier, out_zero, bounds)

        return step

    def _pool(self, op: CaseOperation) -> Step:
        win = graph.window(self.model, op)
        if any(win.pads):
            raise NotImplementedError("padded average pool")
        x_op, out = graph.operand(self.model, op.inputs[0]), graph.operand(self.model, op.outputs[0])
        if (x_op.scale, x_op.zero_point) != (out.scale, out.zero_point):
            raise NotImplementedError("average pool that changes quantization")
        bounds = _clamp_bounds(out.scale, out.zero_point, win.activation)
        count = win.kernel[0] * win.kernel[1]
        x_index, out_index = op.inputs[0], op.outputs[0]

        def step(values: list[np.ndarray | None]) -> None:
            x = values[x_index].astype(np.int32)
            view = np.lib.stride_tricks.sliding_window_view(x, win.kernel, axis=(1, 2))
            total = view[:, :: win.strides[0], :: win.strides[1]].sum(axis=(4, 5))
            values[out_index] = np.clip((total + count // 2) // count, *bounds).astype(np.uint8)

        return step

    def _reshape(self, op: CaseOperation) -> Step:
        shape = tuple(int(d) for d in graph.constant(self.model, op.inputs[1]))
        x_index, out_index = op.inputs[0], op.outputs[0]

        def step(values: list[np.ndarray | None]) -> None:
            values[out_index] = values[x_index].reshape(shape)

        return step

    def _fully_connected(self, op: CaseOperation) -> Step:
        activation = int(graph.scalar(self.model, op.inputs[3]))
        filt, bias, multiplier, in_zero, out_zero, bounds = self._conv_parts(op.inputs, op.outputs[0], activation)
        matrix = np.ascontiguousarray(filt.T)
        x_index, out_index = op.inputs[0], op.outputs[0]

        def step(values: list[np.ndarray | None]) -> None:
            x = values[x_index].reshape(-1, matrix.shape[0]).astype(np.int32) - in_zero
            values[out_index] = _requantize(x @ matrix + bias, multiplier, out_zero, bounds)

        return step

    def _softmax(self, op: CaseOperation) -> Step:
        x_op, out = graph.operand(self.model, op.inputs[0]), graph.operand(self.model, op.outputs[0])
        beta = float(graph.scalar(self.model, op.inputs[1]))
        x_index, out_index = op.inputs[0], op.outputs[0]

        def step(values: list[np.ndarray | None]) -> None:
            real = (values[x_index].astype(np.float32) - x_op.zero_point) * np.float32(x_op.scale * beta)
            e = np.exp(real - real.max(axis=-1, keepdims=True))
            probs = e / e.sum(axis=-1, keepdims=True)
            values[out_index] = np.clip(np.rint(probs / out.scale) + out.zero_point, 0, 255).astype(np.uint8)

        return step
