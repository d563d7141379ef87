"""NNAPI operation -> ONNX nodes: the ONNX Runtime driver's translation table.

What differs between the two worlds, and how each handler bridges it:

- **Layout**: NNAPI is NHWC unless an operation's layout flag says NCHW;
  ONNX convolutions and pools are NCHW.  NHWC data is transposed in and the
  result transposed back; NCHW operations need nothing.  Filters are
  constants reordered at translation: [out, h, w, in] -> [out, in, h, w];
  depthwise [1, h, w, channels] -> [channels, 1, h, w] with group = input
  channels.
- **Padding** is always explicit in ONNX ([top, left, bottom, right]), so
  every NNAPI window maps exactly; averages exclude the padding
  (``count_include_pad=0``), as NNAPI's do.
- **Fused activations** become a node after the operation: Relu or Clip on
  floats; on quantized outputs, a Clip in the quantized domain to NNAPI's
  activation range (zero point + round(limit / scale), within the type's
  range), skipped when it would not clip anything.
- **Quantized operations** use ONNX Runtime's integer kernels where one
  exists (QLinearConv, com.microsoft QLinearAdd / QLinearMul /
  QLinearAveragePool / QLinearGlobalAveragePool / QGemm / QLinearSigmoid;
  MaxPool, Reshape, Transpose, Concat of equal parameters on the integers
  themselves); otherwise DequantizeLinear, the float operation,
  QuantizeLinear.  ONNX Runtime requantizes with a float multiplier and
  QuantizeLinear rounds half to even, where NNAPI uses a fixed-point
  multiplier and rounds half away from zero: results may differ by a step.
- **QDQ form** (``Graph.qdq``, for execution providers other than the CPU
  one: accelerators take the standard form, not the contrib QLinear
  operators): every quantized operation is DequantizeLinear on each input
  (per-channel filters along ONNX axis 0, int32 biases at input scale x
  filter scale), the float operation, QuantizeLinear; fused activations on
  quantized outputs clip in the float domain at the exact dequantized limits
  of NNAPI's quantized range, inside the Q/DQ pair.
- **Float16** (``Graph.half``, for other providers too): float16 operands
  and constants stay float16 instead of computing in float32.

Parameters must be constants (``ModelView.scalar``), and so must filters.
A handler raises ``Unsupported`` for anything it cannot express exactly;
whether ONNX Runtime has kernels for the operand types is decided by the
engine itself (``translator``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnvts.drivers.engine.nnapi import (
    TO_NCHW,
    TO_NHWC,
    ModelView,
    Unsupported,
    Window,
    conv_window,
    pool_window,
    transpose_conv_window,
)
from nnvts.drivers.onnxruntime.resize import translate_resize
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op
from vts.hal.types import Operation

MS_DOMAIN = "com.microsoft"
OPSET = 17

_FLOAT_RANGES = {0: None, 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_QUANT_DTYPES = {T.TENSOR_QUANT8_ASYMM: np.uint8, T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}


def onnx_type(operand_type: T) -> int:
    from onnx import TensorProto

    table = {T.TENSOR_FLOAT32: TensorProto.FLOAT, T.TENSOR_FLOAT16: TensorProto.FLOAT16,
             T.TENSOR_INT32: TensorProto.INT32, T.TENSOR_QUANT8_ASYMM: TensorProto.UINT8,
             T.TENSOR_QUANT8_ASYMM_SIGNED: TensorProto.INT8, T.TENSOR_QUANT8_SYMM: TensorProto.INT8,
             T.TENSOR_QUANT8_SYMM_PER_CHANNEL: TensorProto.INT8,
             T.TENSOR_BOOL8: TensorProto.BOOL, T.TENSOR_QUANT16_SYMM: TensorProto.INT16,
             T.TENSOR_QUANT16_ASYMM: TensorProto.UINT16}
    if operand_type not in table:
        raise Unsupported(f"operand type {operand_type.name} has no ONNX element type")
    return table[operand_type]


class Graph:
    """One ONNX graph being built from (part of) an NNAPI model."""

    def __init__(self, view: ModelView, qdq: bool = False, half: bool = False) -> None:
        self.view = view
        self.qdq = qdq
        self.half = half
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.constants: set[int] = set()
        self.uses_ms_domain = False
        self._counter = 0

    def name(self, index: int) -> str:
        """The value name of NNAPI operand ``index``; a constant becomes an initializer on first use."""
        if self.view.is_constant(index) and index not in self.constants:
            from onnx import numpy_helper

            onnx_type(self.view.type_of(index))  # refuse types ONNX cannot hold
            self.constants.add(index)
            value = self.view.constant(index)
            if value.dtype == np.float16 and not self.half:  # float16 computes in float32 (translator.build)
                value = value.astype(np.float32)
            self.initializers.append(numpy_helper.from_array(value, f"operand{index}"))
        return f"operand{index}"

    def fresh(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}_{self._counter}"

    def const(self, value: np.ndarray, stem: str = "c") -> str:
        from onnx import numpy_helper

        name = self.fresh(stem)
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "",
             **attrs: object) -> None:
        from onnx import helper

        if domain == MS_DOMAIN:
            self.uses_ms_domain = True
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=self.fresh(op_type),
                                           domain=domain, **attrs))

    # -- quantization -----------------------------------------------------------

    def quantized(self, index: int) -> bool:
        return self.view.type_of(index) in _QUANT_DTYPES

    def quant_params(self, index: int) -> tuple[str, str]:
        """(scale, zero point) initializers of a per-tensor quantized operand."""
        operand = self.view.operand(index)
        dtype = _QUANT_DTYPES.get(T(operand.type))
        if dtype is None:
            raise Unsupported(f"{T(operand.type).name} is not a per-tensor quantized type")
        return (self.const(np.array(operand.scale, np.float32), "scale"),
                self.const(np.array(operand.zero_point, dtype), "zero_point"))

    def filter_params(self, index: int) -> tuple[str, str]:
        """(scale, zero point) of a filter: per tensor, or per output channel (1-D, as QLinearConv takes)."""
        channel = self.view.channel_quant(index)
        if channel is None:
            return self.quant_params(index)
        count = len(channel.scales)
        return (self.const(np.array(channel.scales, np.float32), "w_scale"),
                self.const(np.zeros(count, np.int8), "w_zero_point"))

    def dequantized(self, index: int) -> str:
        """A float view of operand ``index`` (itself when it is not quantized)."""
        if not self.quantized(index):
            return self.name(index)
        return self.dequantize_value(self.name(index), index)

    def dequantize_value(self, value: str, index: int) -> str:
        """Float view of ``value``, which holds integers quantized as operand ``index``."""
        out = self.fresh("real")
        self.node("DequantizeLinear", [value, *self.quant_params(index)], [out])
        return out

    def dequantized_filter(self, value: str, index: int) -> str:
        """Float view of filter ``value`` (ONNX order, per-channel axis 0) quantized as operand ``index``."""
        out = self.fresh("real_filter")
        channel = self.view.channel_quant(index)
        self.node("DequantizeLinear", [value, *self.filter_params(index)], [out],
                  **({"axis": 0} if channel is not None else {}))
        return out

    def dequantized_bias(self, bias: int, x: int, w: int) -> str:
        """Float view of an int32 bias: scale input scale x filter scale (per channel), zero point 0."""
        channel = self.view.channel_quant(w)
        x_scale = np.float32(self.view.operand(x).scale)
        if channel is not None:
            scales = (x_scale * np.array(channel.scales, np.float32)).astype(np.float32)
            zeros = np.zeros(len(scales), np.int32)
        else:
            scales = np.array(x_scale * np.float32(self.view.operand(w).scale), np.float32)
            zeros = np.array(0, np.int32)
        out = self.fresh("real_bias")
        self.node("DequantizeLinear", [self.name(bias), self.const(scales, "b_scale"), self.const(zeros, "b_zero")],
                  [out], **({"axis": 0} if channel is not None else {}))
        return out

    def quantize_activated(self, real: str, activation: int, index: int) -> str:
        """QDQ form: float ``real`` through NNAPI fused ``activation`` then quantized as operand ``index``.

        The clip happens in floats at the dequantized ends of NNAPI's
        quantized range (``activation_range``), so quantizing gives exactly
        the integers a clip in the quantized domain would.
        """
        limits = self.activation_range(activation, index)
        if limits is not None:
            operand = self.view.operand(index)
            low, high = ((np.float32(v) - np.float32(operand.zero_point)) * np.float32(operand.scale) for v in limits)
            clipped = self.fresh("act")
            self.node("Clip", [real, self.const(np.array(low, np.float32)), self.const(np.array(high, np.float32))],
                      [clipped])
            real = clipped
        out = self.fresh("q")
        self.node("QuantizeLinear", [real, *self.quant_params(index)], [out])
        return out

    def activation_range(self, activation: int, index: int) -> tuple[int, int] | None:
        """NNAPI's quantized clip range of ``activation`` on operand ``index``; None when it clips nothing."""
        if activation not in _FLOAT_RANGES:
            raise Unsupported(f"fused activation {activation}")
        limits = _FLOAT_RANGES[activation]
        if limits is None:
            return None
        operand = self.view.operand(index)
        info = np.iinfo(_QUANT_DTYPES[T(operand.type)])
        low = max(info.min, operand.zero_point + round_half_away(limits[0] / operand.scale))
        high = info.max if limits[1] is None else min(info.max, operand.zero_point +
                                                      round_half_away(limits[1] / operand.scale))
        return None if low <= info.min and high >= info.max else (low, high)

    def requantize_into(self, value: str, index: int) -> None:
        """Write float ``value`` into operand ``index`` (QuantizeLinear when it is quantized)."""
        if self.quantized(index):
            self.node("QuantizeLinear", [value, *self.quant_params(index)], [self.name(index)])
        else:
            self.node("Identity", [value], [self.name(index)])

    # -- layouts --------------------------------------------------------------

    def nchw_input(self, index: int, nchw: bool) -> str:
        if nchw:
            return self.name(index)
        out = self.fresh("nchw")
        self.node("Transpose", [self.name(index)], [out], perm=list(TO_NCHW))
        return out

    def nchw_input_value(self, value: str, nchw: bool) -> str:
        """``value`` (an NNAPI-layout tensor already in the graph) in NCHW."""
        if nchw:
            return value
        out = self.fresh("nchw")
        self.node("Transpose", [value], [out], perm=list(TO_NCHW))
        return out

    def nchw_output_into(self, value: str, index: int, nchw: bool) -> None:
        if nchw:
            self.node("Identity", [value], [self.name(index)])
        else:
            self.node("Transpose", [value], [self.name(index)], perm=list(TO_NHWC))

    # -- activations ------------------------------------------------------------

    def activation(self, value: str, activation: int, index: int) -> str:
        """``value`` (in operand ``index``'s type and quantization) after NNAPI fused activation ``activation``."""
        if activation not in _FLOAT_RANGES:
            raise Unsupported(f"fused activation {activation}")
        limits = _FLOAT_RANGES[activation]
        if limits is None:
            return value
        out = self.fresh("act")
        if not self.quantized(index):
            if activation == 1:
                self.node("Relu", [value], [out])
                return out
            kind = self.view.type_of(index)
            dtype = np.int32 if kind == T.TENSOR_INT32 else np.float16 if (
                kind == T.TENSOR_FLOAT16 and self.half) else np.float32
            self.node("Clip", [value, self.const(np.array(limits[0], dtype)), self.const(np.array(limits[1], dtype))],
                      [out])
            return out
        clip = self.activation_range(activation, index)
        if clip is None:
            return value
        if self.qdq:  # dequantize, clip, quantize: accelerators take the standard form only
            return self.quantize_activated(self.dequantize_value(value, index), activation, index)
        dtype = _QUANT_DTYPES[T(self.view.operand(index).type)]
        self.node("Clip", [value, self.const(np.array(clip[0], dtype)), self.const(np.array(clip[1], dtype))], [out])
        return out


