"""NNAPI operation -> TFLite operators: the LiteRT driver's translation table.

NNAPI's CPU semantics were taken from TFLite's kernels, so most operations
map one to one: same NHWC layout, same filter layouts ([out, h, w, in];
depthwise [1, h, w, in * multiplier]), same fused activation codes (NONE,
RELU, RELU1 = RELU_N1_TO_1, RELU6), same quantization (uint8 asymmetric,
int8, per-channel int8 filters, int32 biases of scale in * filter).  What
differs, and how each handler bridges it:

- **Parameters**: NNAPI passes them as scalar operands; TFLite wants options
  or constant tensors.  They must be constants (``ModelView.scalar``): a
  parameter fed at execution time cannot be translated.
- **Layout**: NCHW operations (the layout flag) are wrapped in TRANSPOSE
  operators to NHWC and back.
- **Padding**: TFLite knows SAME and VALID only.  Explicit pads that equal
  SAME's or are zero map onto them; other pads of a convolution become a PAD
  operator (which pads quantized tensors with their zero point, as NNAPI
  does); other pads of a pooling window are unsupported (NNAPI excludes
  padding from averages, a PAD would not).
- **Axes**: SOFTMAX, L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION work
  on the last axis only in TFLite; another axis is unsupported.
- **Quantization restrictions** TFLite's kernels assume without checking
  (its quantization spec), found by running the corpus through it: int8
  weights are symmetric (a QUANT8_ASYMM_SIGNED filter with a nonzero zero
  point would be read as if it were 0), and MAXIMUM, MINIMUM and SELECT
  copy quantized values without rescaling (inputs and output must share
  scale and zero point).  Models outside them are unsupported here.

A handler raises ``Unsupported`` for anything it cannot express exactly.
Whether the TFLite kernels then accept the operand types is not decided
here but by the engine itself (``translator.probe``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from drivers.engine.nnapi import (
    TO_NCHW,
    TO_NHWC,
    ModelView,
    Unsupported,
    Window,
    conv_window,
    implicit_padding,
    layout_flag,
    pool_window,
)
from drivers.litert.flatbuffer import FlatbufferBuilder
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op
from vts.hal.types import Operation


def _tflite_type(operand_type: T) -> int:
    """The TFLite type an operand computes in (float16 computes in float32: see ``Graph.interface``)."""
    from drivers.litert.flatbuffer import schema

    tt = schema().TensorType
    table = {T.TENSOR_FLOAT32: tt.FLOAT32, T.TENSOR_FLOAT16: tt.FLOAT32, T.TENSOR_INT32: tt.INT32,
             T.TENSOR_QUANT8_ASYMM: tt.UINT8, T.TENSOR_QUANT8_ASYMM_SIGNED: tt.INT8,
             T.TENSOR_QUANT8_SYMM: tt.INT8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL: tt.INT8,
             T.TENSOR_QUANT16_SYMM: tt.INT16, T.TENSOR_BOOL8: tt.BOOL}
    if operand_type not in table:
        raise Unsupported(f"operand type {operand_type.name} has no TFLite tensor type")
    return table[operand_type]


QUANTIZED = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM)


class Graph:
    """One TFLite subgraph being built from (part of) an NNAPI model."""

    def __init__(self, view: ModelView) -> None:
        self.view = view
        self.fb = FlatbufferBuilder()
        self.tensor_of: dict[int, int] = {}

    # -- tensors --------------------------------------------------------------

    def quantization(self, index: int) -> object | None:
        operand = self.view.operand(index)
        kind = T(operand.type)
        channel = self.view.channel_quant(index)
        if channel is not None:
            return self.fb.quantization(channel.scales, [0] * len(channel.scales), channel.channel_dim)
        if kind in QUANTIZED or (kind == T.TENSOR_INT32 and operand.scale > 0):
            return self.fb.quantization([operand.scale], [operand.zero_point])
        return None

    def t(self, index: int) -> int:
        """The TFLite tensor of NNAPI operand ``index`` (created on first use; constants carry their data)."""
        if index not in self.tensor_of:
            kind = self.view.type_of(index)
            data = self.view.constant(index) if self.view.is_constant(index) else None
            if data is not None and kind == T.TENSOR_FLOAT16:
                data = data.astype(np.float32)
            self.tensor_of[index] = self.fb.tensor(self.view.dims(index), _tflite_type(kind),
                                                   self.quantization(index), data, name=f"operand{index}")
        return self.tensor_of[index]

    def like(self, index: int, shape: Sequence[int]) -> int:
        """A fresh intermediate tensor with operand ``index``'s type and quantization."""
        return self.fb.tensor(shape, _tflite_type(self.view.type_of(index)), self.quantization(index))

    def const(self, value: np.ndarray, quantization: object | None = None) -> int:
        return self.fb.constant(value, quantization)

    def emit(self, name: str, inputs: Sequence[int], outputs: Sequence[int], options: str | None = None,
             **fields: object) -> None:
        self.fb.operator(name, inputs, outputs, options, **fields)

    def interface(self, inputs: Sequence[int], outputs: Sequence[int]) -> tuple[list[int], list[int]]:
        """The subgraph's input and output tensors for NNAPI operands ``inputs`` and ``outputs``.

        TFLite's kernels have almost no float16 support, so float16 operands
        compute in float32: a float16 input is widened by a DEQUANTIZE at the
        start (TFLite's float16 -> float32 conversion) and a float16 output
        rounded back by a CAST at the end.  That is more precise than float16
        arithmetic, which the HAL's float16 tolerance allows.
        """
        fb = self.fb
        widen, io_inputs, io_outputs = [], [], []
        for index in inputs:
            if self.view.type_of(index) == T.TENSOR_FLOAT16:
                half = fb.tensor(self.view.dims(index), fb.fb.TensorType.FLOAT16, name=f"operand{index}_f16")
                widen.append((half, self.t(index)))
                io_inputs.append(half)
            else:
                io_inputs.append(self.t(index))
        for index in outputs:
            if self.view.type_of(index) == T.TENSOR_FLOAT16:
                half = fb.tensor(self.view.dims(index), fb.fb.TensorType.FLOAT16, name=f"operand{index}_f16")
                self.emit("CAST", [self.t(index)], [half])
                io_outputs.append(half)
            else:
                io_outputs.append(self.t(index))
        body = fb.operators
        fb.operators = []
        for half, full in widen:
            self.emit("DEQUANTIZE", [half], [full])
        fb.operators.extend(body)
        return io_inputs, io_outputs

    def finish(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        """The flatbuffer with NNAPI operands ``inputs`` and ``outputs`` as the subgraph's interface."""
        return self.fb.finish(*self.interface(inputs, outputs))

    # -- layouts --------------------------------------------------------------

    def nhwc_input(self, index: int, nchw: bool) -> int:
        if not nchw:
            return self.t(index)
        dims = self.view.dims(index)
        out = self.like(index, [dims[p] for p in TO_NHWC] if len(dims) == 4 else dims)
        self.emit("TRANSPOSE", [self.t(index), self.const(np.array(TO_NHWC, np.int32))], [out])
        return out

    def nhwc_output(self, index: int, nchw: bool) -> tuple[int, Callable[[], None]]:
        """(tensor the NHWC operator writes, call after emitting it to transpose back into the operand)."""
        if not nchw:
            return self.t(index), lambda: None
        dims = self.view.dims(index)
        out = self.like(index, [dims[p] for p in TO_NHWC] if len(dims) == 4 else dims)

        def back() -> None:
            self.emit("TRANSPOSE", [out, self.const(np.array(TO_NCHW, np.int32))], [self.t(index)])

        return out, back


Handler = Callable[[Graph, Operation], None]


def _int_scalar(g: Graph, index: int) -> int:
    return int(g.view.scalar(index))


# ---------------------------------------------------------------------------- elementwise


def _binary_fused(name: str) -> Handler:
    """ADD/SUB/MUL/DIV: (a, b, fused activation); TFLite broadcasts the same way."""
    def handler(g: Graph, op: Operation) -> None:
        a, b, act = op.inputs[:3]
        g.emit(name, [g.t(a), g.t(b)], [g.t(op.outputs[0])], f"{name.capitalize()}Options",
               fusedActivationFunction=_int_scalar(g, act))
    return handler


def _symmetric_weights(g: Graph, index: int) -> None:
    operand = g.view.operand(index)
    if T(operand.type) == T.TENSOR_QUANT8_ASYMM_SIGNED and operand.zero_point != 0:
        raise Unsupported(f"int8 weights with zero point {operand.zero_point} (TFLite's int8 kernels take "
                          "symmetric weights and would ignore it)")


def _same_quantization(g: Graph, indexes: Sequence[int], what: str) -> None:
    operands = [g.view.operand(i) for i in indexes]
    if T(operands[0].type) in QUANTIZED and len({(o.scale, o.zero_point) for o in operands}) > 1:
        raise Unsupported(f"{what} of quantized operands with different scales or zero points "
                          "(TFLite copies the integers without rescaling)")


def _copying(name: str, data_inputs: slice) -> Handler:
    """MAXIMUM / MINIMUM / SELECT: the chosen integers are copied, so every data operand must share quantization."""
    def handler(g: Graph, op: Operation) -> None:
        _same_quantization(g, [*op.inputs[data_inputs], op.outputs[0]], name)
        g.emit(name, [g.t(i) for i in op.inputs], [g.t(o) for o in op.outputs])
    return handler


def _direct(name: str, tensor_inputs: int | None = None) -> Handler:
    """Operations whose NNAPI tensor inputs are the TFLite operator's inputs, in order, without options."""
    def handler(g: Graph, op: Operation) -> None:
        inputs = op.inputs if tensor_inputs is None else op.inputs[:tensor_inputs]
        g.emit(name, [g.t(i) for i in inputs], [g.t(o) for o in op.outputs])
    return handler


# ---------------------------------------------------------------------------- convolutions and pooling


def _tflite_padding(g: Graph, window_pads: tuple[int, int, int, int], same: tuple[int, int, int, int]) -> int | None:
    padding = g.fb.fb.Padding
    if window_pads == same:
        return padding.SAME
    if not any(window_pads):
        return padding.VALID
    return None


def _conv(g: Graph, op: Operation) -> None:
    """CONV_2D and DEPTHWISE_CONV_2D (GROUPED_CONV_2D has its own argument order)."""
    window, multiplier = conv_window(g.view, op)
    x, w, b = op.inputs[:3]
    _symmetric_weights(g, w)
    dims = g.view.dims(x)
    in_h, in_w = (dims[2], dims[3]) if window.nchw else (dims[1], dims[2])
    source = g.nhwc_input(x, window.nchw)
    padding = _tflite_padding(g, window.pads, window.same_pads(in_h, in_w))
    if padding is None:  # pads TFLite cannot name: pad explicitly, then convolve VALID
        top, bottom, left, right = window.pads
        nhwc = [dims[p] for p in TO_NHWC] if window.nchw else dims
        padded = g.like(x, [nhwc[0], nhwc[1] + top + bottom, nhwc[2] + left + right, nhwc[3]])
        g.emit("PAD", [source, g.const(np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))], [padded])
        source, padding = padded, g.fb.fb.Padding.VALID
    out, back = g.nhwc_output(op.outputs[0], window.nchw)
    common = dict(padding=padding, strideH=window.strides[0], strideW=window.strides[1],
                  dilationHFactor=window.dilations[0], dilationWFactor=window.dilations[1],
                  fusedActivationFunction=window.activation)
    if op.type == Op.DEPTHWISE_CONV_2D:
        g.emit("DEPTHWISE_CONV_2D", [source, g.t(w), g.t(b)], [out], "DepthwiseConv2DOptions",
               depthMultiplier=multiplier, **common)
    else:
        g.emit("CONV_2D", [source, g.t(w), g.t(b)], [out], "Conv2DOptions", **common)
    back()


