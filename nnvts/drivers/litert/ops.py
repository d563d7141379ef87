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
  (its quantization spec), found by running the corpus through it: its
  int8 convolutions read weights as symmetric (a QUANT8_ASYMM_SIGNED filter
  with a nonzero zero point would be read as if it were 0), its uint8 ones
  take no per-channel filters and no groups, and MAXIMUM, MINIMUM and SELECT
  copy quantized values without rescaling.  Convolutions switch kernel by
  exact requantization (``_kernel_type``); the copying operations are
  unsupported unless inputs and output share scale and zero point.

A handler raises ``Unsupported`` for anything it cannot express exactly.
Whether the TFLite kernels then accept the operand types is not decided
here but by the engine itself (``translator.probe``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nnvts.drivers.engine.nnapi import (
    TO_NCHW,
    TO_NHWC,
    ModelView,
    Unsupported,
    Window,
    conv_window,
    implicit_padding,
    layout_flag,
    pool_window,
    resize_arguments,
    transpose_conv_window,
)
from nnvts.drivers.litert.flatbuffer import FlatbufferBuilder
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op
from vts.hal.types import Operation


def _tflite_type(operand_type: T) -> int:
    """The TFLite type an operand computes in (float16 computes in float32: see ``Graph.interface``)."""
    from nnvts.drivers.litert.flatbuffer import schema

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


def _rsqrt(g: Graph, op: Operation) -> None:
    """RSQRT, float only: TFLite's quantized RSQRT takes int8 and not uint8, and NNAPI couples the two
    encodings (AIDL VTS QuantizationCouplingTest: refuse QUANT8_ASYMM, refuse its signed twin too)."""
    if g.view.type_of(op.inputs[0]) in QUANTIZED:
        raise Unsupported("quantized RSQRT: TFLite has it for int8 only, and both 8-bit encodings go together")
    _direct("RSQRT")(g, op)


# ---------------------------------------------------------------------------- convolutions and pooling


def _tflite_padding(g: Graph, window_pads: tuple[int, int, int, int], same: tuple[int, int, int, int]) -> int | None:
    padding = g.fb.fb.Padding
    if window_pads == same:
        return padding.SAME
    if not any(window_pads):
        return padding.VALID
    return None


def _kernel_type(g: Graph, x: int, w: int, grouped: bool) -> T:
    """The 8-bit type a quantized convolution runs in on TFLite (the input's own, or the other by a detour).

    TFLite's uint8 convolutions take uint8 filters only (zero point honoured)
    and it has no uint8 grouped kernel; its int8 kernels take per-channel
    filters and groups but ignore a filter zero point.  The two encodings
    convert exactly into each other by a QUANTIZE (same scale, zero point
    +- 128), so a convolution the input's kernel cannot run exactly runs as
    QUANTIZE, the other kernel, QUANTIZE back: same integers, other kernel.
    This is also what keeps QUANT8_ASYMM and QUANT8_ASYMM_SIGNED supported
    alike, as the HAL requires (the quantization_coupling family checks it).
    """
    kind, filter_kind = g.view.type_of(x), g.view.type_of(w)
    if kind == T.TENSOR_QUANT8_ASYMM and (filter_kind == T.TENSOR_QUANT8_SYMM_PER_CHANNEL or grouped):
        if filter_kind == T.TENSOR_QUANT8_ASYMM and g.view.operand(w).zero_point != 128:
            raise Unsupported("uint8 grouped convolution with an asymmetric filter (TFLite has no uint8 grouped "
                              "kernel and its int8 kernel takes symmetric filters only)")
        return T.TENSOR_QUANT8_ASYMM_SIGNED
    if kind == T.TENSOR_QUANT8_ASYMM_SIGNED and filter_kind == T.TENSOR_QUANT8_ASYMM_SIGNED \
            and g.view.operand(w).zero_point != 0:
        if grouped:
            raise Unsupported("int8 grouped convolution with an asymmetric filter (TFLite's int8 kernel ignores "
                              "the filter zero point and it has no uint8 grouped kernel)")
        return T.TENSOR_QUANT8_ASYMM
    return kind


_SHIFT = {T.TENSOR_QUANT8_ASYMM: 128, T.TENSOR_QUANT8_ASYMM_SIGNED: -128}


def _recoded(g: Graph, tensor: int, index: int, shape: Sequence[int], kind: T) -> int:
    """A copy of 8-bit ``tensor`` (quantized like operand ``index``) in the other encoding ``kind``."""
    operand = g.view.operand(index)
    out = g.fb.tensor(shape, _tflite_type(kind), g.fb.quantization([operand.scale],
                                                                   [operand.zero_point + _SHIFT[kind]]))
    g.emit("QUANTIZE", [tensor], [out])
    return out


def _recoded_filter(g: Graph, w: int, kind: T) -> int:
    """Filter ``w`` in encoding ``kind``: shifted here when constant, by a QUANTIZE when fed at execution time.

    Per-channel filters are int8 already and stay as they are.
    """
    if g.view.type_of(w) == T.TENSOR_QUANT8_SYMM_PER_CHANNEL or g.view.type_of(w) == kind:
        return g.t(w)
    if not g.view.is_constant(w):
        return _recoded(g, g.t(w), w, g.view.dims(w), kind)
    operand = g.view.operand(w)
    shifted = g.view.constant(w).astype(np.int16) + _SHIFT[kind]
    value = shifted.astype(np.uint8 if kind == T.TENSOR_QUANT8_ASYMM else np.int8)
    return g.const(value, g.fb.quantization([operand.scale], [operand.zero_point + _SHIFT[kind]]))


def _convolve(g: Graph, op: Operation, window: Window, multiplier: int, grouped: bool = False) -> None:
    """CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D once their windows are decoded."""
    x, w, b = op.inputs[:3]
    kernel_type = _kernel_type(g, x, w, grouped) if g.view.type_of(x) in _SHIFT else None
    detour = kernel_type is not None and kernel_type != g.view.type_of(x)
    dims = g.view.dims(x)
    in_h, in_w = (dims[2], dims[3]) if window.nchw else (dims[1], dims[2])
    nhwc = [dims[p] for p in TO_NHWC] if window.nchw else dims
    source = g.nhwc_input(x, window.nchw)
    padding = _tflite_padding(g, window.pads, window.same_pads(in_h, in_w))
    if padding is None:  # pads TFLite cannot name: pad explicitly (with the zero point), then convolve VALID
        top, bottom, left, right = window.pads
        nhwc = [nhwc[0], nhwc[1] + top + bottom, nhwc[2] + left + right, nhwc[3]]
        padded = g.like(x, nhwc)
        g.emit("PAD", [source, g.const(np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))], [padded])
        source, padding = padded, g.fb.fb.Padding.VALID
    out, back = g.nhwc_output(op.outputs[0], window.nchw)
    weights = g.t(w)
    target = out
    if detour:
        assert kernel_type is not None
        source = _recoded(g, source, x, nhwc, kernel_type)
        weights = _recoded_filter(g, w, kernel_type)
        output = g.view.operand(op.outputs[0])
        target = g.fb.tensor(g.fb.tensors[out].shape, _tflite_type(kernel_type),
                             g.fb.quantization([output.scale], [output.zero_point + _SHIFT[kernel_type]]))
    common = dict(padding=padding, strideH=window.strides[0], strideW=window.strides[1],
                  dilationHFactor=window.dilations[0], dilationWFactor=window.dilations[1],
                  fusedActivationFunction=window.activation)
    if op.type == Op.DEPTHWISE_CONV_2D:
        g.emit("DEPTHWISE_CONV_2D", [source, weights, g.t(b)], [target], "DepthwiseConv2DOptions",
               depthMultiplier=multiplier, **common)
    else:
        g.emit("CONV_2D", [source, weights, g.t(b)], [target], "Conv2DOptions", **common)
    if detour:
        g.emit("QUANTIZE", [target], [out])
    back()