def round_half_away(x: float) -> int:
    return int(np.sign(x) * np.floor(abs(x) + 0.5))


Handler = Callable[[Graph, Operation], None]


def _int(g: Graph, index: int) -> int:
    return int(g.view.scalar(index))


def _finish(g: Graph, value: str, index: int) -> None:
    g.node("Identity", [value], [g.name(index)])


# ---------------------------------------------------------------------------- elementwise


def _binary(float_op: str, qlinear: str | None) -> Handler:
    def handler(g: Graph, op: Operation) -> None:
        a, b, act = op.inputs[:3]
        out = op.outputs[0]
        activation = _int(g, act)
        if g.quantized(out) and g.qdq:
            real = g.fresh(float_op)
            g.node(float_op, [g.dequantized(a), g.dequantized(b)], [real])
            _finish(g, g.quantize_activated(real, activation, out), out)
            return
        if g.quantized(out):
            if qlinear is not None:
                value = g.fresh(qlinear)
                g.node(qlinear, [g.name(a), *g.quant_params(a), g.name(b), *g.quant_params(b), *g.quant_params(out)],
                       [value], domain=MS_DOMAIN)
            else:
                real = g.fresh(float_op)
                g.node(float_op, [g.dequantized(a), g.dequantized(b)], [real])
                value = g.fresh("q")
                g.node("QuantizeLinear", [real, *g.quant_params(out)], [value])
        else:
            value = g.fresh(float_op)
            g.node(float_op, [g.name(a), g.name(b)], [value])
        _finish(g, g.activation(value, activation, out), out)
    return handler