def _grouped_conv(g: Graph, op: Operation) -> None:
    """GROUPED_CONV_2D: TFLite's CONV_2D takes a filter of [out, h, w, in / groups] as grouped.

    Arguments: explicit (x, w, b, 4 pads, 2 strides, groups, act, layout: 12)
    or implicit (x, w, b, scheme, 2 strides, groups, act, layout: 9).
    """
    args = op.inputs
    x, w, b = args[:3]
    _symmetric_weights(g, w)
    if len(args) == 12:
        left, right, top, bottom, stride_w, stride_h = (_int_scalar(g, i) for i in args[3:9])
        activation, nchw = _int_scalar(g, args[10]), bool(g.view.scalar(args[11]))
    else:
        scheme, stride_w, stride_h = (_int_scalar(g, i) for i in args[3:6])
        activation, nchw = _int_scalar(g, args[7]), bool(g.view.scalar(args[8]))
    kernel = tuple(g.view.dims(w)[1:3])
    dims = g.view.dims(x)
    in_h, in_w = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
    if len(args) != 12:
        top, bottom = implicit_padding(in_h, stride_h, kernel[0], 1, scheme)
        left, right = implicit_padding(in_w, stride_w, kernel[1], 1, scheme)
    window = Window((top, bottom, left, right), (stride_h, stride_w), (1, 1), kernel, activation, nchw)
    padding = _tflite_padding(g, window.pads, window.same_pads(in_h, in_w))
    if padding is None:
        raise Unsupported("GROUPED_CONV_2D with explicit padding that is neither SAME nor VALID")
    source = g.nhwc_input(x, nchw)
    out, back = g.nhwc_output(op.outputs[0], nchw)
    g.emit("CONV_2D", [source, g.t(w), g.t(b)], [out], "Conv2DOptions", padding=padding, strideH=stride_h,
           strideW=stride_w, dilationHFactor=1, dilationWFactor=1, fusedActivationFunction=activation)
    back()