def _conv(g: Graph, op: Operation) -> None:
    """CONV_2D and DEPTHWISE_CONV_2D (the filter layouts are TFLite's)."""
    window, multiplier = conv_window(g.view, op)
    _convolve(g, op, window, multiplier)


def _grouped_conv(g: Graph, op: Operation) -> None:
    """GROUPED_CONV_2D: TFLite's CONV_2D takes a filter of [out, h, w, in / groups] as grouped.

    Arguments: explicit (x, w, b, 4 pads, 2 strides, groups, act, layout: 12)
    or implicit (x, w, b, scheme, 2 strides, groups, act, layout: 9).
    """
    args = op.inputs
    x, w = args[:2]
    if len(args) == 12:
        left, right, top, bottom, stride_w, stride_h = (_int_scalar(g, i) for i in args[3:9])
        activation, nchw = _int_scalar(g, args[10]), bool(g.view.scalar(args[11]))
    else:
        scheme, stride_w, stride_h = (_int_scalar(g, i) for i in args[3:6])
        activation, nchw = _int_scalar(g, args[7]), bool(g.view.scalar(args[8]))
    kernel = (g.view.dims(w)[1], g.view.dims(w)[2])
    if len(args) != 12:
        dims = g.view.dims(x)
        in_h, in_w = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
        top, bottom = implicit_padding(in_h, stride_h, kernel[0], 1, scheme)
        left, right = implicit_padding(in_w, stride_w, kernel[1], 1, scheme)
    window = Window((top, bottom, left, right), (stride_h, stride_w), (1, 1), kernel, activation, nchw)
    _convolve(g, op, window, 1, grouped=True)