def _unary(onnx_op: str, **attrs: object) -> Handler:
    """Elementwise operations: on the integers when not quantized, through floats when quantized."""
    def handler(g: Graph, op: Operation) -> None:
        x, out = op.inputs[0], op.outputs[0]
        if g.quantized(x) or g.quantized(out):
            real = g.fresh(onnx_op)
            g.node(onnx_op, [g.dequantized(x)], [real], **attrs)
            g.requantize_into(real, out)
        else:
            g.node(onnx_op, [g.name(x)], [g.name(out)], **attrs)
    return handler


def _relu(activation: int) -> Handler:
    """RELU / RELU1 / RELU6: the fused-activation clamp on its own; quantized only with equal parameters."""
    def handler(g: Graph, op: Operation) -> None:
        x, out = op.inputs[0], op.outputs[0]
        a, b = g.view.operand(x), g.view.operand(out)
        if g.quantized(x) and (a.scale, a.zero_point) != (b.scale, b.zero_point):
            raise Unsupported("quantized activation with different input and output parameters")
        _finish(g, g.activation(g.name(x), activation, out), out)
    return handler


# ---------------------------------------------------------------------------- convolutions and pooling


def _onnx_window_attrs(window: Window) -> dict[str, object]:
    top, bottom, left, right = window.pads
    return {"strides": list(window.strides), "pads": [top, left, bottom, right]}


def _filter(g: Graph, index: int, depthwise: bool) -> str:
    """The filter in ONNX order; NNAPI's per-channel dimension (0, or 3 for depthwise) becomes ONNX axis 0.

    A constant filter is reordered here, once; one fed at execution time by a Transpose node.
    """
    if not g.view.is_constant(index):
        reordered = g.fresh("filter")
        g.node("Transpose", [g.name(index)], [reordered], perm=[3, 0, 1, 2] if depthwise else [0, 3, 1, 2])
        return reordered
    value = g.view.constant(index)
    if value.dtype == np.float16 and not g.half:
        value = value.astype(np.float32)
    weights = value[0].transpose(2, 0, 1)[:, None] if depthwise else value.transpose(0, 3, 1, 2)
    return g.const(np.ascontiguousarray(weights), "filter")


def _conv_node(g: Graph, op: Operation, window: Window, group: int, depthwise: bool) -> None:
    x, w, b = op.inputs[:3]
    out = op.outputs[0]
    attrs = {**_onnx_window_attrs(window), "dilations": list(window.dilations), "group": group}
    source = g.nchw_input(x, window.nchw)
    weights = _filter(g, w, depthwise)
    value = g.fresh("conv")
    if g.quantized(x) and g.qdq:
        real = g.fresh("conv")
        g.node("Conv", [g.dequantize_value(source, x), g.dequantized_filter(weights, w), g.dequantized_bias(b, x, w)],
               [real], **attrs)
        g.nchw_output_into(g.quantize_activated(real, window.activation, out), out, window.nchw)
        return
    if g.quantized(x):
        g.node("QLinearConv", [source, *g.quant_params(x), weights, *g.filter_params(w), *g.quant_params(out),
                               g.name(b)], [value], **attrs)
    else:
        g.node("Conv", [source, weights, g.name(b)], [value], **attrs)
    g.nchw_output_into(g.activation(value, window.activation, out), out, window.nchw)


def _conv(g: Graph, op: Operation) -> None:
    window, multiplier = conv_window(g.view, op)
    depthwise = op.type == Op.DEPTHWISE_CONV_2D
    dims = g.view.dims(op.inputs[0])
    channels = dims[1] if window.nchw else dims[3]
    filter_dims = g.view.dims(op.inputs[1])
    if depthwise and (filter_dims[0] != 1 or filter_dims[3] != channels * multiplier):
        raise Unsupported("depthwise filter must be [1, h, w, input channels x multiplier]")
    _conv_node(g, op, window, channels if depthwise else 1, depthwise)