def _pool(name: str) -> Handler:
    def handler(g: Graph, op: Operation) -> None:
        window = pool_window(g.view, op)
        x = op.inputs[0]
        dims = g.view.dims(x)
        in_h, in_w = (dims[2], dims[3]) if window.nchw else (dims[1], dims[2])
        padding = _tflite_padding(g, window.pads, window.same_pads(in_h, in_w))
        if padding is None:
            raise Unsupported(f"{name} with explicit padding that is neither SAME nor VALID "
                              "(TFLite would count the padding)")
        source = g.nhwc_input(x, window.nchw)
        out, back = g.nhwc_output(op.outputs[0], window.nchw)
        g.emit(name, [source], [out], "Pool2DOptions", padding=padding, strideH=window.strides[0],
               strideW=window.strides[1], filterHeight=window.kernel[0], filterWidth=window.kernel[1],
               fusedActivationFunction=window.activation)
        back()
    return handler


def _fully_connected(g: Graph, op: Operation) -> None:
    x, w, b, act = op.inputs
    _symmetric_weights(g, w)
    bias = -1 if g.view.is_omitted(b) else g.t(b)
    g.emit("FULLY_CONNECTED", [g.t(x), g.t(w), bias], [g.t(op.outputs[0])], "FullyConnectedOptions",
           fusedActivationFunction=_int_scalar(g, act), keepNumDims=False)


