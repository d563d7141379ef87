"""NNAPI operation -> jax.lax / jax.numpy: the XLA driver's translation table.

Each handler reads its operation's inputs from a ``Lowering`` (the values of
the operands computed so far, traced by ``jax.jit``) and stores its outputs
there.  Handlers run while JAX traces the model, so everything they decide
in Python (shapes, padding, parameters, multipliers) is fixed at
translation: scalar parameters must be constants.

- **Floats**: float32 computes in float32 with convolutions and dots at
  ``Precision.HIGHEST`` (the backend decides; relaxed models may use the
  default); float16 operands compute in float32 and each result is rounded
  back to float16 (per operation, as Android's CPU path does).
- **Layouts**: ``lax.conv_general_dilated`` takes NHWC or NCHW directly, so
  the layout flag becomes its dimension numbers; pools transpose NCHW to NHWC
  and back.  Padding is always explicit (``nnvts.drivers.engine.nnapi`` resolves
  SAME / VALID as Android does).
- **Quantized** (QUANT8_ASYMM, QUANT8_ASYMM_SIGNED): integer arithmetic only,
  with the TFLite fixed-point requantization (``nnvts.drivers.xla.fixedpoint``):
  convolutions and FULLY_CONNECTED accumulate exactly in int64, ADD / SUB /
  MUL follow TFLite's kernels, average pools round the integer mean half
  away from zero.  Operations whose NNAPI result needs a fixed-point
  transcendental (quantized LOGISTIC, TANH, SOFTMAX...) or a float
  requantization are answered unsupported, never approximated.
- **Executions NNAPI fails** (an index out of range, an axis out of range)
  cannot be expressed by XLA, which clamps: such operations are unsupported
  unless the translator can prove at translation that they cannot happen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnvts.drivers.engine.nnapi import ModelView, Unsupported, Window, conv_window, layout_flag, pool_window
from nnvts.drivers.xla.backend import jax_module
from nnvts.drivers.xla.fixedpoint import activation_range_quantized, multiply_by_quantized_multiplier
from vts.hal.enums import NUMPY_DTYPE
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op
from vts.hal.fixedpoint import quantize_multiplier
from vts.hal.types import Operation

FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_FLOAT_RANGES: dict[int, tuple[float | None, float | None]] = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0),
                                                              3: (0.0, 6.0)}


class ShapedView(ModelView):
    """A ``ModelView`` whose dims are the traced shapes once an operand is computed (models may leave them 0)."""

    def __init__(self, view: ModelView) -> None:
        super().__init__(view.model)
        self._constants = view._constants  # share decoded constants
        self.shapes: dict[int, tuple[int, ...]] = {}

    def dims(self, index: int) -> list[int]:
        if index in self.shapes:
            return list(self.shapes[index])
        return super().dims(index)


class Lowering:
    """The operands' traced values while one NNAPI (sub)model is turned into a JAX function."""

    def __init__(self, view: ModelView, precision: Any) -> None:
        self.view = ShapedView(view)
        self.values: dict[int, Any] = {}
        self.precision = precision
        self.jax = jax_module()
        self.jnp = self.jax.numpy
        self.lax = self.jax.lax

    # -- operands -------------------------------------------------------------

    def type_of(self, index: int) -> T:
        return self.view.type_of(index)

    def raw(self, index: int) -> Any:
        """The operand's value in its own element type (integers of quantized operands)."""
        if index in self.values:
            return self.values[index]
        if self.view.is_constant(index):
            return self.jnp.asarray(self.view.constant(index))
        if self.view.is_omitted(index):
            raise Unsupported(f"operand {index} is omitted")
        raise Unsupported(f"operand {index} has no value yet (graph order)")

    def get(self, index: int) -> Any:
        """A computing view: float16 widened to float32, everything else as stored."""
        value = self.raw(index)
        return value.astype(self.jnp.float32) if self.type_of(index) == T.TENSOR_FLOAT16 else value

    def put(self, index: int, value: Any) -> None:
        dtype = np.dtype(NUMPY_DTYPE[self.type_of(index)])
        value = self.jnp.asarray(value)
        if value.dtype != dtype:
            value = value.astype(dtype)
        declared = self.view.operand(index).dimensions
        if declared and len(declared) != value.ndim:
            raise Unsupported(f"operand {index}: computed rank {value.ndim}, model rank {len(declared)}")
        if declared and any(d and d != s for d, s in zip(declared, value.shape, strict=True)):
            raise Unsupported(f"operand {index}: computed shape {list(value.shape)}, model {list(declared)}")
        self.values[index] = value
        self.view.shapes[index] = tuple(int(d) for d in value.shape)

    def scalar(self, index: int) -> Any:
        return self.view.scalar(index)

    def quant(self, index: int) -> tuple[float, int]:
        operand = self.view.operand(index)
        return float(operand.scale), int(operand.zero_point)

    def same_quant(self, indexes: Sequence[int]) -> bool:
        return len({(np.float32(self.view.operand(i).scale), self.view.operand(i).zero_point) for i in indexes}) == 1

    # -- finishing ------------------------------------------------------------

    def float_activation(self, value: Any, activation: int) -> Any:
        if activation not in _FLOAT_RANGES:
            raise Unsupported(f"fused activation {activation}")
        low, high = _FLOAT_RANGES[activation]
        if low is not None:
            value = self.jnp.maximum(value, low)
        if high is not None:
            value = self.jnp.minimum(value, high)
        return value

    def quant_finish(self, raw: Any, activation: int, out: int) -> None:
        """int64 ``raw`` (zero point added) clamped to the output's type and fused activation, stored."""
        if activation not in _FLOAT_RANGES:
            raise Unsupported(f"fused activation {activation}")
        scale, zero_point = self.quant(out)
        dtype = np.dtype(NUMPY_DTYPE[self.type_of(out)])
        low, high = activation_range_quantized(activation, scale, zero_point, dtype)
        self.put(out, self.jnp.clip(raw, low, high))