def _grouped_conv(g: Graph, op: Operation) -> None:
    """GROUPED_CONV_2D: explicit (12 inputs) or implicit (9 inputs) padding, groups before the activation."""
    from nnvts.drivers.engine.nnapi import implicit_padding

    args = op.inputs
    if len(args) == 12:
        left, right, top, bottom, stride_w, stride_h = (_int(g, i) for i in args[3:9])
        groups, activation, nchw = _int(g, args[9]), _int(g, args[10]), bool(g.view.scalar(args[11]))
    else:
        scheme, stride_w, stride_h = (_int(g, i) for i in args[3:6])
        groups, activation, nchw = _int(g, args[6]), _int(g, args[7]), bool(g.view.scalar(args[8]))
    kernel = tuple(g.view.dims(args[1])[1:3])
    if len(args) != 12:
        dims = g.view.dims(args[0])
        in_h, in_w = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
        top, bottom = implicit_padding(in_h, stride_h, kernel[0], 1, scheme)
        left, right = implicit_padding(in_w, stride_w, kernel[1], 1, scheme)
    window = Window((top, bottom, left, right), (stride_h, stride_w), (1, 1), kernel, activation, nchw)
    _conv_node(g, op, window, groups, depthwise=False)


def _transpose_conv(g: Graph, op: Operation) -> None:
    """TRANSPOSE_CONV_2D: ConvTranspose with NNAPI's explicit pads; filter [out, h, w, in] -> [in, out, h, w].

    Quantized models run through floats (ONNX Runtime has no integer
    transposed convolution): inputs and filter dequantized, the int32 bias
    scaled by input scale x filter scale, the result quantized.
    """
    window, _ = transpose_conv_window(g.view, op)
    if any(p < 0 for p in window.pads):
        raise Unsupported("TRANSPOSE_CONV_2D with a negative padding (ONNX pads are non-negative)")
    x, w, b = op.inputs[:3]
    out = op.outputs[0]
    if not g.view.is_constant(w) or not g.view.is_constant(b):
        raise Unsupported("TRANSPOSE_CONV_2D filter or bias fed at execution time")
    filt = g.view.constant(w).astype(np.float32)
    bias = g.view.constant(b).astype(np.float32)
    if g.quantized(x):
        if g.view.channel_quant(w) is not None:
            channel = g.view.channel_quant(w)
            assert channel is not None
            scales = np.array(channel.scales, np.float32)
            filt = filt * scales.reshape(-1, 1, 1, 1)
        else:
            scales = np.float32(g.view.operand(w).scale)
            filt = (filt - g.view.operand(w).zero_point) * scales
        bias = bias * np.float32(g.view.operand(x).scale) * scales
    attrs = {**_onnx_window_attrs(window)}
    value = g.fresh("deconv")
    g.node("ConvTranspose", [g.nchw_input_value(g.dequantized(x), window.nchw),
                             g.const(np.ascontiguousarray(filt.transpose(3, 0, 1, 2)), "filter"),
                             g.const(bias, "bias")], [value], **attrs)
    if g.quantized(out):
        quantized = g.fresh("q")
        g.node("QuantizeLinear", [value, *g.quant_params(out)], [quantized])
        g.nchw_output_into(g.activation(quantized, window.activation, out), out, window.nchw)
    else:
        g.nchw_output_into(g.activation(value, window.activation, out), out, window.nchw)


def _pool(kind: str) -> Handler:
    def handler(g: Graph, op: Operation) -> None:
        window = pool_window(g.view, op)
        x, out = op.inputs[0], op.outputs[0]
        dims = g.view.dims(x)
        in_h, in_w = (dims[2], dims[3]) if window.nchw else (dims[1], dims[2])
        attrs = {**_onnx_window_attrs(window), "kernel_shape": list(window.kernel)}
        source = g.nchw_input(x, window.nchw)
        value = g.fresh("pool")
        if kind == "max":
            g.node("MaxPool", [source], [value], **attrs)
        elif kind == "l2":  # sqrt(mean(x^2)) over the in-bounds elements
            if g.quantized(x):
                raise Unsupported("quantized L2_POOL_2D")
            squared, mean = g.fresh("sq"), g.fresh("mean")
            g.node("Mul", [source, source], [squared])
            g.node("AveragePool", [squared], [mean], count_include_pad=0, **attrs)
            g.node("Sqrt", [mean], [value])
        elif g.quantized(x) and g.qdq:
            real = g.fresh("pool")
            g.node("AveragePool", [g.dequantize_value(source, x)], [real], count_include_pad=0, **attrs)
            g.nchw_output_into(g.quantize_activated(real, window.activation, out), out, window.nchw)
            return
        elif g.quantized(x):
            is_global = window.kernel == (in_h, in_w) and not any(window.pads) and window.strides == (1, 1)
            if is_global:
                g.node("QLinearGlobalAveragePool", [source, *g.quant_params(x), *g.quant_params(out)], [value],
                       domain=MS_DOMAIN, channels_last=0)
            else:
                g.node("QLinearAveragePool", [source, *g.quant_params(x), *g.quant_params(out)], [value],
                       domain=MS_DOMAIN, channels_last=0, count_include_pad=0, **attrs)
        else:
            g.node("AveragePool", [source], [value], count_include_pad=0, **attrs)
        g.nchw_output_into(g.activation(value, window.activation, out), out, window.nchw)
    return handler