# ---------------------------------------------------------------------------- activations and normalisation


def _last_axis(g: Graph, op: Operation, position: int, what: str) -> None:
    rank = len(g.view.dims(op.inputs[0]))
    if len(op.inputs) > position and _int_scalar(g, op.inputs[position]) not in (-1, rank - 1):
        raise Unsupported(f"{what} over an axis other than the last (TFLite normalises the last axis)")


def _softmax(g: Graph, op: Operation) -> None:
    _last_axis(g, op, 2, "SOFTMAX")
    g.emit("SOFTMAX", [g.t(op.inputs[0])], [g.t(op.outputs[0])], "SoftmaxOptions",
           beta=float(g.view.scalar(op.inputs[1])))


def _log_softmax(g: Graph, op: Operation) -> None:
    _last_axis(g, op, 2, "LOG_SOFTMAX")
    if float(g.view.scalar(op.inputs[1])) != 1.0:
        raise Unsupported("LOG_SOFTMAX with beta other than 1 (TFLite has no beta)")
    g.emit("LOG_SOFTMAX", [g.t(op.inputs[0])], [g.t(op.outputs[0])])


def _l2_normalization(g: Graph, op: Operation) -> None:
    _last_axis(g, op, 1, "L2_NORMALIZATION")
    g.emit("L2_NORMALIZATION", [g.t(op.inputs[0])], [g.t(op.outputs[0])], "L2NormOptions",
           fusedActivationFunction=0)


