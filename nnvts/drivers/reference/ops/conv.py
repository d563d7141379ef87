"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and the window helpers the conv family shares.

Everything is computed in NHWC (NCHW inputs are transposed in and out, as
Android's ``InputWithLayout``/``OutputWithLayout`` do).  Padding follows
Android's ``calculateExplicitPadding`` (SAME pads the head by half the excess,
the tail by the rest, measured on the *dilated* filter) and output sizes its
``computeOutSize``.

Numerics follow the NNAPI CPU path:
- floats compute in float32 (float16 is widened and rounded back);
- quantized convolutions accumulate ``sum((in - in_zp) * (f - f_zp)) + bias``
  exactly (Android's int32 accumulator), then requantize with the multiplier
  ``in_scale * filter_scale / out_scale`` encoded by ``quantize_multiplier``
  and applied by ``multiply_by_quantized_multiplier`` (per output channel for
  TENSOR_QUANT8_SYMM_PER_CHANNEL filters), add the output zero point and clamp
  to the fused activation's quantized range.

Speed matters (whole MobileNets run through here, see bench/): convolutions
are one im2col gather plus one float32 matmul.  Quantized operands are
zero-point adjusted integers, and float32 arithmetic on integers is exact
while sums stay within 2**24, so quantized matmuls are cut along the shared
dimension into chunks that respect that bound (``exact_matmul``).  Depthwise
convolutions run in blocks of output rows: each block's input rows are copied
into a small padded strip, summed by one ``einsum`` over a strided view whose
innermost axis is a run of whole output pixels, and (for floats) finished
with bias and activation while still in cache.  Requantization estimates each output
with one float product and redoes with the integer kernel only the elements
the estimate cannot decide (``requantize``), so results are bit-identical to
the int32 kernels.  Filter conversions are cached per constant array, and
what an operation derives from its constant filter, bias and arguments and its
input shape (checks, window, tiled bias row, filter laid out for the depthwise
einsum) is worked out once per prepared model (``ConvPlan``, ``DepthwisePlan``
through ``OpContext.memoized``): on small feature maps that Python work costs
as much as the arithmetic.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.quant import (
    activation_range_float,
    activation_range_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from nnvts.drivers.reference.tensor import OpContext, OutputSpec, Tensor, op_failure
from vts.hal.enums import OperandType as T
from vts.hal.enums import OperationType as Op

CONV_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
PADDING_SAME = 1
PADDING_VALID = 2
# Finishes (bias, activation) a block of output rows in place, while it is still in cache.
BlockFinish = Callable[[np.ndarray], None]
ArgsT = TypeVar("ArgsT")
PlanT = TypeVar("PlanT")


# --------------------------------------------------------------------------- windows and padding


@dataclass(frozen=True, slots=True)
class Window:
    """Padding, strides and dilation of a 2-D sliding window (height first, as arrays are indexed)."""

    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    stride_h: int
    stride_w: int
    dilation_h: int = 1
    dilation_w: int = 1


@dataclass(frozen=True, slots=True)
class SpatialArgs:
    """The padding and stride scalars of a windowed operation, before the input shape is known.

    NNAPI windowed ops take either four explicit paddings (left, right, top,
    bottom) or one implicit padding scheme, followed by the width and height
    strides; ``next_index`` is the first input after the strides.
    """

    pads: tuple[int, int, int, int] | None  # left, right, top, bottom (explicit form)
    scheme: int  # PADDING_SAME / PADDING_VALID (implicit form)
    stride_w: int
    stride_h: int
    next_index: int


def scalar_is_int32(ctx: OpContext, index: int) -> bool:
    """Whether input ``index`` is an INT32 scalar: how Android tells explicit from implicit padding.

    The explicit and implicit signatures can have the same input count
    (e.g. CONV_2D with 10 inputs), so Android checks the type of the input
    where they differ (an INT32 stride vs the BOOL layout).
    """
    if index >= ctx.num_inputs:
        return False
    tensor = ctx.inputs[index]
    if tensor is not None:
        return tensor.type == T.INT32
    if index < len(ctx.input_operands):
        return ctx.input_operands[index].type == T.INT32
    return False


def read_spatial_args(ctx: OpContext, base: int, explicit: bool) -> SpatialArgs:
    """Read paddings/scheme and strides starting at input ``base``."""
    if explicit:
        pads = tuple(int(ctx.scalar(base + i)) for i in range(4))
        return SpatialArgs(pads, 0, int(ctx.scalar(base + 4)), int(ctx.scalar(base + 5)), base + 6)  # type: ignore[arg-type]
    return SpatialArgs(None, int(ctx.scalar(base)), int(ctx.scalar(base + 1)), int(ctx.scalar(base + 2)), base + 3)


def implicit_padding(in_size: int, stride: int, dilation: int, filter_size: int, scheme: int) -> tuple[int, int]:
    """Android ``calculateExplicitPadding``: SAME keeps ceil(in/stride) outputs, head gets the smaller half."""
    if scheme not in (PADDING_SAME, PADDING_VALID):
        raise op_failure(f"unknown implicit padding scheme {scheme}")
    if scheme == PADDING_VALID:
        return 0, 0
    effective = (filter_size - 1) * dilation + 1
    out_size = (in_size + stride - 1) // stride
    needed = (out_size - 1) * stride + effective - in_size
    if needed <= 0:
        return 0, 0
    return needed // 2, needed - needed // 2


def resolve_window(name: str, args: SpatialArgs, in_hw: tuple[int, int], filter_hw: tuple[int, int],
                   dilation_hw: tuple[int, int] = (1, 1)) -> Window:
    """Turn the scalar arguments into a validated ``Window`` for this input and filter size."""
    (in_h, in_w), (k_h, k_w), (d_h, d_w) = in_hw, filter_hw, dilation_hw
    if args.stride_w < 1 or args.stride_h < 1:
        raise op_failure(f"{name}: strides must be positive, got {args.stride_w}x{args.stride_h}")
    if d_w < 1 or d_h < 1:
        raise op_failure(f"{name}: dilation factors must be positive, got {d_w}x{d_h}")
    if args.pads is not None:
        left, right, top, bottom = args.pads
        if min(args.pads) < 0:
            raise op_failure(f"{name}: paddings must be non-negative, got {list(args.pads)}")
    else:
        left, right = implicit_padding(in_w, args.stride_w, d_w, k_w, args.scheme)
        top, bottom = implicit_padding(in_h, args.stride_h, d_h, k_h, args.scheme)
    return Window(top, bottom, left, right, args.stride_h, args.stride_w, d_h, d_w)


def output_size(name: str, in_size: int, filter_size: int, stride: int, dilation: int, head: int,
                tail: int) -> int:
    """Android ``computeOutSize`` (with the dilated filter extent); a non-positive size cannot run."""
    effective = (filter_size - 1) * dilation + 1
    size = (in_size - effective + stride + head + tail) // stride
    if size <= 0:
        raise op_failure(f"{name}: window of {effective} does not fit input of {in_size} with padding {head}+{tail}")
    return size


def output_hw(name: str, in_hw: tuple[int, int], filter_hw: tuple[int, int], window: Window) -> tuple[int, int]:
    return (
        output_size(name, in_hw[0], filter_hw[0], window.stride_h, window.dilation_h, window.pad_top,
                    window.pad_bottom),
        output_size(name, in_hw[1], filter_hw[1], window.stride_w, window.dilation_w, window.pad_left,
                    window.pad_right),
    )


def read_layout(ctx: OpContext, index: int) -> bool:
    """The optional trailing layout BOOL (HAL 1.2): true means NCHW."""
    return bool(ctx.scalar(index, False)) if index < ctx.num_inputs else False


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x


def require_rank4(name: str, **tensors: np.ndarray) -> None:
    for label, value in tensors.items():
        if value.ndim != 4:
            raise op_failure(f"{name}: {label} must be 4-D, got shape {list(value.shape)}")


def pad_spatial(x: np.ndarray, window: Window, value: float | int = 0) -> np.ndarray:
    """Pad the H and W axes of an NHWC array (no copy when there is nothing to pad).

    A filled array plus one slice assignment: ``np.pad``'s generic path costs
    more than the copy itself on the small feature maps of deep layers.
    """
    top, bottom, left, right = window.pad_top, window.pad_bottom, window.pad_left, window.pad_right
    if not (top or bottom or left or right):
        return x
    n, h, w, c = x.shape
    padded = np.full((n, h + top + bottom, w + left + right, c), value, dtype=x.dtype)
    padded[:, top:top + h, left:left + w, :] = x
    return padded


def padded_float32(x: np.ndarray, window: Window, zero_point: int = 0) -> np.ndarray:
    """``x - zero_point`` as float32, zero-padded on H and W: conversion and padding in one copy.

    Float inputs pass ``zero_point`` 0 (float16 is widened here); quantized
    inputs become exact zero-point-adjusted integers whose padding, the zero
    point itself, adjusts to 0.
    """
    top, bottom, left, right = window.pad_top, window.pad_bottom, window.pad_left, window.pad_right
    if not (top or bottom or left or right):
        if zero_point:
            return np.subtract(x, np.float32(zero_point), dtype=np.float32)
        return x.astype(np.float32, copy=False)
    n, h, w, c = x.shape
    padded = np.zeros((n, h + top + bottom, w + left + right, c), dtype=np.float32)
    interior = padded[:, top:top + h, left:left + w, :]
    if zero_point:
        np.subtract(x, np.float32(zero_point), out=interior, dtype=np.float32)
    else:
        interior[...] = x
    return padded


def window_slice(offset: int, step: int, count: int) -> slice:
    """Rows/columns ``offset, offset+step, ...`` (``count`` of them) of a padded axis."""
    return slice(offset, offset + step * (count - 1) + 1, step)


# --------------------------------------------------------------------------- exact integer arithmetic in floats

# float32 represents every integer up to 2**24 exactly: a sum of integer products whose absolute values add
# up to at most this is computed exactly by float32 BLAS in any summation order (each partial sum is exact).
FLOAT32_EXACT = 2**24


def value_bound(tensor: Tensor) -> int:
    """Largest |stored - zero_point| the operand's type allows (bounds the integer products)."""
    zero_point = 0 if tensor.channel_quant is not None else tensor.zero_point
    return _value_bound(tensor.value.dtype.str, int(zero_point))


@functools.lru_cache(maxsize=512)
def _value_bound(dtype: str, zero_point: int) -> int:
    info = np.iinfo(np.dtype(dtype))
    return max(zero_point - int(info.min), int(info.max) - zero_point, 1)


def zero_adjusted(tensor: Tensor, dtype: type = np.float32) -> np.ndarray:
    """Stored integers minus the zero point (per-channel filters are symmetric: zero point 0).

    Adjusted 8-bit values are at most 255 in magnitude, exact in float32.
    """
    zero_point = 0 if tensor.channel_quant is not None else tensor.zero_point
    return np.subtract(tensor.value, dtype(zero_point), dtype=dtype)


# Filters are constants: converting a MobileNet's weights to float32 costs more per run than some layers.
# Conversions of large filters are kept per array object (a weak reference proves it is the same one), and
# only while that array lives: an entry leaves the cache when its filter dies (the prepared model that held
# it was released), so a long run does not keep up to _FILTER_CACHE_LIMIT dead models' converted weights
# (issue 23: the driver host grew with the number of cases).
_FILTER_CACHE: dict[int, tuple[weakref.ref, int, np.ndarray]] = {}
_FILTER_CACHE_LIMIT = 128
_FILTER_CACHE_MIN_SIZE = 4096
_FILTER_CACHE_LOCK = threading.RLock()  # re-entrant: a filter may die (its callback run) while it is held


def filter_values(tensor: Tensor) -> np.ndarray:
    """A filter/weights operand as read-only float32: zero-point adjusted when quantized, widened when float16."""
    value = tensor.value
    quantized = tensor.type not in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
    if not quantized and value.dtype == np.float32:
        return value
    if value.size < _FILTER_CACHE_MIN_SIZE:
        return zero_adjusted(tensor) if quantized else value.astype(np.float32)
    key = id(value)
    zero_point = 0 if tensor.channel_quant is not None or not quantized else tensor.zero_point
    with _FILTER_CACHE_LOCK:
        hit = _FILTER_CACHE.get(key)
    if hit is not None and hit[0]() is value and hit[1] == zero_point and hit[2].shape == value.shape:
        return hit[2]
    converted = zero_adjusted(tensor) if quantized else value.astype(np.float32)
    converted.setflags(write=False)
    with _FILTER_CACHE_LOCK:
        if len(_FILTER_CACHE) >= _FILTER_CACHE_LIMIT:
            _FILTER_CACHE.pop(next(iter(_FILTER_CACHE)), None)
        _FILTER_CACHE[key] = (weakref.ref(value, functools.partial(_forget_filter, key)), zero_point, converted)
    return converted


def _forget_filter(key: int, dead: weakref.ref) -> None:
    """Drop the cache entry of a filter array that died (unless ``key`` was reused by a newer entry)."""
    with _FILTER_CACHE_LOCK:
        entry = _FILTER_CACHE.get(key)
        if entry is not None and entry[0] is dead:
            del _FILTER_CACHE[key]


def exact_matmul(a: np.ndarray, b: np.ndarray, product_bound: int) -> np.ndarray:
    """a @ b.T for float32 matrices of integers, exactly, with float32 BLAS.

    ``product_bound`` bounds |a_ik * b_jk|.  The shared dimension is cut into
    chunks whose sums stay within 2**24, so every chunk is exact in float32;
    a single chunk is returned as float32, several are summed in float64
    (exact: the totals stay far below 2**53).
    """
    depth = a.shape[1]
    chunk = max(1, FLOAT32_EXACT // max(1, product_bound))
    if depth <= chunk:
        return a @ b.T
    total = np.zeros((a.shape[0], b.shape[0]), dtype=np.float64)
    for start in range(0, depth, chunk):
        total += a[:, start:start + chunk] @ b[:, start:start + chunk].T
    return total


# --------------------------------------------------------------------------- im2col convolution core


def im2col(xp: np.ndarray, filter_hw: tuple[int, int], window: Window, out_hw: tuple[int, int]) -> np.ndarray:
    """Rows of (kh, kw, C) patches of a padded NHWC array: shape [N*oh*ow, kh*kw*C].

    A 1x1 filter needs no gather (a strided view reshaped), otherwise one copy
    through ``sliding_window_view`` with channels innermost, matching the
    [out, kh, kw, in] filter layout of NNAPI.
    """
    (k_h, k_w), (o_h, o_w) = filter_hw, out_hw
    n, _, _, c = xp.shape
    if k_h == 1 and k_w == 1:
        view = xp[:, window_slice(0, window.stride_h, o_h), window_slice(0, window.stride_w, o_w), :]
        return view.reshape(n * o_h * o_w, c)
    extent = ((k_h - 1) * window.dilation_h + 1, (k_w - 1) * window.dilation_w + 1)
    view = np.lib.stride_tricks.sliding_window_view(xp, extent, axis=(1, 2))  # N, H', W', C, eh, ew
    view = view[:, :: window.stride_h, :: window.stride_w, :, :: window.dilation_h, :: window.dilation_w]
    view = view[:, :o_h, :o_w].transpose(0, 1, 2, 4, 5, 3)
    return view.reshape(n * o_h * o_w, k_h * k_w * c)


def conv_accumulate(xp: np.ndarray, w: np.ndarray, window: Window, out_hw: tuple[int, int],
                    product_bound: int | None = None) -> np.ndarray:
    """sum over (kh, kw, C) of xp * w for padded NHWC ``xp`` and [O, kh, kw, C] ``w`` (float32): N, oh, ow, O.

    With ``product_bound`` the operands are integers and the sum is exact (see ``exact_matmul``).
    """
    n = xp.shape[0]
    cols = im2col(xp, (w.shape[1], w.shape[2]), window, out_hw)
    filters = w.reshape(w.shape[0], -1)
    acc = cols @ filters.T if product_bound is None else exact_matmul(cols, filters, product_bound)
    return acc.reshape(n, out_hw[0], out_hw[1], w.shape[0])


def float_conv(xp: np.ndarray, w: np.ndarray, window: Window, out_hw: tuple[int, int],
               finish_rows: BlockFinish) -> np.ndarray:
    """Float32 convolution of padded NHWC ``xp`` with [O, kh, kw, C] ``w``, finished in place: N, oh, ow, O.

    ``finish_rows`` gets the result as whole output rows [N * oh, ow * O].
    (Running the matmul in cache-sized row blocks, each finished at once,
    measured no faster: BLAS repacks the weights for every block; nor did
    finishing the whole matmul's result block by block.)
    """
    acc = conv_accumulate(xp, w, window, out_hw)
    finish_rows(acc.reshape(-1, out_hw[1] * w.shape[0]))
    return acc


# --------------------------------------------------------------------------- operands and requantization


def float_array(tensor: Tensor) -> np.ndarray:
    """Float operands as float32 (float16 widened, the way Android's CPU path computes it)."""
    return tensor.value.astype(np.float32, copy=False)


def filter_scales(filt: Tensor, channels: int) -> np.ndarray:
    """One float32 scale per output channel (a per-tensor scale repeated)."""
    if filt.channel_quant is not None:
        scales = np.asarray(filt.channel_quant.scales, dtype=np.float32)
        if scales.shape != (channels,):
            raise op_failure(f"per-channel filter has {scales.size} scales for {channels} output channels")
        return scales
    return np.full(channels, filt.scale, dtype=np.float32)


def conv_multipliers(input_: Tensor, filt: Tensor, bias: Tensor | None, out: OutputSpec,
                     channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point output multipliers and shifts: one per output channel, or a single one for per-tensor filters.

    Android ``GetQuantizedConvolutionMultipler``: the product of the input and
    filter scales is formed in float (as the C++ does), the bias scale must
    match it to 1e-6 relative (a per-channel bias scale is defined as that
    product), and the real multiplier is product / output scale in double.
    """
    if out.scale <= 0:
        raise op_failure(f"output scale must be positive, got {out.scale}")
    if filt.channel_quant is None:
        product, multiplier, shift = _per_tensor_multiplier(float(input_.scale), float(filt.scale), float(out.scale))
        if bias is not None:
            bias_scale = float(np.float32(bias.scale))
            if abs(product - bias_scale) > 1e-6 * min(product, bias_scale) or product < 0:
                raise op_failure(f"bias scale {bias_scale} differs from input scale * filter scale {product}")
        return np.array([multiplier], dtype=np.int64), np.array([shift], dtype=np.int64)
    products = (np.float32(input_.scale) * filter_scales(filt, channels)).astype(np.float64)
    pairs = [quantize_multiplier(float(p) / float(np.float32(out.scale))) for p in products]
    return np.array([m for m, _ in pairs], dtype=np.int64), np.array([s for _, s in pairs], dtype=np.int64)


@functools.lru_cache(maxsize=1024)
def _per_tensor_multiplier(input_scale: float, filter_scale: float, output_scale: float) -> tuple[float, int, int]:
    """(float product of the scales, multiplier, shift): the same for every run of a layer, so cached."""
    product = float(np.float32(input_scale) * np.float32(filter_scale))
    multiplier, shift = quantize_multiplier(product / float(np.float32(output_scale)))
    return product, multiplier, shift


# numpy applies a per-channel vector to a [..., C] array one C-long inner loop at a time; with few channels
# that per-loop overhead dominates, so such arrays are viewed as rows of about this many elements (whole
# pixels) with the vector tiled to match.
_SHORT_CHANNELS = 256
_ROW_ELEMENTS = 8192


def channel_rows_view(array: np.ndarray) -> tuple[np.ndarray, int]:
    """A contiguous channels-last array as long rows of ``repeat`` whole pixels (1: unchanged)."""
    channels = array.shape[-1]
    if array.ndim < 2 or channels >= _SHORT_CHANNELS or not array.flags.c_contiguous or array.size == 0:
        return array, 1
    pixels = array.size // channels
    limit = max(1, _ROW_ELEMENTS // channels)
    # Whole image rows when they fit, otherwise a power-of-two share of the pixels.
    repeat = array.shape[-2] if array.ndim >= 3 and array.shape[-2] <= limit else math.gcd(pixels, 4096)
    while repeat > limit:
        repeat //= 2
    if repeat <= 1:
        return array, 1
    return array.reshape(-1, repeat * channels), repeat


# Error bounds of the estimate in ``requantize``.  In float32, with |offset| <= 2**9 (plus the int8 shift of
# 128), every estimate that can land inside an 8-bit output range is within 1.4 * 2**-12 of the exact value
# (anything beyond is clamped whatever its error); the tolerance leaves a factor of about 3.  float64 keeps
# the estimate within 2**-30 for any int32 accumulator.
_F32_OFFSET_LIMIT = 2.0**9
_F32_TOLERANCE = 2.0**-10
_F64_TOLERANCE = 2.0**-20


def requantize(acc: np.ndarray, bias: np.ndarray | None, multipliers: np.ndarray, shifts: np.ndarray,
               out: OutputSpec, activation: int) -> np.ndarray:
    """clamp(multiply_by_quantized_multiplier(acc + bias) + zero_point), bit-exact, for a whole layer.

    ``acc`` holds exact integer accumulators, channels last (float32 when
    they are below 2**24, else float64 or ints); ``multipliers``/``shifts``
    have one entry per channel or a single one.

    The fixed-point kernel rounds twice: h = floor(x*m/2**31 + 1/2), then
    r = h / 2**e rounded half away from zero (e = -shift > 0).  The two
    collapse into one floor: r = floor(x*real + 1/2 + (1/2 - t) / 2**e) with
    real = m * 2**(shift-31) and t = [h < 0], which is exactly [x < 0]
    (x < -1 when m = 2**30) because x*m = -2**30 has no other integer root.
    So one float estimate per element, offset by the tolerance, decides every
    output whose fraction is not within float error of an integer; those few
    are redone with the integer kernel.  Estimates are clamped to the output
    range's half-integer ends first, which settles everything outside it
    (and keeps it away from the tie test).  With a clamp floor at or above
    the zero point every x < 0 ends at the floor, so t is only computed when
    the activation lets negative values through.
    """
    acc = np.ascontiguousarray(acc)
    channels = acc.shape[-1]
    use_f32 = acc.dtype == np.float32
    rows, repeat = channel_rows_view(acc)
    plan = _requantize_plan(tuple(multipliers.tolist()), tuple(shifts.tolist()),
                            None if bias is None else bias.astype(np.int32).tobytes(), channels, repeat,
                            float(out.scale), int(out.zero_point), out.dtype.str, int(activation), use_f32)
    result = np.empty(acc.shape, dtype=np.uint8 if plan.truncate else out.dtype)
    if acc.size:
        rows = rows.reshape(-1, rows.shape[-1])
        results = result.reshape(rows.shape)
        block = max(1, _REQUANTIZE_BLOCK_BYTES // (rows.shape[1] * np.dtype(plan.dtype).itemsize))
        exact = ExactRequantizer(bias, multipliers, shifts, out.zero_point, channels)
        for start in range(0, rows.shape[0], block):
            requantize_rows(rows[start:start + block], results[start:start + block], plan, exact)
    if plan.byte_shift:
        result = np.bitwise_xor(result, np.uint8(plan.byte_shift), out=result).view(np.int8)
    return result


# ``requantize`` works through the accumulators in blocks of about this many bytes of estimates, so its
# half-dozen passes run in cache instead of each streaming the whole layer through memory.
_REQUANTIZE_BLOCK_BYTES = 512 * 1024


@dataclass(frozen=True, slots=True)
class ExactRequantizer:
    """The integer kernel for the few accumulators the float estimate of ``requantize`` cannot decide."""

    bias: np.ndarray | None
    multipliers: np.ndarray
    shifts: np.ndarray
    zero_point: int
    channels: int

    def __call__(self, values: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """``fixed_point_multiply(acc + bias) + zero_point`` of accumulators at flat ``positions`` of whole pixels."""
        channel = positions % self.channels
        exact = values.astype(np.int64)
        if self.bias is not None:
            exact += self.bias.astype(np.int64)[channel]
        pick = channel if self.multipliers.size > 1 else 0
        return fixed_point_multiply(exact, self.multipliers[pick], self.shifts[pick]) + self.zero_point


def requantize_rows(rows: np.ndarray, result: np.ndarray, plan: RequantizePlan, exact: ExactRequantizer) -> None:
    """``requantize`` of contiguous rows of whole pixels into ``result`` (before the int8 flip)."""
    estimate = np.multiply(rows, plan.real, dtype=plan.dtype)
    estimate += plan.offset
    if plan.signed_rounding:
        np.subtract(estimate, plan.step, out=estimate, where=rows < plan.negative_below)
    np.clip(estimate, plan.low + 0.5 + plan.byte_shift, plan.high + 0.5 + plan.byte_shift, out=estimate)
    if plan.truncate:
        np.copyto(result, estimate, casting="unsafe")
    else:
        np.copyto(result, np.floor(estimate), casting="unsafe")
    estimate -= result  # the fraction: below 2 * tolerance the estimate cannot tell which integer it is
    near = np.flatnonzero(estimate < plan.near_limit)
    if near.size:
        fixed = exact(rows.reshape(-1)[near], near)
        result.reshape(-1)[near] = np.clip(fixed, plan.low, plan.high) + plan.byte_shift


@dataclass(frozen=True, slots=True)
class RequantizePlan:
    """The per-layer constants of ``requantize``: the same for every run of a layer, so computed once."""

    dtype: type
    real: np.ndarray | float  # per-channel vectors tiled to the row view, or scalars
    offset: np.ndarray | float
    step: np.ndarray | float
    negative_below: np.ndarray | float
    signed_rounding: bool
    low: int
    high: int
    byte_shift: int
    truncate: bool
    near_limit: float


@functools.lru_cache(maxsize=256)
def _requantize_plan(multipliers: tuple[int, ...], shifts: tuple[int, ...], bias_bytes: bytes | None,
                     channels: int, repeat: int, out_scale: float, zero_point: int, dtype_str: str,
                     activation: int, float32_accumulators: bool) -> RequantizePlan:
    out_dtype = np.dtype(dtype_str)
    m = np.asarray(multipliers, dtype=np.int64)
    sh = np.asarray(shifts, dtype=np.int64)
    real = np.ldexp(m.astype(np.float64), sh - 31)
    half_step = np.where(sh < 0, np.ldexp(0.5, np.minimum(sh, 0)), 0.0)  # (1/2) / 2**e
    low, high = activation_range_quantized(activation, out_scale, zero_point, out_dtype)
    signed_rounding = low < zero_point and bool(np.any(sh < 0))
    bias = None if bias_bytes is None else np.frombuffer(bias_bytes, dtype=np.int32).astype(np.float64)
    base = half_step + zero_point + (0.0 if bias is None else bias * real)
    use_f32 = float32_accumulators and out_dtype.itemsize == 1 and float(np.abs(base).max()) <= _F32_OFFSET_LIMIT
    negative_below = np.where(m == 2**30, -1.0, 0.0) - (0.0 if bias is None else bias)  # t = [acc < this]
    if signed_rounding and float(np.abs(negative_below).max()) > FLOAT32_EXACT:
        use_f32 = False
    dtype = np.float32 if use_f32 else np.float64
    tolerance = _F32_TOLERANCE if use_f32 else _F64_TOLERANCE
    # 8-bit results are produced as uint8 by truncation (a floor for the positive values the clamp leaves);
    # int8 is shifted by 128 for that and flipped back bitwise at the end.
    byte_shift = 128 if out_dtype == np.int8 else 0
    offset = base + (0.5 + tolerance + byte_shift)

    def fit(vector: np.ndarray) -> np.ndarray | float:
        vector = np.atleast_1d(vector).astype(dtype)
        if vector.size == 1:
            return dtype(vector[0])
        tiled = np.tile(vector, repeat) if vector.size == channels and repeat > 1 else vector
        tiled.setflags(write=False)
        return tiled

    return RequantizePlan(dtype, fit(real), fit(offset), fit(2.0 * half_step), fit(negative_below),
                          signed_rounding, int(low), int(high), byte_shift, out_dtype.itemsize == 1,
                          float(2.0 * tolerance))


def fixed_point_multiply(x: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """``multiply_by_quantized_multiplier`` for int64 ``x`` (|x| < 2**31) in three integer operations.

    With e = -shift >= 0 the two roundings are one floor (see ``requantize``):
    r = (x*m + 2**(30+e) + [e > 0] * (2**30 - t * 2**31)) >> (31 + e), t = [x < 0]
    ([x < -1] when m = 2**30); x*m stays below 2**62.  Left shifts use the
    general kernel.
    """
    if np.ndim(multipliers) == 0:  # per-tensor: the constants in Python integers
        multiplier, shift = int(multipliers), int(shifts)
        if shift > 0:
            return multiply_by_quantized_multiplier(x, multiplier, shift)
        exponent = -shift
        product = x * multiplier + ((1 << (30 + exponent)) + ((1 << 30) if exponent else 0))
        if exponent:
            product -= np.where(x < (-1 if multiplier == 2**30 else 0), np.int64(1 << 31), np.int64(0))
        return product >> (31 + exponent)
    if np.any(shifts > 0):
        return multiply_by_quantized_multiplier(x, multipliers, shifts)
    exponent = -shifts.astype(np.int64)
    multipliers = multipliers.astype(np.int64)
    negative = x < np.where(multipliers == 2**30, -1, 0)
    rounding = np.left_shift(np.int64(1), 30 + exponent)
    rounding = rounding + np.where(exponent > 0, np.where(negative, -(1 << 30), 1 << 30), 0)
    return np.right_shift(x * multipliers + rounding, 31 + exponent)


@dataclass(frozen=True, slots=True)
class FloatRowFinish:
    """Bias and fused activation for float32 accumulators given as whole output rows ([..., ow * C]).

    The bias is tiled over a row once so numpy adds it in long inner loops
    (a per-channel vector of a few channels would cost one short loop per
    pixel); depthwise convolutions finish each block of rows while it is
    still in cache.
    """

    bias_row: np.ndarray | None
    low: float
    high: float
    clamp: bool

    @classmethod
    def of(cls, bias: np.ndarray | None, activation: int, out_w: int) -> FloatRowFinish:
        low, high = activation_range_float(activation)
        bias_row = np.tile(bias, out_w) if bias is not None and bias.size else None
        return cls(bias_row, low, high, bool(activation))

    def __call__(self, rows: np.ndarray) -> None:
        """Finish ``rows`` in place."""
        if self.bias_row is not None:
            np.add(rows, self.bias_row, out=rows)
        if self.clamp:
            np.clip(rows, self.low, self.high, out=rows)


def float_finish(acc: np.ndarray, bias: np.ndarray | None, activation: int, out: OutputSpec) -> np.ndarray:
    """Add the bias, clamp to the fused activation, round to the output type (float16 rounds last).

    ``acc`` is a fresh float32 array owned by the caller, so it is updated in place.
    """
    rows, repeat = channel_rows_view(acc)
    FloatRowFinish.of(bias, activation, repeat)(rows)
    return acc.astype(out.dtype, copy=False)


def quant_finish(ctx: OpContext, acc: np.ndarray, input_: Tensor, filt: Tensor, bias: Tensor | None,
                 activation: int) -> np.ndarray:
    """Exact integer accumulators + I32 bias, requantized to the output and clamped."""
    out = ctx.output()
    multipliers, shifts = conv_multipliers(input_, filt, bias, out, acc.shape[-1])
    return requantize(acc, None if bias is None else bias.value, multipliers, shifts, out, activation)


def finish(ctx: OpContext, acc: np.ndarray, input_: Tensor, filt: Tensor, bias: Tensor | None,
           activation: int) -> np.ndarray:
    """Bias, activation and output type for float or exact-integer accumulators."""
    if input_.type in QUANT8:
        return quant_finish(ctx, acc, input_, filt, bias, activation)
    return float_finish(acc, float_bias(bias), activation, ctx.output())


def float_bias(bias: Tensor | None) -> np.ndarray | None:
    return None if bias is None else float_array(bias)


def check_bias(name: str, bias: Tensor, channels: int) -> None:
    if bias.value.shape != (channels,):
        raise op_failure(f"{name}: bias shape {list(bias.value.shape)} does not match {channels} output channels")


# --------------------------------------------------------------------------- CONV_2D


@dataclass(frozen=True, slots=True)
class ConvArgs:
    """The scalar inputs of a CONV_2D-shaped operation after the spatial ones."""

    spatial: SpatialArgs
    activation: int
    nchw: bool
    dilation_hw: tuple[int, int]


def _conv_args(ctx: OpContext) -> ConvArgs:
    # explicit: in, filter, bias, 4 pads, 2 strides, act [, layout, 2 dilations] (10/11/13 inputs);
    # implicit: in, filter, bias, scheme, 2 strides, act [, layout, 2 dilations] (7/8/10 inputs).
    explicit = ctx.num_inputs >= 10 and scalar_is_int32(ctx, 7)
    spatial = read_spatial_args(ctx, 3, explicit)
    i = spatial.next_index
    dilation_w, dilation_h = int(ctx.scalar(i + 2, 1)), int(ctx.scalar(i + 3, 1))
    return ConvArgs(spatial, int(ctx.scalar(i)), read_layout(ctx, i + 1), (dilation_h, dilation_w))


def constant_args(ctx: OpContext, parse: Callable[[OpContext], ArgsT]) -> ArgsT:
    """The scalar arguments (inputs 3 on), parsed once when they are model constants, as they nearly always are."""
    if ctx.constant_from(3):
        return ctx.memoized(parse, lambda: parse(ctx))  # type: ignore[return-value]
    return parse(ctx)


def plan_for(ctx: OpContext, key: object, build: Callable[[], PlanT]) -> PlanT:
    """``build()``, kept across executions when every input but the first (filter, bias, arguments) is a
    model constant; ``key`` names what else it depends on (the input's shape).  Otherwise built each time."""
    if ctx.constant_from(1):
        return ctx.memoized(key, build)  # type: ignore[return-value]
    return build()


def conv_inputs(ctx: OpContext, args: ConvArgs) -> tuple[Tensor, Tensor, Tensor | None, np.ndarray]:
    """Input, filter, optional bias, and the input's values in NHWC (both must be 4-D)."""
    input_, filt = ctx.tensor(0), ctx.tensor(1)
    bias = ctx.tensor(2) if ctx.has(2) else None
    require_rank4(ctx.name, input=input_.value, filter=filt.value)
    return input_, filt, bias, to_nhwc(input_.value, args.nchw)


def compute_operands(input_: Tensor, filt: Tensor, x_raw: np.ndarray,
                     window: Window) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Padded float32 input, float32 filter, and for quantized inputs the bound of their integer products.

    Quantized operands are zero-point adjusted (exact small integers); floats
    are widened to float32.
    """
    if input_.type in QUANT8:
        x = padded_float32(x_raw, window, input_.zero_point)
        return x, filter_values(filt), value_bound(input_) * value_bound(filt)
    return padded_float32(x_raw, window), filter_values(filt), None


@dataclass(frozen=True, slots=True)
class ConvPlan:
    """What a CONV_2D derives from its filter, bias, arguments and input shape: checked and worked out once."""

    window: Window
    out_hw: tuple[int, int]
    finish: FloatRowFinish | None  # float outputs only


def conv_plan(ctx: OpContext, args: ConvArgs, input_: Tensor, filt: Tensor, bias: Tensor | None,
              x_shape: tuple[int, ...]) -> ConvPlan:
    channels_out, k_h, k_w, channels_in = filt.value.shape
    if x_shape[3] != channels_in:
        raise op_failure(f"{ctx.name}: input depth {x_shape[3]} does not match filter depth {channels_in}")
    if bias is not None:
        check_bias(ctx.name, bias, channels_out)
    in_hw = (x_shape[1], x_shape[2])
    window = resolve_window(ctx.name, args.spatial, in_hw, (k_h, k_w), args.dilation_hw)
    out_hw = output_hw(ctx.name, in_hw, (k_h, k_w), window)
    finish_rows = None if input_.type in QUANT8 else FloatRowFinish.of(float_bias(bias), args.activation, out_hw[1])
    return ConvPlan(window, out_hw, finish_rows)


def _conv2d(ctx: OpContext, args: ConvArgs) -> np.ndarray:
    input_, filt, bias, x_raw = conv_inputs(ctx, args)
    plan = plan_for(ctx, ("conv", x_raw.shape), lambda: conv_plan(ctx, args, input_, filt, bias, x_raw.shape))
    xp, w, bound = compute_operands(input_, filt, x_raw, plan.window)
    if bound is not None:
        acc = conv_accumulate(xp, w, plan.window, plan.out_hw, bound)
        return from_nhwc(quant_finish(ctx, acc, input_, filt, bias, args.activation), args.nchw)
    acc = float_conv(xp, w, plan.window, plan.out_hw, plan.finish)
    return from_nhwc(acc.astype(ctx.output().dtype, copy=False), args.nchw)


@register_op(Op.CONV_2D, types=CONV_TYPES)
def conv_2d(ctx: OpContext) -> list[np.ndarray]:
    return [_conv2d(ctx, constant_args(ctx, _conv_args))]


# --------------------------------------------------------------------------- DEPTHWISE_CONV_2D


def _depthwise_args(ctx: OpContext) -> tuple[ConvArgs, int]:
    # explicit: in, filter, bias, 4 pads, 2 strides, multiplier, act [, layout, 2 dilations] (11/12/14);
    # implicit: in, filter, bias, scheme, 2 strides, multiplier, act [, layout, 2 dilations] (8/9/11).
    explicit = ctx.num_inputs >= 11 and scalar_is_int32(ctx, 8)
    spatial = read_spatial_args(ctx, 3, explicit)
    i = spatial.next_index
    dilation_w, dilation_h = int(ctx.scalar(i + 3, 1)), int(ctx.scalar(i + 4, 1))
    args = ConvArgs(spatial, int(ctx.scalar(i + 1)), read_layout(ctx, i + 2), (dilation_h, dilation_w))
    return args, int(ctx.scalar(i))


# Depthwise convolutions run in blocks of output rows: the input rows a block reads are copied into a small
# zero-bordered strip (padding, W-stride phases and zero-point adjustment in that one copy), summed into the
# output block, and the float bias and activation are applied before the block leaves the cache.  Larger
# strips pay less per-block overhead, smaller ones stay in L2; about this many bytes balances the two.
_STRIP_BYTES = 512 * 1024
# The einsum's innermost axis is cut into runs of whole pixels of at most this many bytes, so that the
# tap row it multiplies by (the same for every run) stays in L1 next to the input and output runs.
_TAP_RUN_BYTES = 8 * 1024


@dataclass(frozen=True, slots=True)
class PhaseColumns:
    """The input columns of one W-stride phase: input ``first_column``, ``first_column + stride``, ...
    land at phase columns ``q_first..q_last``; the phase's other columns are padding."""

    phase: int
    q_first: int
    q_last: int
    first_column: int


def phase_columns(in_w: int, window: Window, width_q: int) -> tuple[PhaseColumns, ...]:
    """Padded column q*stride + r is input column q*stride + r - pad_left: where each phase holds input."""
    step, left = window.stride_w, window.pad_left
    phases = []
    for r in range(step):
        q_first = max(0, -(-(left - r) // step))
        q_last = min(width_q - 1, (left + in_w - 1 - r) // step)
        phases.append(PhaseColumns(r, q_first, q_last, q_first * step + r - left))
    return tuple(phases)


@dataclass(frozen=True, slots=True)
class DepthwiseGeometry:
    """Where a depthwise convolution reads, in the phase-split layout of its input strips.

    Padded column q*stride + r is element q of phase r, so a strided walk
    along W becomes a contiguous one inside a phase; ``width_q`` columns per
    phase cover the padded width and every column a filter tap reaches.
    ``blocks_q`` is how many phase columns the (dilated) filter spans.
    """

    window: Window
    filter_hw: tuple[int, int]
    out_hw: tuple[int, int]
    blocks_q: int
    width_q: int
    phases: tuple[PhaseColumns, ...]

    @classmethod
    def of(cls, in_w: int, filter_hw: tuple[int, int], window: Window,
           out_hw: tuple[int, int]) -> DepthwiseGeometry:
        step = window.stride_w
        blocks_q = (filter_hw[1] - 1) * window.dilation_w // step + 1
        padded_w = in_w + window.pad_left + window.pad_right
        width_q = max(-(-padded_w // step), out_hw[1] + blocks_q - 1)
        return cls(window, filter_hw, out_hw, blocks_q, width_q, phase_columns(in_w, window, width_q))

    @property
    def extent_h(self) -> int:
        return (self.filter_hw[0] - 1) * self.window.dilation_h + 1

    def rows_per_block(self, strip_row_bytes: int) -> int:
        """Output rows per block so that the input strip is about ``_STRIP_BYTES``."""
        strip_rows = max(_STRIP_BYTES // max(strip_row_bytes, 1), self.extent_h)
        return max(1, min(self.out_hw[0], (strip_rows - self.extent_h) // self.window.stride_h + 1))

    def strip_rows(self, out_rows: int) -> int:
        return (out_rows - 1) * self.window.stride_h + self.extent_h


def zero_padding_columns(strip: np.ndarray, geometry: DepthwiseGeometry) -> None:
    """Zero the strip columns no input column lands in; ``fill_strip`` never writes them."""
    for columns in geometry.phases:
        if columns.q_last < columns.q_first:
            strip[:, :, columns.phase] = 0
            continue
        strip[:, :, columns.phase, :columns.q_first] = 0
        strip[:, :, columns.phase, columns.q_last + 1:] = 0


def fill_strip(strip: np.ndarray, x: np.ndarray, first_row: int, geometry: DepthwiseGeometry,
               zero_point: int) -> None:
    """Copy padded input rows ``first_row...`` of NHWC ``x`` into ``strip`` [N, rows, stride, width_q, C].

    ``x - zero_point`` is converted to the strip's dtype on the way.  Rows
    outside the input are zeroed; padding columns are left as they are
    (``zero_padding_columns`` zeroed them once for every block).
    """
    h = x.shape[1]
    rows = strip.shape[1]
    low, high = max(first_row, 0), min(first_row + rows, h)
    if low > first_row:
        strip[:, :min(low - first_row, rows)] = 0
    if high < first_row + rows:
        strip[:, max(high - first_row, 0):] = 0
    if high <= low:
        return
    step, dtype = geometry.window.stride_w, strip.dtype.type
    for columns in geometry.phases:
        if columns.q_last < columns.q_first:
            continue
        stop = columns.first_column + step * (columns.q_last - columns.q_first) + 1
        source = x[:, low:high, columns.first_column:stop:step, :]
        target = strip[:, low - first_row:high - first_row, columns.phase, columns.q_first:columns.q_last + 1, :]
        if zero_point:
            np.subtract(source, dtype(zero_point), out=target, dtype=dtype)
        else:
            target[...] = source


def tap_run(w: np.ndarray, geometry: DepthwiseGeometry, run_pixels: int) -> np.ndarray:
    """The [kh, kw, C] filter as [kh, blocks_q, stride, run_pixels * C]: one multiplier per strip element.

    Filter column j reads phase r = (j*dilation) % stride at offset
    q = (j*dilation) // stride; (q, r) pairs no column maps to are zero taps.
    """
    k_h, k_w, channels = w.shape
    step = geometry.window.stride_w
    taps = np.zeros((k_h, geometry.blocks_q, step, run_pixels, channels), dtype=w.dtype)
    for j in range(k_w):
        q, r = divmod(j * geometry.window.dilation_w, step)
        taps[:, q, r] = w[:, j, None, :]
    return taps.reshape(k_h, geometry.blocks_q, step, run_pixels * channels)


def pixels_per_run(out_w: int, channels: int, itemsize: int) -> int:
    """The largest divisor of the output width whose pixels fit in ``_TAP_RUN_BYTES`` (at least one)."""
    limit = max(1, _TAP_RUN_BYTES // max(channels * itemsize, 1))
    return max(d for d in range(1, min(out_w, limit) + 1) if out_w % d == 0)


def strip_view(strip: np.ndarray, geometry: DepthwiseGeometry, out_rows: int, run_pixels: int) -> np.ndarray:
    """Every input element each tap multiplies, [N, rows, kh, blocks_q, stride, runs, run], over ``strip``.

    Output pixel t = run * run_pixels + l // C of a row reads, for tap (i, q, r),
    strip row y*stride_h + i*dilation_h, phase r, column q + t: in the flat
    phase row that is offset (q * C) + (run * run_pixels * C) + l, so the
    innermost axis is contiguous.
    """
    n, _, step, _, channels = strip.shape
    window, out_w = geometry.window, geometry.out_hw[1]
    size, row = strip.itemsize, strip.strides[1]
    run = run_pixels * channels
    view = np.ndarray(
        shape=(n, out_rows, geometry.filter_hw[0], geometry.blocks_q, step, out_w // run_pixels, run),
        dtype=strip.dtype, buffer=strip,
        strides=(strip.strides[0], window.stride_h * row, window.dilation_h * row, channels * size,
                 strip.strides[2], run * size, size))
    view.flags.writeable = False  # overlapping windows: a write through the view would change several taps
    return view



@dataclass(frozen=True, slots=True)
class DepthwiseKernel:
    """A depthwise filter laid out for ``einsum`` over strips of one input geometry, in one accumulation dtype."""

    geometry: DepthwiseGeometry
    dtype: type
    run_pixels: int
    taps: np.ndarray
    block: int  # output rows per strip

    @classmethod
    def of(cls, w: np.ndarray, geometry: DepthwiseGeometry, dtype: type, batches: int) -> DepthwiseKernel:
        channels = w.shape[2]
        itemsize = np.dtype(dtype).itemsize
        run_pixels = pixels_per_run(geometry.out_hw[1], channels, itemsize)
        taps = tap_run(w.astype(dtype, copy=False), geometry, run_pixels)
        block = geometry.rows_per_block(batches * geometry.window.stride_w * geometry.width_q * channels * itemsize)
        return cls(geometry, dtype, run_pixels, taps, block)

    def accumulate(self, x: np.ndarray, zero_point: int, finish_block: BlockFinish | None = None) -> np.ndarray:
        """Depthwise sum of NHWC ``x - zero_point``: [N, oh, ow, C].

        Each block of output rows is one ``einsum`` over a strided view of its
        input strip whose innermost axis is a run of whole output pixels, so
        every filter tap is a single fused multiply-add pass.  ``finish_block``
        gets each finished block as [N, rows, ow * C] (in place), while it is
        still in cache.
        """
        n, _, _, channels = x.shape
        geometry, block, run_pixels = self.geometry, self.block, self.run_pixels
        (o_h, o_w), step = geometry.out_hw, geometry.window.stride_w
        strip = np.empty((n, geometry.strip_rows(block), step, geometry.width_q, channels), dtype=self.dtype)
        zero_padding_columns(strip, geometry)
        acc = np.empty((n, o_h, o_w * channels), dtype=self.dtype)
        for y0 in range(0, o_h, block):
            rows = min(block, o_h - y0)
            fill_strip(strip, x, y0 * geometry.window.stride_h - geometry.window.pad_top, geometry, zero_point)
            out = acc[:, y0:y0 + rows]
            np.einsum("nyiqrkl,iqrl->nykl", strip_view(strip, geometry, rows, run_pixels), self.taps,
                      out=out.reshape(n, rows, o_w // run_pixels, run_pixels * channels))
            if finish_block is not None:
                finish_block(out)
        return acc.reshape(n, o_h, o_w, channels)


def depthwise_accumulate(x: np.ndarray, w: np.ndarray, geometry: DepthwiseGeometry, zero_point: int,
                         dtype: type, finish_block: BlockFinish | None = None) -> np.ndarray:
    """Depthwise sum of NHWC ``x - zero_point`` with [kh, kw, C] ``w`` in ``dtype``: [N, oh, ow, C]
    (``DepthwiseKernel.accumulate``)."""
    return DepthwiseKernel.of(w, geometry, dtype, x.shape[0]).accumulate(x, zero_point, finish_block)


@dataclass(frozen=True, slots=True)
class DepthwisePlan:
    """What a DEPTHWISE_CONV_2D derives from its filter, bias, arguments and input shape, once."""

    kernel: DepthwiseKernel
    finish: FloatRowFinish | None  # float outputs only


def depthwise_plan(ctx: OpContext, args: ConvArgs, multiplier: int, input_: Tensor, filt: Tensor,
                   bias: Tensor | None, x_shape: tuple[int, ...]) -> DepthwisePlan:
    """Output channel ``c * multiplier + m`` reads input channel ``c`` (NNAPI's depthwise rule)."""
    one, k_h, k_w, channels_out = filt.value.shape
    if one != 1:
        raise op_failure(f"{ctx.name}: filter must have shape [1, h, w, out], got {list(filt.value.shape)}")
    if multiplier < 1 or x_shape[3] * multiplier != channels_out:
        raise op_failure(f"{ctx.name}: input depth {x_shape[3]} x depth multiplier {multiplier} "
                         f"!= filter depth {channels_out}")
    if bias is not None:
        check_bias(ctx.name, bias, channels_out)
    in_hw = (x_shape[1], x_shape[2])
    window = resolve_window(ctx.name, args.spatial, in_hw, (k_h, k_w), args.dilation_hw)
    _check_padding_within_filter(ctx.name, window, (k_h, k_w))
    geometry = DepthwiseGeometry.of(in_hw[1], (k_h, k_w), window, output_hw(ctx.name, in_hw, (k_h, k_w), window))
    w = filter_values(filt)[0]
    if input_.type in QUANT8:
        dtype: type = np.float32
        if k_h * k_w * value_bound(input_) * value_bound(filt) > FLOAT32_EXACT:
            dtype = np.float64  # too many taps for exact float32 sums
        return DepthwisePlan(DepthwiseKernel.of(w, geometry, dtype, x_shape[0]), None)
    finish_rows = FloatRowFinish.of(float_bias(bias), args.activation, geometry.out_hw[1])
    return DepthwisePlan(DepthwiseKernel.of(w, geometry, np.float32, x_shape[0]), finish_rows)


def _depthwise(ctx: OpContext, args: ConvArgs, multiplier: int) -> np.ndarray:
    input_, filt, bias, x_raw = conv_inputs(ctx, args)
    plan = plan_for(ctx, ("depthwise", x_raw.shape),
                    lambda: depthwise_plan(ctx, args, multiplier, input_, filt, bias, x_raw.shape))
    if multiplier > 1:
        x_raw = np.repeat(x_raw, multiplier, axis=3)
    if plan.finish is None:
        acc = plan.kernel.accumulate(x_raw, input_.zero_point)
        result = quant_finish(ctx, acc, input_, filt, bias, args.activation)
    else:
        result = plan.kernel.accumulate(x_raw, 0, plan.finish).astype(ctx.output().dtype, copy=False)
    return from_nhwc(result, args.nchw)


def _check_padding_within_filter(name: str, window: Window, filter_hw: tuple[int, int]) -> None:
    """Android ``depthwiseConvPrepare``: each padding must be smaller than the dilated filter extent."""
    extent_h = (filter_hw[0] - 1) * window.dilation_h + 1
    extent_w = (filter_hw[1] - 1) * window.dilation_w + 1
    if max(window.pad_top, window.pad_bottom) >= extent_h or max(window.pad_left, window.pad_right) >= extent_w:
        raise op_failure(f"{name}: padding must be smaller than the filter extent {extent_h}x{extent_w}")


@register_op(Op.DEPTHWISE_CONV_2D, types=CONV_TYPES)
def depthwise_conv_2d(ctx: OpContext) -> list[np.ndarray]:
    args, multiplier = constant_args(ctx, _depthwise_args)
    return [_depthwise(ctx, args, multiplier)]


# --------------------------------------------------------------------------- GROUPED_CONV_2D


def _grouped_args(ctx: OpContext) -> tuple[ConvArgs, int]:
    # explicit: in, filter, bias, 4 pads, 2 strides, groups, act, layout (12 inputs);
    # implicit: in, filter, bias, scheme, 2 strides, groups, act, layout (9 inputs).
    spatial = read_spatial_args(ctx, 3, ctx.num_inputs >= 12)
    i = spatial.next_index
    return ConvArgs(spatial, int(ctx.scalar(i + 1)), read_layout(ctx, i + 2), (1, 1)), int(ctx.scalar(i))


def _grouped(ctx: OpContext, args: ConvArgs, groups: int) -> np.ndarray:
    """Each group convolves its slice of input channels with its slice of filters (Android GroupedConv2D)."""
    input_, filt, bias, x_raw = conv_inputs(ctx, args)
    channels_out, k_h, k_w, group_depth = filt.value.shape
    if groups < 1 or channels_out % groups or x_raw.shape[3] != group_depth * groups:
        raise op_failure(f"{ctx.name}: {groups} groups do not divide input depth {x_raw.shape[3]} "
                         f"and filter {list(filt.value.shape)}")
    if bias is not None:
        check_bias(ctx.name, bias, channels_out)
    in_hw = (x_raw.shape[1], x_raw.shape[2])
    window = resolve_window(ctx.name, args.spatial, in_hw, (k_h, k_w))
    out_hw = output_hw(ctx.name, in_hw, (k_h, k_w), window)
    xp, w, bound = compute_operands(input_, filt, x_raw, window)
    out_per_group = channels_out // groups
    parts = [
        conv_accumulate(xp[..., g * group_depth:(g + 1) * group_depth],
                        w[g * out_per_group:(g + 1) * out_per_group], window, out_hw, bound)
        for g in range(groups)
    ]
    acc = np.concatenate(parts, axis=3)
    return from_nhwc(finish(ctx, acc, input_, filt, bias, args.activation), args.nchw)


@register_op(Op.GROUPED_CONV_2D, types=CONV_TYPES)
def grouped_conv_2d(ctx: OpContext) -> list[np.ndarray]:
    args, groups = _grouped_args(ctx)
    return [_grouped(ctx, args, groups)]