Handler = Callable[[Lowering, Operation], None]


def _kind(L: Lowering, index: int, allowed: Sequence[T], what: str) -> T:
    kind = L.type_of(index)
    if kind not in allowed:
        raise Unsupported(f"{what} of type {kind.name} has no exact XLA translation here")
    return kind


# --------------------------------------------------------------------------- elementwise


def _binary(name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        a, b, act = op.inputs[:3]
        out = op.outputs[0]
        activation = int(L.scalar(act))
        kind = _kind(L, a, (*FLOATS, T.TENSOR_INT32, *QUANT8), name)
        jnp = L.jnp
        if kind in FLOATS:
            x, y = L.get(a), L.get(b)
            result = {"ADD": jnp.add, "SUB": jnp.subtract, "MUL": jnp.multiply, "DIV": jnp.divide}[name](x, y)
            L.put(out, L.float_activation(result, activation))
            return
        if kind == T.TENSOR_INT32:
            if name == "DIV":
                raise Unsupported("TENSOR_INT32 DIV (division by zero and rounding are not expressed)")
            if activation != 0:
                raise Unsupported("TENSOR_INT32 with a fused activation")
            x, y = L.raw(a).astype(jnp.int64), L.raw(b).astype(jnp.int64)
            result = {"ADD": jnp.add, "SUB": jnp.subtract, "MUL": jnp.multiply}[name](x, y)
            L.put(out, _wrap_int32(jnp, result))
            return
        if name == "DIV":
            raise Unsupported("quantized DIV")
        (sa, za), (sb, zb), (so, zo) = L.quant(a), L.quant(b), L.quant(out)
        x = L.raw(a).astype(jnp.int64) - za
        y = L.raw(b).astype(jnp.int64) - zb
        if name == "MUL":
            m, s = quantize_multiplier(sa * sb / so)
            raw = multiply_by_quantized_multiplier(x * y, m, s) + zo
        else:
            left_shift = 20
            twice = 2.0 * max(sa, sb)
            m1, s1 = quantize_multiplier(sa / twice)
            m2, s2 = quantize_multiplier(sb / twice)
            mo, so_ = quantize_multiplier(twice / ((1 << left_shift) * so))
            x1 = multiply_by_quantized_multiplier(x * (1 << left_shift), m1, s1)
            x2 = multiply_by_quantized_multiplier(y * (1 << left_shift), m2, s2)
            total = x1 + x2 if name == "ADD" else x1 - x2
            raw = multiply_by_quantized_multiplier(total, mo, so_) + zo
        L.quant_finish(raw, activation, out)

    return handler


def _wrap_int32(jnp: Any, value: Any) -> Any:
    """C++ int32 wrap-around of an int64 value."""
    return (((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)).astype(jnp.int32)


def _relu(code: int) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        x, out = op.inputs[0], op.outputs[0]
        kind = _kind(L, x, (*FLOATS, *QUANT8), "input")
        if len(L.view.dims(x)) > 4:
            raise Unsupported("input rank above 4")
        if kind in FLOATS:
            L.put(out, L.float_activation(L.get(x), code))
            return
        if not L.same_quant([x, out]):
            raise Unsupported("quantized output must reuse the input scale and zero point")
        L.quant_finish(L.raw(x).astype(L.jnp.int64), code, out)

    return handler


def _float_unary(fn: Callable[[Any, Any], Any], int_ok: bool = False) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        x, out = op.inputs[0], op.outputs[0]
        _kind(L, x, (*FLOATS, T.TENSOR_INT32) if int_ok else FLOATS, "input")
        L.put(out, fn(L, L.get(x)))

    return handler


def _softmax(L: Lowering, op: Operation) -> None:
    x, beta = op.inputs[:2]
    out = op.outputs[0]
    _kind(L, x, FLOATS, "SOFTMAX input")
    axis = int(L.scalar(op.inputs[2])) if len(op.inputs) > 2 else -1
    rank = len(L.view.dims(x))
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} out of range")
    value = L.get(x) * np.float32(L.scalar(beta))
    shifted = value - L.jnp.max(value, axis=axis, keepdims=True)
    e = L.jnp.exp(shifted)
    L.put(out, e / L.jnp.sum(e, axis=axis, keepdims=True))


def _log_softmax(L: Lowering, op: Operation) -> None:
    x, beta, axis_index = op.inputs[:3]
    out = op.outputs[0]
    _kind(L, x, FLOATS, "LOG_SOFTMAX input")
    axis = int(L.scalar(axis_index))
    rank = len(L.view.dims(x))
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} out of range")
    value = L.get(x) * np.float32(L.scalar(beta))
    shifted = value - L.jnp.max(value, axis=axis, keepdims=True)
    L.put(out, shifted - L.jnp.log(L.jnp.sum(L.jnp.exp(shifted), axis=axis, keepdims=True)))