def _lrn(g: Graph, op: Operation) -> None:
    _last_axis(g, op, 5, "LOCAL_RESPONSE_NORMALIZATION")
    radius, bias, alpha, beta = (g.view.scalar(i) for i in op.inputs[1:5])
    g.emit("LOCAL_RESPONSE_NORMALIZATION", [g.t(op.inputs[0])], [g.t(op.outputs[0])],
           "LocalResponseNormalizationOptions", radius=int(radius), bias=float(bias), alpha=float(alpha),
           beta=float(beta))


# ---------------------------------------------------------------------------- shapes and data movement


def _reshape(g: Graph, op: Operation) -> None:
    x, shape = op.inputs
    new_shape = [int(d) for d in g.view.constant(shape).reshape(-1)]
    g.emit("RESHAPE", [g.t(x), g.t(shape)], [g.t(op.outputs[0])], "ReshapeOptions", newShape=new_shape)


def _concatenation(g: Graph, op: Operation) -> None:
    *tensors, axis = op.inputs
    g.emit("CONCATENATION", [g.t(i) for i in tensors], [g.t(op.outputs[0])], "ConcatenationOptions",
           axis=_int_scalar(g, axis), fusedActivationFunction=0)


def _transpose(g: Graph, op: Operation) -> None:
    x = op.inputs[0]
    if len(op.inputs) < 2 or g.view.is_omitted(op.inputs[1]):
        perm = g.const(np.arange(len(g.view.dims(x)))[::-1].astype(np.int32))
    elif not g.view.is_constant(op.inputs[1]):
        raise Unsupported("permutation fed at execution time (it may be omitted there; TFLite needs one)")
    else:
        perm = g.t(op.inputs[1])
    g.emit("TRANSPOSE", [g.t(x), perm], [g.t(op.outputs[0])])


def _pad_v2(g: Graph, op: Operation) -> None:
    """PAD_V2: the pad value is a scalar operand; TFLite's PADV2 wants a tensor of the input's type."""
    x, paddings, value = op.inputs
    kind = g.view.type_of(x)
    dtype = {T.TENSOR_FLOAT32: np.float32, T.TENSOR_FLOAT16: np.float32, T.TENSOR_QUANT8_ASYMM: np.uint8,
             T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}.get(kind)
    if dtype is None:
        raise Unsupported(f"PAD_V2 of {kind.name}")
    pad = g.const(np.array([g.view.scalar(value)], dtype), g.quantization(x))
    g.emit("PADV2", [g.t(x), g.t(paddings), pad], [g.t(op.outputs[0])])