def _transpose_conv(g: Graph, op: Operation) -> None:
    """TRANSPOSE_CONV_2D: TFLite's TRANSPOSE_CONV (inputs output shape, filter, input, bias; same filter layout).

    TFLite derives SAME padding from the output size like Android, but
    floors the excess at zero where Android lets the tail go negative; such
    paddings, and any other explicit ones, are unsupported.
    """
    window, (out_h, out_w) = transpose_conv_window(g.view, op)
    x, w, b = op.inputs[:3]
    kernel_type = _kernel_type(g, x, w, grouped=False) if g.view.type_of(x) in _SHIFT else None
    detour = kernel_type is not None and kernel_type != g.view.type_of(x)
    stride_h, stride_w = window.strides
    excess_h = max(0, ((out_h + stride_h - 1) // stride_h - 1) * stride_h + window.kernel[0] - out_h)
    excess_w = max(0, ((out_w + stride_w - 1) // stride_w - 1) * stride_w + window.kernel[1] - out_w)
    same = (excess_h // 2, excess_h - excess_h // 2, excess_w // 2, excess_w - excess_w // 2)
    padding = _tflite_padding(g, window.pads, same)
    if padding is None:
        raise Unsupported(f"TRANSPOSE_CONV_2D padding {window.pads} is neither TFLite's SAME nor VALID")
    channels = g.view.dims(w)[0]
    batch = g.view.dims(x)[0]
    source = g.nhwc_input(x, window.nchw)
    out, back = g.nhwc_output(op.outputs[0], window.nchw)
    shape = g.const(np.array([batch, out_h, out_w, channels], np.int32))
    weights, target = g.t(w), out
    if detour:
        assert kernel_type is not None
        in_dims = g.view.dims(x)
        source = _recoded(g, source, x, [in_dims[p] for p in TO_NHWC] if window.nchw else in_dims, kernel_type)
        weights = _recoded_filter(g, w, kernel_type)
        output = g.view.operand(op.outputs[0])
        target = g.fb.tensor(g.fb.tensors[out].shape, _tflite_type(kernel_type),
                             g.fb.quantization([output.scale], [output.zero_point + _SHIFT[kernel_type]]))
    g.emit("TRANSPOSE_CONV", [shape, weights, source, g.t(b)], [target], "TransposeConvOptions", padding=padding,
           strideH=stride_h, strideW=stride_w, fusedActivationFunction=window.activation)
    if detour:
        g.emit("QUANTIZE", [target], [out])
    back()


def _pool(name: str) -> Handler:
    def handler(g: Graph, op: Operation) -> None:
        window = pool_window(g.view, op)
        x = op.inputs[0]
        dims = g.view.dims(x)
        in_h, in_w = (dims[2], dims[3]) if window.nchw else (dims[1], dims[2])
        padding = _tflite_padding(g, window.pads, window.same_pads(in_h, in_w))
        if padding is None:
            raise Unsupported(f"{name} with explicit padding that is neither SAME nor VALID (TFLite pools name "
                              "only those; a PAD would enter the window as values)")
        source = g.nhwc_input(x, window.nchw)
        out, back = g.nhwc_output(op.outputs[0], window.nchw)
        g.emit(name, [source], [out], "Pool2DOptions", padding=padding, strideH=window.strides[0],
               strideW=window.strides[1], filterHeight=window.kernel[0], filterWidth=window.kernel[1],
               fusedActivationFunction=window.activation)
        back()
    return handler


def _fully_connected(g: Graph, op: Operation) -> None:
    """FULLY_CONNECTED; int8 weights with a zero point run on the uint8 kernel (see ``_kernel_type``)."""
    x, w, b, act = op.inputs
    bias = -1 if g.view.is_omitted(b) else g.t(b)
    options = dict(fusedActivationFunction=_int_scalar(g, act), keepNumDims=False)
    if g.view.type_of(x) != T.TENSOR_QUANT8_ASYMM_SIGNED or g.view.operand(w).zero_point == 0:
        g.emit("FULLY_CONNECTED", [g.t(x), g.t(w), bias], [g.t(op.outputs[0])], "FullyConnectedOptions", **options)
        return
    kind = T.TENSOR_QUANT8_ASYMM
    out = op.outputs[0]
    target = g.fb.tensor(g.view.dims(out), _tflite_type(kind), g.fb.quantization(
        [g.view.operand(out).scale], [g.view.operand(out).zero_point + _SHIFT[kind]]))
    g.emit("FULLY_CONNECTED", [_recoded(g, g.t(x), x, g.view.dims(x), kind), _recoded_filter(g, w, kind), bias],
           [target], "FullyConnectedOptions", **options)
    g.emit("QUANTIZE", [target], [g.t(out)])


# ---------------------------------------------------------------------------- activations and normalisation


def _on_last_axis(g: Graph, op: Operation, position: int, emit: Callable[[int, int], None]) -> None:
    """Run ``emit(input, output)`` with the operation's axis parameter (at ``position``) moved last.

    TFLite's SOFTMAX, L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION work
    on the last axis only; another axis is swapped with the last by a
    TRANSPOSE before and after (a swap is its own inverse).
    """
    x, out = op.inputs[0], op.outputs[0]
    dims = g.view.dims(x)
    rank = len(dims)
    axis = _int_scalar(g, op.inputs[position]) if len(op.inputs) > position else -1
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        emit(g.t(x), g.t(out))
        return
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    swapped_dims = [dims[p] for p in perm]
    moved, result = g.like(x, swapped_dims), g.like(out, swapped_dims)
    g.emit("TRANSPOSE", [g.t(x), g.const(np.array(perm, np.int32))], [moved])
    emit(moved, result)
    g.emit("TRANSPOSE", [result, g.const(np.array(perm, np.int32))], [g.t(out)])


def _softmax(g: Graph, op: Operation) -> None:
    beta = float(g.view.scalar(op.inputs[1]))
    _on_last_axis(g, op, 2, lambda x, y: g.emit("SOFTMAX", [x], [y], "SoftmaxOptions", beta=beta))


def _log_softmax(g: Graph, op: Operation) -> None:
    if float(g.view.scalar(op.inputs[1])) != 1.0:
        raise Unsupported("LOG_SOFTMAX with beta other than 1 (TFLite has no beta)")
    _on_last_axis(g, op, 2, lambda x, y: g.emit("LOG_SOFTMAX", [x], [y]))


def _l2_normalization(g: Graph, op: Operation) -> None:
    _on_last_axis(g, op, 1, lambda x, y: g.emit("L2_NORMALIZATION", [x], [y], "L2NormOptions",
                                                fusedActivationFunction=0))


def _lrn(g: Graph, op: Operation) -> None:
    radius, bias, alpha, beta = (g.view.scalar(i) for i in op.inputs[1:5])
    _on_last_axis(g, op, 5, lambda x, y: g.emit(
        "LOCAL_RESPONSE_NORMALIZATION", [x], [y], "LocalResponseNormalizationOptions", radius=int(radius),
        bias=float(bias), alpha=float(alpha), beta=float(beta)))


def _channel_shuffle(g: Graph, op: Operation) -> None:
    """CHANNEL_SHUFFLE: channels [groups, per group] become [per group, groups] (RESHAPE, TRANSPOSE, RESHAPE)."""
    x, groups_index = op.inputs[:2]
    out = op.outputs[0]
    dims = g.view.dims(x)
    if not all(d > 0 for d in dims):
        raise Unsupported("CHANNEL_SHUFFLE of a tensor with unknown dimensions")
    rank = len(dims)
    axis = _int_scalar(g, op.inputs[2]) if len(op.inputs) > 2 else -1
    axis = axis + rank if axis < 0 else axis
    groups = _int_scalar(g, groups_index)
    split = [*dims[:axis], groups, dims[axis] // groups, *dims[axis + 1:]]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    grouped, swapped = g.like(x, split), g.like(x, [split[p] for p in perm])
    g.emit("RESHAPE", [g.t(x), g.const(np.array(split, np.int32))], [grouped], "ReshapeOptions", newShape=split)
    g.emit("TRANSPOSE", [grouped, g.const(np.array(perm, np.int32))], [swapped])
    g.emit("RESHAPE", [swapped, g.const(np.array(dims, np.int32))], [g.t(out)], "ReshapeOptions",
           newShape=list(dims))


# ---------------------------------------------------------------------------- shapes and data movement


def _reshape(g: Graph, op: Operation) -> None:
    x, shape = op.inputs
    new_shape = [int(d) for d in g.view.constant(shape).reshape(-1)]
    g.emit("RESHAPE", [g.t(x), g.t(shape)], [g.t(op.outputs[0])], "ReshapeOptions", newShape=new_shape)


def _concatenation(g: Graph, op: Operation) -> None:
    """CONCATENATION; int8 inputs of mixed quantization go through the uint8 kernel, which rescales them.

    TFLite's int8 kernel requires one scale and zero point for every input
    and the output; its uint8 kernel requantizes.  Recoding (QUANTIZE, same
    scale, zero point + 128) is exact both ways.
    """
    *tensors, axis = op.inputs
    out = op.outputs[0]
    options = dict(axis=_int_scalar(g, axis), fusedActivationFunction=0)
    params = {(g.view.operand(i).scale, g.view.operand(i).zero_point) for i in [*tensors, out]}
    if g.view.type_of(out) != T.TENSOR_QUANT8_ASYMM_SIGNED or len(params) == 1:
        g.emit("CONCATENATION", [g.t(i) for i in tensors], [g.t(out)], "ConcatenationOptions", **options)
        return
    kind = T.TENSOR_QUANT8_ASYMM
    inputs = [_recoded(g, g.t(i), i, g.view.dims(i), kind) for i in tensors]
    target = g.fb.tensor(g.view.dims(out), _tflite_type(kind), g.fb.quantization(
        [g.view.operand(out).scale], [g.view.operand(out).zero_point + _SHIFT[kind]]))
    g.emit("CONCATENATION", inputs, [target], "ConcatenationOptions", **options)
    g.emit("QUANTIZE", [target], [g.t(out)])


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
    """RESIZE_*: TFLite's kernels take NNAPI's arguments as they are (NNAPI's came from them)."""
    def handler(g: Graph, op: Operation) -> None:
        resize = resize_arguments(g.view, op)
        source = g.nhwc_input(op.inputs[0], resize.nchw)
        out, back = g.nhwc_output(op.outputs[0], resize.nchw)
        g.emit(name, [source, g.const(np.array(resize.out_size, np.int32))], [out], options,
               alignCorners=resize.align_corners, halfPixelCenters=resize.half_pixel_centers)
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
    Op.TRANSPOSE_CONV_2D: _transpose_conv,
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
    Op.CHANNEL_SHUFFLE: _channel_shuffle,
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
    Op.RSQRT: _rsqrt,
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