def _fully_connected(g: Graph, op: Operation) -> None:
    """Input flattened to [batch, input size] as NNAPI does, then Gemm (QGemm when quantized)."""
    x, w, b, act = op.inputs
    out = op.outputs[0]
    input_size = g.view.dims(w)[1]
    flat = g.fresh("flat")
    g.node("Reshape", [g.name(x), g.const(np.array([-1, input_size], np.int64), "shape")], [flat])
    value = g.fresh("gemm")
    bias = [] if g.view.is_omitted(b) else [g.name(b)]
    if g.quantized(x) and g.qdq:
        real = g.fresh("gemm")
        bias_real = [] if not bias else [g.dequantized_bias(b, x, w)]
        g.node("Gemm", [g.dequantize_value(flat, x), g.dequantized_filter(g.name(w), w), *bias_real], [real],
               transB=1)
        _finish(g, g.quantize_activated(real, _int(g, act), out), out)
        return
    if g.quantized(x):
        if g.view.channel_quant(w) is not None:
            raise Unsupported("per-channel FULLY_CONNECTED weights")
        g.node("QGemm", [flat, *g.quant_params(x), g.name(w), *g.quant_params(w), *(bias or [""]),
                         *g.quant_params(out)], [value], domain=MS_DOMAIN, transB=1)
    else:
        g.node("Gemm", [flat, g.name(w), *bias], [value], transB=1)
    _finish(g, g.activation(value, _int(g, act), out), out)


# ---------------------------------------------------------------------------- softmax, shapes


def _softmax(g: Graph, op: Operation) -> None:
    x, beta = op.inputs[:2]
    out = op.outputs[0]
    axis = _int(g, op.inputs[2]) if len(op.inputs) > 2 else -1
    value = g.dequantized(x)
    if float(g.view.scalar(beta)) != 1.0:
        scaled = g.fresh("scaled")
        g.node("Mul", [value, g.const(np.array(g.view.scalar(beta), np.float32))], [scaled])
        value = scaled
    probs = g.fresh("softmax")
    g.node("Softmax", [value], [probs], axis=axis)
    g.requantize_into(probs, out)


def _same_quantization(g: Graph, indexes: Sequence[int]) -> bool:
    params = {(g.view.operand(i).scale, g.view.operand(i).zero_point) for i in indexes}
    return len(params) == 1


def _reshape(g: Graph, op: Operation) -> None:
    x, shape = op.inputs
    out = op.outputs[0]
    if g.quantized(x) and not _same_quantization(g, [x, out]):
        raise Unsupported("quantized RESHAPE that changes the quantization")
    target = g.view.constant(shape).astype(np.int64).reshape(-1)
    g.node("Reshape", [g.name(x), g.const(target, "shape")], [g.name(out)])


def _concatenation(g: Graph, op: Operation) -> None:
    *tensors, axis = op.inputs
    out = op.outputs[0]
    if g.quantized(out) and not _same_quantization(g, [*tensors, out]):
        real = g.fresh("concat")
        g.node("Concat", [g.dequantized(i) for i in tensors], [real], axis=_int(g, axis))
        g.requantize_into(real, out)
    else:
        g.node("Concat", [g.name(i) for i in tensors], [g.name(out)], axis=_int(g, axis))