def _block(name: str, options: str) -> Handler:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH: (x, block size, [layout])."""
    def handler(g: Graph, op: Operation) -> None:
        nchw = layout_flag(g.view, op, 2)
        source = g.nhwc_input(op.inputs[0], nchw)
        out, back = g.nhwc_output(op.outputs[0], nchw)
        g.emit(name, [source], [out], options, blockSize=_int_scalar(g, op.inputs[1]))
        back()
    return handler


def _space_to_batch(g: Graph, op: Operation) -> None:
    nchw = layout_flag(g.view, op, 3)
    source = g.nhwc_input(op.inputs[0], nchw)
    out, back = g.nhwc_output(op.outputs[0], nchw)
    g.emit("SPACE_TO_BATCH_ND", [source, g.t(op.inputs[1]), g.t(op.inputs[2])], [out])
    back()


def _batch_to_space(g: Graph, op: Operation) -> None:
    nchw = layout_flag(g.view, op, 2)
    source = g.nhwc_input(op.inputs[0], nchw)
    out, back = g.nhwc_output(op.outputs[0], nchw)
    crops = g.const(np.zeros((2, 2), np.int32))
    g.emit("BATCH_TO_SPACE_ND", [source, g.t(op.inputs[1]), crops], [out])
    back()


def _resize(name: str, options: str) -> Handler:
    """RESIZE_*: (x, width, height | width scale, height scale, [layout, align_corners, half_pixel_centers])."""
    def handler(g: Graph, op: Operation) -> None:
        x, a, b = op.inputs[:3]
        nchw = layout_flag(g.view, op, 3)
        dims = g.view.dims(x)
        in_h, in_w = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
        if g.view.type_of(a) == T.INT32:
            width, height = _int_scalar(g, a), _int_scalar(g, b)
        else:  # scales: the output size is floor(input size * scale)
            width, height = int(in_w * float(g.view.scalar(a))), int(in_h * float(g.view.scalar(b)))
        align = bool(g.view.optional_scalar(op, 4, False))
        half = bool(g.view.optional_scalar(op, 5, False))
        source = g.nhwc_input(x, nchw)
        out, back = g.nhwc_output(op.outputs[0], nchw)
        g.emit(name, [source, g.const(np.array([height, width], np.int32))], [out], options,
               alignCorners=align, halfPixelCenters=half)
        back()
    return handler


def _squeeze(g: Graph, op: Operation) -> None:
    axes: list[int] = []
    if len(op.inputs) > 1 and not g.view.is_omitted(op.inputs[1]):
        axes = [int(a) for a in g.view.constant(op.inputs[1]).reshape(-1)]
    g.emit("SQUEEZE", [g.t(op.inputs[0])], [g.t(op.outputs[0])], "SqueezeOptions", squeezeDims=axes)


def _expand_dims(g: Graph, op: Operation) -> None:
    axis = g.const(np.array([_int_scalar(g, op.inputs[1])], np.int32))
    g.emit("EXPAND_DIMS", [g.t(op.inputs[0]), axis], [g.t(op.outputs[0])])


def _strided_slice(g: Graph, op: Operation) -> None:
    x, begin, end, strides, begin_mask, end_mask, shrink = op.inputs
    g.emit("STRIDED_SLICE", [g.t(x), g.t(begin), g.t(end), g.t(strides)], [g.t(op.outputs[0])],
           "StridedSliceOptions", beginMask=_int_scalar(g, begin_mask), endMask=_int_scalar(g, end_mask),
           shrinkAxisMask=_int_scalar(g, shrink))


def _gather(g: Graph, op: Operation) -> None:
    x, axis, indices = op.inputs
    g.emit("GATHER", [g.t(x), g.t(indices)], [g.t(op.outputs[0])], "GatherOptions", axis=_int_scalar(g, axis))


def _split(g: Graph, op: Operation) -> None:
    x, axis, count = op.inputs
    g.emit("SPLIT", [g.const(np.array(_int_scalar(g, axis), np.int32)), g.t(x)], [g.t(o) for o in op.outputs],
           "SplitOptions", numSplits=_int_scalar(g, count))


def _reduce(name: str) -> Handler:
    """MEAN (keep_dims INT32) and REDUCE_* (keep_dims BOOL): (x, axes, keep_dims)."""
    def handler(g: Graph, op: Operation) -> None:
        x, axes, keep = op.inputs
        g.emit(name, [g.t(x), g.t(axes)], [g.t(op.outputs[0])], "ReducerOptions", keepDims=bool(g.view.scalar(keep)))
    return handler


def _arg(name: str) -> Handler:
    def handler(g: Graph, op: Operation) -> None:
        x, axis = op.inputs
        g.emit(name, [g.t(x), g.const(np.array([_int_scalar(g, axis)], np.int32))], [g.t(op.outputs[0])],
               "ArgMaxOptions" if name == "ARG_MAX" else "ArgMinOptions", outputType=g.fb.fb.TensorType.INT32)
    return handler


def _topk(g: Graph, op: Operation) -> None:
    x, k = op.inputs
    g.emit("TOPK_V2", [g.t(x), g.const(np.array(_int_scalar(g, k), np.int32))], [g.t(o) for o in op.outputs])


def _channel_free(name: str) -> Handler:
    """Elementwise activations: (x) -> y."""
    return _direct(name, 1)


HANDLERS: dict[Op, Handler] = {
    Op.ADD: _binary_fused("ADD"),
    Op.SUB: _binary_fused("SUB"),
    Op.MUL: _binary_fused("MUL"),
    Op.DIV: _binary_fused("DIV"),
    Op.CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _conv,
    Op.GROUPED_CONV_2D: _grouped_conv,
    Op.FULLY_CONNECTED: _fully_connected,
    Op.AVERAGE_POOL_2D: _pool("AVERAGE_POOL_2D"),
    Op.MAX_POOL_2D: _pool("MAX_POOL_2D"),
    Op.L2_POOL_2D: _pool("L2_POOL_2D"),
    Op.RELU: _channel_free("RELU"),
    Op.RELU1: _channel_free("RELU_N1_TO_1"),
    Op.RELU6: _channel_free("RELU6"),
    Op.LOGISTIC: _channel_free("LOGISTIC"),
    Op.TANH: _channel_free("TANH"),
    Op.SOFTMAX: _softmax,
    Op.LOG_SOFTMAX: _log_softmax,
    Op.L2_NORMALIZATION: _l2_normalization,
    Op.LOCAL_RESPONSE_NORMALIZATION: _lrn,
    Op.RESHAPE: _reshape,
    Op.CONCATENATION: _concatenation,
    Op.TRANSPOSE: _transpose,
    Op.PAD: _direct("PAD"),
    Op.PAD_V2: _pad_v2,
    Op.DEPTH_TO_SPACE: _block("DEPTH_TO_SPACE", "DepthToSpaceOptions"),
    Op.SPACE_TO_DEPTH: _block("SPACE_TO_DEPTH", "SpaceToDepthOptions"),
    Op.SPACE_TO_BATCH_ND: _space_to_batch,
    Op.BATCH_TO_SPACE_ND: _batch_to_space,
    Op.RESIZE_BILINEAR: _resize("RESIZE_BILINEAR", "ResizeBilinearOptions"),
    Op.RESIZE_NEAREST_NEIGHBOR: _resize("RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions"),
    Op.SQUEEZE: _squeeze,
    Op.EXPAND_DIMS: _expand_dims,
    Op.STRIDED_SLICE: _strided_slice,
    Op.SLICE: _direct("SLICE"),
    Op.TILE: _direct("TILE"),
    Op.GATHER: _gather,
    Op.SPLIT: _split,
    Op.MEAN: _reduce("MEAN"),
    Op.REDUCE_SUM: _reduce("SUM"),
    Op.REDUCE_MAX: _reduce("REDUCE_MAX"),
    Op.REDUCE_MIN: _reduce("REDUCE_MIN"),
    Op.REDUCE_PROD: _reduce("REDUCE_PROD"),
    Op.REDUCE_ANY: _reduce("REDUCE_ANY"),
    Op.REDUCE_ALL: _reduce("REDUCE_ALL"),
    Op.ARGMAX: _arg("ARG_MAX"),
    Op.ARGMIN: _arg("ARG_MIN"),
    Op.TOPK_V2: _topk,
    Op.DEQUANTIZE: _direct("DEQUANTIZE"),
    Op.QUANTIZE: _direct("QUANTIZE"),
    Op.CAST: _direct("CAST"),
    Op.FLOOR: _direct("FLOOR"),
    Op.EXP: _direct("EXP"),
    Op.LOG: _direct("LOG"),
    Op.ABS: _direct("ABS"),
    Op.SQRT: _direct("SQRT"),
    Op.RSQRT: _direct("RSQRT"),
    Op.SIN: _direct("SIN"),
    Op.NEG: _direct("NEG"),
    Op.LOGICAL_NOT: _direct("LOGICAL_NOT"),
    Op.LOGICAL_AND: _direct("LOGICAL_AND"),
    Op.LOGICAL_OR: _direct("LOGICAL_OR"),
    Op.MAXIMUM: _copying("MAXIMUM", slice(0, 2)),
    Op.MINIMUM: _copying("MINIMUM", slice(0, 2)),
    Op.POW: _direct("POW"),
    Op.PRELU: _direct("PRELU"),
    Op.SELECT: _copying("SELECT_V2", slice(1, 3)),
    Op.EQUAL: _direct("EQUAL"),
    Op.NOT_EQUAL: _direct("NOT_EQUAL"),
    Op.LESS: _direct("LESS"),
    Op.LESS_EQUAL: _direct("LESS_EQUAL"),
    Op.GREATER: _direct("GREATER"),
    Op.GREATER_EQUAL: _direct("GREATER_EQUAL"),
}