def _elementwise2(name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        a, b = op.inputs[:2]
        out = op.outputs[0]
        kind = _kind(L, a, (*FLOATS, T.TENSOR_INT32, *QUANT8), name)
        jnp = L.jnp
        if kind in QUANT8 and not L.same_quant([a, b, out]):
            raise Unsupported(f"quantized {name} with different scales or zero points (needs requantization)")
        x, y = (L.get(a), L.get(b)) if kind not in QUANT8 else (L.raw(a), L.raw(b))
        if name == "POW":
            if kind not in FLOATS:
                raise Unsupported("POW of non-float types")
            L.put(out, jnp.power(x, y))
            return
        L.put(out, jnp.maximum(x, y) if name == "MAXIMUM" else jnp.minimum(x, y))

    return handler


def _compare(fn: Callable[[Any, Any], Any]) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        a, b = op.inputs[:2]
        kind = _kind(L, a, (*FLOATS, T.TENSOR_INT32, T.TENSOR_BOOL8, *QUANT8), "comparison input")
        if kind in QUANT8 and not L.same_quant([a, b]):
            raise Unsupported("quantized comparison of differently quantized inputs")
        x, y = (L.raw(a), L.raw(b)) if kind in QUANT8 else (L.get(a), L.get(b))
        L.put(op.outputs[0], fn(x, y))

    return handler


def _logical(name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        jnp = L.jnp
        if name == "NOT":
            L.put(op.outputs[0], jnp.logical_not(L.raw(op.inputs[0])))
            return
        x, y = L.raw(op.inputs[0]), L.raw(op.inputs[1])
        L.put(op.outputs[0], jnp.logical_and(x, y) if name == "AND" else jnp.logical_or(x, y))

    return handler


def _select(L: Lowering, op: Operation) -> None:
    cond, a, b = op.inputs
    out = op.outputs[0]
    kind = L.type_of(a)
    if kind in QUANT8 and not L.same_quant([a, b, out]):
        raise Unsupported("quantized SELECT with different quantizations")
    if kind not in (*FLOATS, T.TENSOR_INT32, *QUANT8):
        raise Unsupported(f"SELECT of {kind.name}")
    if L.view.dims(cond) != L.view.dims(a) or L.view.dims(a) != L.view.dims(b):
        raise Unsupported("SELECT of differently shaped operands")
    L.put(out, L.jnp.where(L.raw(cond), L.raw(a), L.raw(b)))


def _prelu(L: Lowering, op: Operation) -> None:
    x, alpha = op.inputs
    _kind(L, x, FLOATS, "PRELU input")
    value = L.get(x)
    L.put(op.outputs[0], L.jnp.where(value >= 0, value, value * L.get(alpha)))


def _hard_swish(L: Lowering, op: Operation) -> None:
    x = op.inputs[0]
    _kind(L, x, FLOATS, "HARD_SWISH input")
    value = L.get(x)
    L.put(op.outputs[0], value * L.jnp.clip(value + 3.0, 0.0, 6.0) / 6.0)


def _elu(L: Lowering, op: Operation) -> None:
    x, alpha = op.inputs
    _kind(L, x, FLOATS, "ELU input")
    value = L.get(x)
    a = np.float32(L.scalar(alpha))
    L.put(op.outputs[0], L.jnp.where(value < 0, a * L.jnp.expm1(value), value))


# --------------------------------------------------------------------------- quantize / cast


def _dequantize(L: Lowering, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    kind = _kind(L, x, (*QUANT8, T.TENSOR_QUANT8_SYMM), "DEQUANTIZE input")
    del kind
    scale, zero_point = L.quant(x)
    L.put(out, (L.raw(x).astype(L.jnp.int32) - zero_point).astype(L.jnp.float32) * np.float32(scale))


def _quantize(L: Lowering, op: Operation) -> None:
    """Android's QUANTIZE: round(x / scale) half away from zero in float32, plus the zero point, saturated."""
    x, out = op.inputs[0], op.outputs[0]
    _kind(L, x, FLOATS, "QUANTIZE input")
    _kind(L, out, QUANT8, "QUANTIZE output")
    scale, zero_point = L.quant(out)
    jnp = L.jnp
    ratio = L.get(x) / np.float32(scale)
    rounded = jnp.sign(ratio) * jnp.floor(jnp.abs(ratio) + np.float32(0.5))
    info = np.iinfo(np.dtype(NUMPY_DTYPE[L.type_of(out)]))
    clipped = jnp.clip(rounded.astype(jnp.float64) + zero_point, info.min, info.max)
    L.put(out, clipped)


def _cast(L: Lowering, op: Operation) -> None:
    x, out = op.inputs[0], op.outputs[0]
    src, dst = L.type_of(x), L.type_of(out)
    if src == dst and src in QUANT8:
        if not L.same_quant([x, out]):
            raise Unsupported("CAST between quantizations")
        L.put(out, L.raw(x))
        return
    if dst not in (*FLOATS, T.TENSOR_INT32) or src not in (*FLOATS, T.TENSOR_INT32):
        raise Unsupported(f"CAST {src.name} -> {dst.name} (saturation rules not expressed)")
    value = L.get(x)
    if dst == T.TENSOR_INT32 and src in FLOATS:
        raise Unsupported("CAST float -> int32 (out-of-range values are undefined in C++)")
    L.put(out, value)


# --------------------------------------------------------------------------- convolution, fully connected


def _check_bias_scale(L: Lowering, bias: int, product: float) -> None:
    bias_scale = float(np.float32(L.view.operand(bias).scale))
    if abs(product - bias_scale) > 1e-6 * min(product, bias_scale) or product < 0:
        raise Unsupported(f"bias scale {bias_scale} differs from input scale * filter scale {product}")


def _multipliers(L: Lowering, x: int, w: int, bias: int | None, out: int, channels: int) -> tuple[np.ndarray, ...]:
    """Android ``GetQuantizedConvolutionMultipler``: per tensor, or one per output channel."""
    in_scale = np.float32(L.view.operand(x).scale)
    out_scale = float(np.float32(L.view.operand(out).scale))
    if out_scale <= 0:
        raise Unsupported("output scale must be positive")
    channel = L.view.channel_quant(w)
    if channel is None:
        product = float(in_scale * np.float32(L.view.operand(w).scale))
        if bias is not None:
            _check_bias_scale(L, bias, product)
        m, s = quantize_multiplier(product / out_scale)
        return np.array([m], np.int64), np.array([s], np.int64)
    scales = np.asarray(channel.scales, np.float32)
    if scales.shape != (channels,):
        raise Unsupported(f"per-channel filter with {scales.size} scales for {channels} channels")
    pairs = [quantize_multiplier(float(p) / out_scale) for p in (in_scale * scales).astype(np.float64)]
    return np.array([m for m, _ in pairs], np.int64), np.array([s for _, s in pairs], np.int64)


def _filter_ints(L: Lowering, w: int) -> Any:
    kind = L.type_of(w)
    if kind == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if L.view.channel_quant(w) is None:
            raise Unsupported("per-channel filter without channel parameters")
        return L.raw(w).astype(L.jnp.int32)
    if kind not in QUANT8:
        raise Unsupported(f"filter of type {kind.name}")
    return L.raw(w).astype(L.jnp.int32) - L.quant(w)[1]


def _conv(L: Lowering, op: Operation) -> None:
    x, w, b = op.inputs[:3]
    out = op.outputs[0]
    depthwise = op.type == Op.DEPTHWISE_CONV_2D
    kind = _kind(L, x, (*FLOATS, *QUANT8), "input")
    window, multiplier = conv_window(L.view, op)
    if len(L.view.dims(x)) != 4:
        raise Unsupported("input rank must be 4")
    layout = "NCHW" if window.nchw else "NHWC"
    in_channels = L.view.dims(x)[1 if window.nchw else 3]
    filter_dims = L.view.dims(w)
    if depthwise:
        if filter_dims[0] != 1 or filter_dims[3] != in_channels * multiplier:
            raise Unsupported(f"depthwise filter {filter_dims} for {in_channels} channels, multiplier {multiplier}")
        spec, groups = "IHWO", in_channels
    else:
        if filter_dims[3] != in_channels:
            raise Unsupported(f"filter {filter_dims} for {in_channels} input channels")
        spec, groups = "OHWI", 1
    channels = filter_dims[3] if depthwise else filter_dims[0]
    top, bottom, left, right = window.pads
    lax, jnp = L.lax, L.jnp
    common = {"window_strides": window.strides, "padding": [(top, bottom), (left, right)],
              "rhs_dilation": window.dilations, "dimension_numbers": (layout, spec, layout),
              "feature_group_count": groups}
    bias_shape = (1, channels, 1, 1) if window.nchw else (1, 1, 1, channels)
    if kind in FLOATS:
        if L.type_of(w) not in FLOATS:
            raise Unsupported(f"float input with a {L.type_of(w).name} filter")
        y = lax.conv_general_dilated(L.get(x), L.get(w), precision=L.precision, **common)
        y = y + L.get(b).reshape(bias_shape)
        L.put(out, L.float_activation(y, window.activation))
        return
    acc = lax.conv_general_dilated(L.raw(x).astype(jnp.int32) - L.quant(x)[1], _filter_ints(L, w),
                                   preferred_element_type=jnp.int64, **common)
    acc = acc + L.raw(b).astype(jnp.int64).reshape(bias_shape)
    m, s = _multipliers(L, x, w, b, out, channels)
    if len(m) > 1:
        m, s = m.reshape(bias_shape), s.reshape(bias_shape)
    raw = multiply_by_quantized_multiplier(acc, m, s) + L.quant(out)[1]
    L.quant_finish(raw, window.activation, out)


def _fully_connected(L: Lowering, op: Operation) -> None:
    x, w, b, act = op.inputs[:4]
    out = op.outputs[0]
    kind = _kind(L, x, (*FLOATS, *QUANT8), "input")
    units, input_size = L.view.dims(w)
    size = int(np.prod(L.view.dims(x)))
    if input_size == 0 or size % input_size:
        raise Unsupported(f"input of {size} elements for rows of {input_size}")
    batch = size // input_size
    activation = int(L.scalar(act))
    jnp, lax = L.jnp, L.lax
    dims = (((1,), (1,)), ((), ()))
    if kind in FLOATS:
        y = lax.dot_general(L.get(x).reshape(batch, input_size), L.get(w), dims, precision=L.precision)
        L.put(out, L.float_activation(y + L.get(b), activation))
        return
    if L.type_of(w) not in QUANT8:
        raise Unsupported(f"quantized input with a {L.type_of(w).name} filter")
    xi = L.raw(x).astype(jnp.int32).reshape(batch, input_size) - L.quant(x)[1]
    acc = lax.dot_general(xi, _filter_ints(L, w), dims, preferred_element_type=jnp.int64)
    acc = acc + L.raw(b).astype(jnp.int64)
    m, s = _multipliers(L, x, w, b, out, units)
    L.quant_finish(multiply_by_quantized_multiplier(acc, m, s) + L.quant(out)[1], activation, out)


# --------------------------------------------------------------------------- pools


def _pool(kind_name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        x, out = op.inputs[0], op.outputs[0]
        kind = _kind(L, x, (*FLOATS, *QUANT8), "input")
        if kind in QUANT8 and kind_name == "l2":
            raise Unsupported("quantized L2_POOL_2D")
        if kind in QUANT8 and not L.same_quant([x, out]):
            raise Unsupported("quantized pool output must reuse the input quantization")
        window: Window = pool_window(L.view, op)
        if len(L.view.dims(x)) != 4:
            raise Unsupported("input rank must be 4")
        lax, jnp = L.lax, L.jnp
        value = L.get(x) if kind in FLOATS else L.raw(x)
        if window.nchw:
            value = jnp.transpose(value, (0, 2, 3, 1))
        top, bottom, left, right = window.pads
        _, in_h, in_w, _ = value.shape
        kh, kw = window.kernel
        sh, sw = window.strides
        dims = (1, kh, kw, 1)
        strides = (1, sh, sw, 1)
        padding = ((0, 0), (top, bottom), (left, right), (0, 0))
        out_h = (in_h + top + bottom - kh) // sh + 1
        out_w = (in_w + left + right - kw) // sw + 1
        if out_h <= 0 or out_w <= 0:
            raise Unsupported("window larger than the padded input")
        counts = _window_counts(in_h, in_w, window, out_h, out_w)
        if (counts == 0).any():
            raise Unsupported("a window covers padding only")
        if kind_name == "max":
            init = -np.inf if kind in FLOATS else np.iinfo(value.dtype).min
            result = lax.reduce_window(value, np.array(init, value.dtype), lax.max, dims, strides, padding)
        elif kind in FLOATS:
            operand = value * value if kind_name == "l2" else value
            total = lax.reduce_window(operand, np.float32(0), lax.add, dims, strides, padding)
            result = total / jnp.asarray(counts, np.float32)[None, :, :, None]
            if kind_name == "l2":
                result = jnp.sqrt(result)
        else:
            total = lax.reduce_window(value.astype(jnp.int64), np.int64(0), lax.add, dims, strides, padding)
            c = jnp.asarray(counts.astype(np.int64))[None, :, :, None]
            magnitude = (jnp.abs(total) + c // 2) // c
            result = jnp.where(total < 0, -magnitude, magnitude)
        if window.nchw:
            result = jnp.transpose(result, (0, 3, 1, 2))
        if kind in FLOATS:
            L.put(out, L.float_activation(result, window.activation))
        else:
            L.quant_finish(result.astype(jnp.int64), window.activation, out)

    return handler


def _axis_counts(size: int, kernel: int, stride: int, pad: int, count: int) -> np.ndarray:
    starts = np.arange(count) * stride - pad
    return np.minimum(starts + kernel, size) - np.maximum(starts, 0)


def _window_counts(in_h: int, in_w: int, window: Window, out_h: int, out_w: int) -> np.ndarray:
    rows = _axis_counts(in_h, window.kernel[0], window.strides[0], window.pads[0], out_h)
    cols = _axis_counts(in_w, window.kernel[1], window.strides[1], window.pads[2], out_w)
    return np.maximum(rows, 0)[:, None] * np.maximum(cols, 0)[None, :]


# --------------------------------------------------------------------------- shapes and data movement


def _same_or_float(L: Lowering, indexes: Sequence[int], what: str) -> None:
    if L.type_of(indexes[0]) in QUANT8 and not L.same_quant(indexes):
        raise Unsupported(f"quantized {what} that changes the quantization")


def _reshape(L: Lowering, op: Operation) -> None:
    x, shape = op.inputs
    out = op.outputs[0]
    _same_or_float(L, [x, out], "RESHAPE")
    target = [int(d) for d in L.view.constant(shape).reshape(-1)]
    size = int(np.prod(L.view.dims(x)))
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise Unsupported(f"shape {target}")
    known = int(np.prod([d for d in target if d != -1])) if target else 1
    if -1 in target:
        if known == 0 or size % known:
            raise Unsupported(f"shape {target} for {size} elements")
        target[target.index(-1)] = size // known
    if int(np.prod(target)) != size:
        raise Unsupported(f"shape {target} for {size} elements")
    L.put(out, L.raw(x).reshape(target))


def _concatenation(L: Lowering, op: Operation) -> None:
    parts = list(op.inputs[:-1])
    out = op.outputs[0]
    axis = int(L.scalar(op.inputs[-1]))
    rank = len(L.view.dims(parts[0]))
    if not 0 <= axis < rank:
        raise Unsupported(f"axis {axis} out of range for rank {rank}")
    _same_or_float(L, [*parts, out], "CONCATENATION")
    shapes = [L.view.dims(p) for p in parts]
    others = {tuple(d for i, d in enumerate(s) if i != axis) for s in shapes}
    if len(others) != 1 or any(len(s) != rank for s in shapes):
        raise Unsupported(f"shapes {shapes} cannot be concatenated")
    L.put(out, L.jnp.concatenate([L.raw(p) for p in parts], axis=axis))


def _transpose(L: Lowering, op: Operation) -> None:
    x = op.inputs[0]
    out = op.outputs[0]
    _same_or_float(L, [x, out], "TRANSPOSE")
    rank = len(L.view.dims(x))
    if len(op.inputs) > 1 and not L.view.is_omitted(op.inputs[1]):
        if not L.view.is_constant(op.inputs[1]):
            raise Unsupported("permutation given at execution time")
        perm = [int(p) for p in L.view.constant(op.inputs[1]).reshape(-1)]
    else:
        perm = list(reversed(range(rank)))
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"permutation {perm}")
    L.put(out, L.jnp.transpose(L.raw(x), perm))


def _squeeze(L: Lowering, op: Operation) -> None:
    x = op.inputs[0]
    dims = L.view.dims(x)
    if len(op.inputs) > 1 and not L.view.is_omitted(op.inputs[1]):
        axes = sorted({int(a) % len(dims) for a in L.view.constant(op.inputs[1]).reshape(-1)})
        if any(dims[a] != 1 for a in axes):
            raise Unsupported("squeezing an axis that is not 1")
    else:
        axes = [i for i, d in enumerate(dims) if d == 1]
    _same_or_float(L, [x, op.outputs[0]], "SQUEEZE")
    L.put(op.outputs[0], L.jnp.squeeze(L.raw(x), axis=tuple(axes)) if axes else L.raw(x))


def _expand_dims(L: Lowering, op: Operation) -> None:
    x, axis_index = op.inputs
    rank = len(L.view.dims(x))
    axis = int(L.scalar(axis_index))
    if not -(rank + 1) <= axis <= rank:
        raise Unsupported(f"axis {axis}")
    _same_or_float(L, [x, op.outputs[0]], "EXPAND_DIMS")
    L.put(op.outputs[0], L.jnp.expand_dims(L.raw(x), axis % (rank + 1)))


def _pad(L: Lowering, op: Operation) -> None:
    x, paddings = op.inputs[:2]
    out = op.outputs[0]
    kind = L.type_of(x)
    pads = L.view.constant(paddings).reshape(-1, 2).astype(int)
    if (pads < 0).any():
        raise Unsupported("negative padding")
    if kind in QUANT8:
        _same_or_float(L, [x, out], "PAD")
        value: Any = L.quant(x)[1]
    else:
        value = 0
    if op.type == Op.PAD_V2:
        value = L.scalar(op.inputs[2])
        if kind in QUANT8 and not isinstance(value, int):
            raise Unsupported("quantized PAD_V2 with a float pad value")
    raw = L.raw(x)
    L.put(out, L.jnp.pad(raw, [tuple(p) for p in pads.tolist()], constant_values=np.array(value, raw.dtype)))


def _axes(L: Lowering, index: int, rank: int) -> tuple[int, ...]:
    axes = [int(a) for a in L.view.constant(index).reshape(-1)]
    if any(not -rank <= a < rank for a in axes):
        raise Unsupported(f"axes {axes} out of range")
    return tuple(sorted({a % rank for a in axes}))


def _reduce(name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        x, axes_index, keep = op.inputs[:3]
        out = op.outputs[0]
        kind = _kind(L, x, (*FLOATS, *QUANT8) if name in ("max", "min") else FLOATS, "input")
        if kind in QUANT8:
            _same_or_float(L, [x, out], f"REDUCE_{name.upper()}")
        rank = len(L.view.dims(x))
        axes = _axes(L, axes_index, rank)
        keepdims = bool(L.scalar(keep))
        value = L.get(x) if kind in FLOATS else L.raw(x)
        fn = {"sum": L.jnp.sum, "max": L.jnp.max, "min": L.jnp.min, "prod": L.jnp.prod, "mean": L.jnp.mean}[name]
        L.put(out, fn(value, axis=axes, keepdims=keepdims))

    return handler


def _arg(fn_name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        x, axis_index = op.inputs
        rank = len(L.view.dims(x))
        axis = int(L.scalar(axis_index))
        if not -rank <= axis < rank:
            raise Unsupported(f"axis {axis}")
        kind = _kind(L, x, (*FLOATS, T.TENSOR_INT32, *QUANT8), "input")
        value = L.get(x) if kind in FLOATS else L.raw(x)
        fn = L.jnp.argmax if fn_name == "max" else L.jnp.argmin
        L.put(op.outputs[0], fn(value, axis=axis % rank))

    return handler


def _gather(L: Lowering, op: Operation) -> None:
    x, axis_index, indices = op.inputs
    out = op.outputs[0]
    rank = len(L.view.dims(x))
    axis = int(L.scalar(axis_index))
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis}")
    axis %= rank
    if not L.view.is_constant(indices):
        raise Unsupported("indices given at execution time (NNAPI fails out-of-range indices; XLA clamps them)")
    values = L.view.constant(indices)
    if ((values < 0) | (values >= L.view.dims(x)[axis])).any():
        raise Unsupported("index out of range")
    _same_or_float(L, [x, out], "GATHER")
    L.put(out, L.jnp.take(L.raw(x), L.jnp.asarray(values), axis=axis))


def _block(name: str) -> Handler:
    def handler(L: Lowering, op: Operation) -> None:
        x, block_index = op.inputs[:2]
        out = op.outputs[0]
        nchw = layout_flag(L.view, op, 2)
        block = int(L.scalar(block_index))
        _same_or_float(L, [x, out], name)
        value = L.raw(x)
        jnp = L.jnp
        if nchw:
            value = jnp.transpose(value, (0, 2, 3, 1))
        n, h, w, c = value.shape
        if block < 1:
            raise Unsupported(f"block size {block}")
        if name == "DEPTH_TO_SPACE":
            if c % (block * block):
                raise Unsupported("depth not divisible by block size squared")
            value = value.reshape(n, h, w, block, block, c // (block * block))
            value = jnp.transpose(value, (0, 1, 3, 2, 4, 5)).reshape(n, h * block, w * block, c // (block * block))
        else:
            if h % block or w % block:
                raise Unsupported("spatial size not divisible by block size")
            value = value.reshape(n, h // block, block, w // block, block, c)
            value = jnp.transpose(value, (0, 1, 3, 2, 4, 5)).reshape(n, h // block, w // block, c * block * block)
        if nchw:
            value = jnp.transpose(value, (0, 3, 1, 2))
        L.put(out, value)

    return handler


def _slice(L: Lowering, op: Operation) -> None:
    x, begin_index, size_index = op.inputs
    out = op.outputs[0]
    dims = L.view.dims(x)
    begin = [int(v) for v in L.view.constant(begin_index).reshape(-1)]
    size = [int(v) for v in L.view.constant(size_index).reshape(-1)]
    ends = []
    for d, b, s in zip(dims, begin, size, strict=True):
        e = d if s == -1 else b + s
        if b < 0 or b > d or e > d or e < b:
            raise Unsupported("slice out of range (NNAPI fails it)")
        ends.append(e)
    _same_or_float(L, [x, out], "SLICE")
    L.put(out, L.raw(x)[tuple(slice(b, e) for b, e in zip(begin, ends, strict=True))])


def _split(L: Lowering, op: Operation) -> None:
    x, axis_index, count_index = op.inputs
    dims = L.view.dims(x)
    axis = int(L.scalar(axis_index))
    if not -len(dims) <= axis < len(dims):
        raise Unsupported(f"axis {axis}")
    axis %= len(dims)
    count = int(L.scalar(count_index))
    if count != len(op.outputs) or count <= 0 or dims[axis] % count:
        raise Unsupported("uneven split")
    _same_or_float(L, [x, *op.outputs], "SPLIT")
    for out, part in zip(op.outputs, L.jnp.split(L.raw(x), count, axis=axis), strict=True):
        L.put(out, part)


def _tile(L: Lowering, op: Operation) -> None:
    x, multiples_index = op.inputs
    multiples = [int(m) for m in L.view.constant(multiples_index).reshape(-1)]
    if any(m < 0 for m in multiples) or len(multiples) != len(L.view.dims(x)):
        raise Unsupported(f"multiples {multiples}")
    _same_or_float(L, [x, op.outputs[0]], "TILE")
    L.put(op.outputs[0], L.jnp.tile(L.raw(x), multiples))


def _mean(L: Lowering, op: Operation) -> None:
    x, axes_index, keep = op.inputs
    _kind(L, x, FLOATS, "MEAN input")
    rank = len(L.view.dims(x))
    L.put(op.outputs[0], L.jnp.mean(L.get(x), axis=_axes(L, axes_index, rank), keepdims=bool(L.scalar(keep))))


def _l2_normalization(L: Lowering, op: Operation) -> None:
    x = op.inputs[0]
    _kind(L, x, FLOATS, "L2_NORMALIZATION input")
    rank = len(L.view.dims(x))
    axis = int(L.scalar(op.inputs[1])) if len(op.inputs) > 1 else -1
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis}")
    value = L.get(x)
    norm = L.jnp.sqrt(L.jnp.maximum(L.jnp.sum(value * value, axis=axis, keepdims=True), np.float32(1e-6)))
    L.put(op.outputs[0], value / norm)


HANDLERS: dict[int, Handler] = {
    Op.ADD: _binary("ADD"),
    Op.SUB: _binary("SUB"),
    Op.MUL: _binary("MUL"),
    Op.DIV: _binary("DIV"),
    Op.RELU: _relu(1),
    Op.RELU1: _relu(2),
    Op.RELU6: _relu(3),
    Op.LOGISTIC: _float_unary(lambda L, v: L.jax.nn.sigmoid(v)),
    Op.TANH: _float_unary(lambda L, v: L.jnp.tanh(v)),
    Op.EXP: _float_unary(lambda L, v: L.jnp.exp(v)),
    Op.LOG: _float_unary(lambda L, v: L.jnp.log(v)),
    Op.SQRT: _float_unary(lambda L, v: L.jnp.sqrt(v)),
    Op.RSQRT: _float_unary(lambda L, v: 1.0 / L.jnp.sqrt(v)),
    Op.SIN: _float_unary(lambda L, v: L.jnp.sin(v)),
    Op.FLOOR: _float_unary(lambda L, v: L.jnp.floor(v)),
    Op.ABS: _float_unary(lambda L, v: L.jnp.abs(v), int_ok=True),
    Op.NEG: _float_unary(lambda L, v: -v, int_ok=True),
    Op.SOFTMAX: _softmax,
    Op.LOG_SOFTMAX: _log_softmax,
    Op.MAXIMUM: _elementwise2("MAXIMUM"),
    Op.MINIMUM: _elementwise2("MINIMUM"),
    Op.POW: _elementwise2("POW"),
    Op.EQUAL: _compare(lambda x, y: x == y),
    Op.NOT_EQUAL: _compare(lambda x, y: x != y),
    Op.LESS: _compare(lambda x, y: x < y),
    Op.LESS_EQUAL: _compare(lambda x, y: x <= y),
    Op.GREATER: _compare(lambda x, y: x > y),
    Op.GREATER_EQUAL: _compare(lambda x, y: x >= y),
    Op.LOGICAL_AND: _logical("AND"),
    Op.LOGICAL_OR: _logical("OR"),
    Op.LOGICAL_NOT: _logical("NOT"),
    Op.SELECT: _select,
    Op.PRELU: _prelu,
    Op.HARD_SWISH: _hard_swish,
    Op.ELU: _elu,
    Op.DEQUANTIZE: _dequantize,
    Op.QUANTIZE: _quantize,
    Op.CAST: _cast,
    Op.CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _conv,
    Op.FULLY_CONNECTED: _fully_connected,
    Op.AVERAGE_POOL_2D: _pool("average"),
    Op.MAX_POOL_2D: _pool("max"),
    Op.L2_POOL_2D: _pool("l2"),
    Op.RESHAPE: _reshape,
    Op.CONCATENATION: _concatenation,
    Op.TRANSPOSE: _transpose,
    Op.SQUEEZE: _squeeze,
    Op.EXPAND_DIMS: _expand_dims,
    Op.PAD: _pad,
    Op.PAD_V2: _pad,
    Op.MEAN: _mean,
    Op.REDUCE_SUM: _reduce("sum"),
    Op.REDUCE_MAX: _reduce("max"),
    Op.REDUCE_MIN: _reduce("min"),
    Op.REDUCE_PROD: _reduce("prod"),
    Op.ARGMAX: _arg("max"),
    Op.ARGMIN: _arg("min"),
    Op.GATHER: _gather,
    Op.DEPTH_TO_SPACE: _block("DEPTH_TO_SPACE"),
    Op.SPACE_TO_DEPTH: _block("SPACE_TO_DEPTH"),
    Op.SLICE: _slice,
    Op.SPLIT: _split,
    Op.TILE: _tile,
    Op.L2_NORMALIZATION: _l2_normalization,
}