def _transpose(g: Graph, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    rank = len(g.view.dims(x))
    if len(op.inputs) < 2 or g.view.is_omitted(op.inputs[1]):
        perm = list(range(rank))[::-1]
    else:
        perm = [int(p) for p in g.view.constant(op.inputs[1]).reshape(-1)]
    g.node("Transpose", [g.name(x)], [g.name(out)], perm=perm)


def _mean(g: Graph, op: Operation) -> None:
    x, axes, keep = op.inputs
    out = op.outputs[0]
    if g.quantized(x):
        raise Unsupported("quantized MEAN")
    g.node("ReduceMean", [g.name(x)], [g.name(out)], axes=[int(a) for a in g.view.constant(axes).reshape(-1)],
           keepdims=int(bool(g.view.scalar(keep))))


# ---------------------------------------------------------------------------- more: normalisation, data movement


def _axis(g: Graph, op: Operation, position: int, default: int = -1) -> int:
    """An optional axis parameter, made non-negative."""
    rank = len(g.view.dims(op.inputs[0]))
    axis = _int(g, op.inputs[position]) if len(op.inputs) > position else default
    return axis + rank if axis < 0 else axis


def _float_only(g: Graph, op: Operation, what: str) -> None:
    if g.quantized(op.inputs[0]):
        raise Unsupported(f"quantized {what}")


def _lrn(g: Graph, op: Operation) -> None:
    """ONNX LRN normalises axis 1 of 4-D data and divides alpha by the window size; NNAPI does neither.

    NNAPI's axis (any, in data of rank 1 to 4) is moved to position 1 by a
    Transpose, data of lower rank gets unit axes up to 4-D, and both are
    undone after.
    """
    _float_only(g, op, "LOCAL_RESPONSE_NORMALIZATION")
    x, out = op.inputs[0], op.outputs[0]
    rank = len(g.view.dims(x))
    if not 1 <= rank <= 4:
        raise Unsupported(f"LOCAL_RESPONSE_NORMALIZATION of {rank}-D data (NNAPI allows 1-D to 4-D)")
    axis = _axis(g, op, 5)
    radius, bias, alpha, beta = (g.view.scalar(i) for i in op.inputs[1:5])
    size = 2 * int(radius) + 1
    others = [d for d in range(rank) if d != axis]
    perm = [*others[:1], axis, *others[1:]]
    padding = [0, 2, 3] if rank == 1 else list(range(rank, 4))
    value = g.name(x)
    if perm != list(range(rank)):
        value = _transposed(g, value, perm)
    if padding:
        value = _with_axes(g, "Unsqueeze", value, padding)
    normalised = g.fresh("lrn")
    g.node("LRN", [value], [normalised], size=size, alpha=float(alpha) * size, beta=float(beta), bias=float(bias))
    value = _with_axes(g, "Squeeze", normalised, padding) if padding else normalised
    if perm != list(range(rank)):
        value = _transposed(g, value, [perm.index(d) for d in range(rank)])
    _finish(g, value, out)


def _transposed(g: Graph, value: str, perm: Sequence[int]) -> str:
    out = g.fresh("transposed")
    g.node("Transpose", [value], [out], perm=list(perm))
    return out


def _with_axes(g: Graph, onnx_op: str, value: str, axes: Sequence[int]) -> str:
    """Unsqueeze or Squeeze ``value`` at ``axes``."""
    out = g.fresh(onnx_op.lower())
    g.node(onnx_op, [value, g.const(np.array(axes, np.int64), "axes")], [out])
    return out


def _l2_normalization(g: Graph, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    real = g.fresh("l2")
    g.node("LpNormalization", [g.dequantized(x)], [real], axis=_axis(g, op, 1), p=2)
    g.requantize_into(real, out)


def _channel_shuffle(g: Graph, op: Operation) -> None:
    """Channels [groups, per group] become [per group, groups]: Reshape, Transpose, Reshape."""
    x, groups_index = op.inputs[:2]
    out = op.outputs[0]
    dims = g.view.dims(x)
    if not all(d > 0 for d in dims):
        raise Unsupported("CHANNEL_SHUFFLE of a tensor with unknown dimensions")
    axis, groups = _axis(g, op, 2), _int(g, groups_index)
    split = [*dims[:axis], groups, dims[axis] // groups, *dims[axis + 1:]]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    grouped, swapped = g.fresh("grouped"), g.fresh("swapped")
    g.node("Reshape", [g.name(x), g.const(np.array(split, np.int64), "shape")], [grouped])
    g.node("Transpose", [grouped], [swapped], perm=perm)
    g.node("Reshape", [swapped, g.const(np.array(dims, np.int64), "shape")], [g.name(out)])


def _block(onnx_op: str) -> Handler:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH: ONNX's DCR order on NCHW is NNAPI's channel order on NHWC."""
    def handler(g: Graph, op: Operation) -> None:
        x, out = op.inputs[0], op.outputs[0]
        nchw = bool(g.view.optional_scalar(op, 2, False))
        value = g.fresh(onnx_op)
        attrs = {"mode": "DCR"} if onnx_op == "DepthToSpace" else {}
        g.node(onnx_op, [g.nchw_input(x, nchw)], [value], blocksize=_int(g, op.inputs[1]), **attrs)
        g.nchw_output_into(value, out, nchw)
    return handler


def _gather(g: Graph, op: Operation) -> None:
    x, axis, indices = op.inputs
    g.node("Gather", [g.name(x), g.name(indices)], [g.name(op.outputs[0])], axis=_int(g, axis))


def _pad(g: Graph, op: Operation) -> None:
    """PAD / PAD_V2: NNAPI's [rank, 2] paddings -> ONNX's begins then ends; quantized PAD fills the zero point."""
    x, paddings = op.inputs[:2]
    out = op.outputs[0]
    pads = g.view.constant(paddings).astype(np.int64)
    operand = g.view.operand(x)
    kind = g.view.type_of(x)
    default_fill = operand.zero_point if g.quantized(x) else 0  # PAD fills real zero
    fill = g.view.scalar(op.inputs[2]) if len(op.inputs) > 2 else default_fill
    dtype = _QUANT_DTYPES.get(kind, np.int32 if kind == T.TENSOR_INT32 else np.float32)
    g.node("Pad", [g.name(x), g.const(np.concatenate([pads[:, 0], pads[:, 1]]), "pads"),
                   g.const(np.array(fill, dtype), "fill")], [g.name(out)], mode="constant")


def _squeeze(g: Graph, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    inputs = [g.name(x)]
    if len(op.inputs) > 1 and not g.view.is_omitted(op.inputs[1]):
        inputs.append(g.const(g.view.constant(op.inputs[1]).astype(np.int64).reshape(-1), "axes"))
    else:
        dims = g.view.dims(x)
        inputs.append(g.const(np.array([i for i, d in enumerate(dims) if d == 1], np.int64), "axes"))
    g.node("Squeeze", inputs, [g.name(out)])


def _expand_dims(g: Graph, op: Operation) -> None:
    g.node("Unsqueeze", [g.name(op.inputs[0]), g.const(np.array([_int(g, op.inputs[1])], np.int64), "axes")],
           [g.name(op.outputs[0])])


def _reduce(onnx_op: str, axes_as_input: bool) -> Handler:
    """REDUCE_*: (x, axes, keep_dims); the quantized ones (MAX, MIN) pick integers, so no rescaling is needed."""
    def handler(g: Graph, op: Operation) -> None:
        x, axes, keep = op.inputs
        out = op.outputs[0]
        if g.quantized(x) and (g.view.operand(x).scale, g.view.operand(x).zero_point) != (
                g.view.operand(out).scale, g.view.operand(out).zero_point):
            raise Unsupported("quantized reduction with different input and output parameters")
        values = sorted({int(a) for a in g.view.constant(axes).reshape(-1)})
        keepdims = int(bool(g.view.scalar(keep)))
        if axes_as_input:
            g.node(onnx_op, [g.name(x), g.const(np.array(values, np.int64), "axes")], [g.name(out)],
                   keepdims=keepdims)
        else:
            g.node(onnx_op, [g.name(x)], [g.name(out)], axes=values, keepdims=keepdims)
    return handler


def _arg(onnx_op: str) -> Handler:
    def handler(g: Graph, op: Operation) -> None:
        index = g.fresh("index")
        g.node(onnx_op, [g.name(op.inputs[0])], [index], axis=_int(g, op.inputs[1]), keepdims=0)
        g.node("Cast", [index], [g.name(op.outputs[0])], to=onnx_type(T.TENSOR_INT32))
    return handler


def _dequantize(g: Graph, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    if not g.quantized(x):
        raise Unsupported(f"DEQUANTIZE of {g.view.type_of(x).name}")
    g.node("DequantizeLinear", [g.name(x), *g.quant_params(x)], [g.name(out)])


def _quantize(g: Graph, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    g.node("QuantizeLinear", [g.name(x), *g.quant_params(out)], [g.name(out)])


def _compare(onnx_op: str, negate: bool = False) -> Handler:
    """Comparisons of real values: quantized inputs are dequantized first, as NNAPI compares real values."""
    def handler(g: Graph, op: Operation) -> None:
        a, b = op.inputs
        if not negate:
            g.node(onnx_op, [g.dequantized(a), g.dequantized(b)], [g.name(op.outputs[0])])
            return
        same = g.fresh(onnx_op)
        g.node(onnx_op, [g.dequantized(a), g.dequantized(b)], [same])
        g.node("Not", [same], [g.name(op.outputs[0])])
    return handler


def _elementwise(onnx_op: str, arity: int) -> Handler:
    """Non-fused elementwise operations (MAXIMUM, POW, LOGICAL_*...), through floats when quantized."""
    def handler(g: Graph, op: Operation) -> None:
        inputs, out = op.inputs[:arity], op.outputs[0]
        if g.quantized(out):
            real = g.fresh(onnx_op)
            g.node(onnx_op, [g.dequantized(i) for i in inputs], [real])
            g.requantize_into(real, out)
        else:
            g.node(onnx_op, [g.name(i) for i in inputs], [g.name(out)])
    return handler


def _select(g: Graph, op: Operation) -> None:
    condition, a, b = op.inputs
    out = op.outputs[0]
    if g.quantized(out):
        real = g.fresh("where")
        g.node("Where", [g.name(condition), g.dequantized(a), g.dequantized(b)], [real])
        g.requantize_into(real, out)
    else:
        g.node("Where", [g.name(condition), g.name(a), g.name(b)], [g.name(out)])


def _slice(g: Graph, op: Operation) -> None:
    """SLICE: (x, begin, size) with size -1 meaning "to the end"."""
    x, begin, size = op.inputs
    starts = g.view.constant(begin).astype(np.int64)
    sizes = g.view.constant(size).astype(np.int64)
    ends = np.where(sizes < 0, np.iinfo(np.int64).max, starts + sizes)
    g.node("Slice", [g.name(x), g.const(starts, "starts"), g.const(ends, "ends")], [g.name(op.outputs[0])])


def _strided_slice_bounds(dim: int, begin: int, end: int, stride: int, begin_masked: bool,
                          end_masked: bool) -> tuple[int, int]:
    """(start, stop) of one axis as Android's STRIDED_SLICE computes them (stop -1: before index 0)."""
    def clamped(index: int) -> int:  # Android's ClampedIndex
        if stride > 0:
            return dim if index >= dim else min(max(index, -dim), dim) % dim
        return -1 if index < -dim else min(max(index, -dim), dim - 1) % dim
    start = (0 if stride > 0 else dim - 1) if begin_masked else clamped(begin)
    stop = (dim if stride > 0 else -1) if end_masked else clamped(end)
    return start, stop


def _strided_slice(g: Graph, op: Operation) -> None:
    """STRIDED_SLICE: bounds resolved at translation as Android does, then Slice and Squeeze the shrunk axes.

    NNAPI fails an execution that shrinks an axis whose slice is not one
    element or is walked backwards; ONNX would return a result, so such a
    model is unsupported rather than run.
    """
    x, begin, end, strides, begin_mask, end_mask, shrink = op.inputs
    out = op.outputs[0]
    dims = g.view.dims(x)
    if not dims or not all(d > 0 for d in dims):
        raise Unsupported("input dimensions not all known")
    if g.quantized(x) and not _same_quantization(g, [x, out]):
        raise Unsupported("quantized slice that changes the quantization")
    begins, ends, steps = (g.view.constant(i).astype(np.int64).reshape(-1) for i in (begin, end, strides))
    masks = [_int(g, i) for i in (begin_mask, end_mask, shrink)]
    starts, stops, shrunk = [], [], []
    for axis, dim in enumerate(dims):
        stride = int(steps[axis])
        if stride == 0:
            raise Unsupported(f"stride 0 on axis {axis}")
        bit = 1 << axis
        start, stop = _strided_slice_bounds(dim, int(begins[axis]), int(ends[axis]), stride,
                                            bool(masks[0] & bit), bool(masks[1] & bit))
        if masks[2] & bit:
            if stride < 0 or -(-(stop - start) // stride) != 1:
                raise Unsupported(f"shrinks axis {axis} whose slice is not one element walked "
                                  "forwards (NNAPI fails such an execution; ONNX Slice would not)")
            shrunk.append(axis)
        starts.append(start)
        stops.append(np.iinfo(np.int64).min if stop < 0 else stop)  # ONNX reads -1 as "the last element"
    value = g.fresh("slice")
    g.node("Slice", [g.name(x), g.const(np.array(starts, np.int64), "starts"),
                     g.const(np.array(stops, np.int64), "ends"), g.const(np.arange(len(dims), dtype=np.int64), "axes"),
                     g.const(steps, "steps")], [value])
    _finish(g, _with_axes(g, "Squeeze", value, shrunk) if shrunk else value, out)


def _tile(g: Graph, op: Operation) -> None:
    g.node("Tile", [g.name(op.inputs[0]), g.const(g.view.constant(op.inputs[1]).astype(np.int64), "repeats")],
           [g.name(op.outputs[0])])


def _split(g: Graph, op: Operation) -> None:
    x, axis_index, count = op.inputs
    axis = _int(g, axis_index)
    dims = g.view.dims(x)
    parts = _int(g, count)
    if not dims or dims[axis] <= 0:
        raise Unsupported("SPLIT of an axis of unknown size")
    sizes = np.full(parts, dims[axis] // parts, np.int64)
    g.node("Split", [g.name(x), g.const(sizes, "split")], [g.name(o) for o in op.outputs], axis=axis)


def _rsqrt(g: Graph, op: Operation) -> None:
    root = g.fresh("sqrt")
    g.node("Sqrt", [g.name(op.inputs[0])], [root])
    g.node("Reciprocal", [root], [g.name(op.outputs[0])])


def _log_softmax(g: Graph, op: Operation) -> None:
    x, beta, axis = op.inputs
    scaled = g.fresh("scaled")
    g.node("Mul", [g.name(x), g.const(np.array(g.view.scalar(beta), np.float32))], [scaled])
    g.node("LogSoftmax", [scaled], [g.name(op.outputs[0])], axis=_int(g, axis))


def _cast(g: Graph, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    if g.quantized(x) or g.quantized(out):
        raise Unsupported("CAST of quantized tensors (NNAPI casts the stored integers; ONNX would not saturate)")
    g.node("Cast", [g.name(x)], [g.name(out)], to=onnx_type(T.TENSOR_FLOAT32 if g.view.type_of(out)
                                                            == T.TENSOR_FLOAT16 else g.view.type_of(out)))


def _prelu(g: Graph, op: Operation) -> None:
    x, alpha = op.inputs
    out = op.outputs[0]
    if g.quantized(out):
        real = g.fresh("prelu")
        g.node("PRelu", [g.dequantized(x), g.dequantized(alpha)], [real])
        g.requantize_into(real, out)
    else:
        g.node("PRelu", [g.name(x), g.name(alpha)], [g.name(out)])


HANDLERS: dict[Op, Handler] = {
    Op.ADD: _binary("Add", "QLinearAdd"),
    Op.SUB: _binary("Sub", None),
    Op.MUL: _binary("Mul", "QLinearMul"),
    Op.DIV: _binary("Div", None),
    Op.CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _conv,
    Op.GROUPED_CONV_2D: _grouped_conv,
    Op.TRANSPOSE_CONV_2D: _transpose_conv,
    Op.FULLY_CONNECTED: _fully_connected,
    Op.AVERAGE_POOL_2D: _pool("average"),
    Op.MAX_POOL_2D: _pool("max"),
    Op.L2_POOL_2D: _pool("l2"),
    Op.RELU: _relu(1),
    Op.RELU1: _relu(2),
    Op.RELU6: _relu(3),
    Op.LOGISTIC: _unary("Sigmoid"),
    Op.TANH: _unary("Tanh"),
    Op.SOFTMAX: _softmax,
    Op.RESHAPE: _reshape,
    Op.CONCATENATION: _concatenation,
    Op.TRANSPOSE: _transpose,
    Op.MEAN: _mean,
    Op.FLOOR: _unary("Floor"),
    Op.EXP: _unary("Exp"),
    Op.LOG: _unary("Log"),
    Op.ABS: _unary("Abs"),
    Op.SQRT: _unary("Sqrt"),
    Op.NEG: _unary("Neg"),
    Op.SIN: _unary("Sin"),
    Op.RSQRT: _rsqrt,
    Op.LOCAL_RESPONSE_NORMALIZATION: _lrn,
    Op.L2_NORMALIZATION: _l2_normalization,
    Op.CHANNEL_SHUFFLE: _channel_shuffle,
    Op.DEPTH_TO_SPACE: _block("DepthToSpace"),
    Op.SPACE_TO_DEPTH: _block("SpaceToDepth"),
    Op.GATHER: _gather,
    Op.PAD: _pad,
    Op.PAD_V2: _pad,
    Op.SQUEEZE: _squeeze,
    Op.EXPAND_DIMS: _expand_dims,
    Op.REDUCE_SUM: _reduce("ReduceSum", axes_as_input=True),
    Op.REDUCE_MAX: _reduce("ReduceMax", axes_as_input=False),
    Op.REDUCE_MIN: _reduce("ReduceMin", axes_as_input=False),
    Op.REDUCE_PROD: _reduce("ReduceProd", axes_as_input=False),
    Op.ARGMAX: _arg("ArgMax"),
    Op.ARGMIN: _arg("ArgMin"),
    Op.DEQUANTIZE: _dequantize,
    Op.QUANTIZE: _quantize,
    Op.EQUAL: _compare("Equal"),
    Op.NOT_EQUAL: _compare("Equal", negate=True),
    Op.LESS: _compare("Less"),
    Op.LESS_EQUAL: _compare("LessOrEqual"),
    Op.GREATER: _compare("Greater"),
    Op.GREATER_EQUAL: _compare("GreaterOrEqual"),
    Op.MAXIMUM: _elementwise("Max", 2),
    Op.MINIMUM: _elementwise("Min", 2),
    Op.POW: _elementwise("Pow", 2),
    Op.LOGICAL_AND: _elementwise("And", 2),
    Op.LOGICAL_OR: _elementwise("Or", 2),
    Op.LOGICAL_NOT: _elementwise("Not", 1),
    Op.SELECT: _select,
    Op.SLICE: _slice,
    Op.STRIDED_SLICE: _strided_slice,
    Op.RESIZE_BILINEAR: translate_resize,
    Op.RESIZE_NEAREST_NEIGHBOR: translate_resize,
    Op.TILE: _tile,
    Op.SPLIT: _split,
    Op.LOG_SOFTMAX: _log_softmax,
    Op.CAST: _cast,
    Op.PRELU: _prelu,
}
