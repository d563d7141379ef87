"""TRANSPOSE_CONV_2D: the gradient of CONV_2D, as Android's ``transpose_conv_2d`` computes it.

Every input pixel (h, w) scatters ``in[h, w, :] . filter[k, i, j, :]`` to
output pixel (h*stride_h - pad_top + i, w*stride_w - pad_left + j, k);
contributions landing outside the output are dropped.  The filter is
[out, kh, kw, in] in both layouts.

Inputs: explicit (11) in, filter, bias, pad left/right/top/bottom, stride
w/h, activation, layout; implicit (9) in, filter, bias, I32 output shape [4],
padding scheme, stride w/h, activation, layout.  Implicit paddings come from
Android's ``calculateExplicitPaddingTransposeConv`` on the requested output
size (the tail may go negative to fit the last stride), and the output size
is always ``in*stride + filter - stride - head - tail``.

The scatter is one matmul (every pixel times every filter tap) followed by
kh*kw strided whole-tensor additions.  Quantized inputs accumulate the exact
integer (in - in_zp) * (f - f_zp) products (``exact_matmul``, scattered in
float64 where sums of integers stay exact), add the I32 bias and requantize
per output channel like CONV_2D.
"""

from __future__ import annotations

import numpy as np

from nnvts.drivers.reference.ops.conv import (
    CONV_TYPES,
    PADDING_SAME,
    PADDING_VALID,
    QUANT8,
    check_bias,
    exact_matmul,
    filter_values,
    float_bias,
    float_finish,
    from_nhwc,
    quant_finish,
    read_layout,
    require_rank4,
    to_nhwc,
    value_bound,
    window_slice,
)
from nnvts.drivers.reference.ops.registry import register_op
from nnvts.drivers.reference.tensor import OpContext, op_failure
from vts.hal.enums import OperationType as Op


def transpose_padding(out_size: int, stride: int, filter_size: int, scheme: int) -> tuple[int, int]:
    """Android ``calculateExplicitPaddingTransposeConv``: SAME padding measured on the output size.

    Unlike a forward convolution the tail is not floored at zero: it is
    whatever makes the padded extent end exactly at the last stride.
    """
    if scheme not in (PADDING_SAME, PADDING_VALID):
        raise op_failure(f"TRANSPOSE_CONV_2D: unknown implicit padding scheme {scheme}")
    if scheme == PADDING_VALID:
        return 0, 0
    count = (out_size + stride - 1) // stride
    excess = (count - 1) * stride + filter_size - out_size
    head = excess // 2 if excess > 0 else 0
    return head, excess - head


class TransposeArgs:
    """Paddings (top, bottom, left, right), strides, activation and layout of one operation."""

    __slots__ = ("activation", "nchw", "pads", "strides")

    def __init__(self, ctx: OpContext, filter_hw: tuple[int, int]) -> None:
        if ctx.num_inputs >= 11:
            left, right, top, bottom = (int(ctx.scalar(i)) for i in range(3, 7))
            stride_w, stride_h = int(ctx.scalar(7)), int(ctx.scalar(8))
            self.activation, self.nchw = int(ctx.scalar(9)), read_layout(ctx, 10)
        else:
            shape = ctx.array(3).reshape(-1)
            if ctx.array(3).ndim != 1 or shape.size != 4:
                raise op_failure(f"{ctx.name}: output shape must be a 1-D tensor of 4 values, got {shape.tolist()}")
            scheme, stride_w, stride_h = int(ctx.scalar(4)), int(ctx.scalar(5)), int(ctx.scalar(6))
            self.activation, self.nchw = int(ctx.scalar(7)), read_layout(ctx, 8)
            out_h, out_w = (int(shape[2]), int(shape[3])) if self.nchw else (int(shape[1]), int(shape[2]))
            if stride_w < 1 or stride_h < 1:
                raise op_failure(f"{ctx.name}: strides must be positive, got {stride_w}x{stride_h}")
            left, right = transpose_padding(out_w, stride_w, filter_hw[1], scheme)
            top, bottom = transpose_padding(out_h, stride_h, filter_hw[0], scheme)
        # Android: the head paddings must be non-negative; the tails may be negative.
        if left < 0 or top < 0 or stride_w < 1 or stride_h < 1:
            raise op_failure(f"{ctx.name}: invalid paddings {left},{top} or strides {stride_w}x{stride_h}")
        self.pads = (top, bottom, left, right)
        self.strides = (stride_h, stride_w)


def scatter_accumulate(x: np.ndarray, w: np.ndarray, args: TransposeArgs, out_hw: tuple[int, int],
                       product_bound: int | None = None) -> np.ndarray:
    """Transposed convolution of NHWC ``x`` with [O, kh, kw, C] ``w`` (float32): N, out_h, out_w, O.

    With ``product_bound`` the operands are integers and the result is exact (float64 scatter).
    """
    n, in_h, in_w, c = x.shape
    channels_out, k_h, k_w, _ = w.shape
    (s_h, s_w), (top, _, left, _) = args.strides, args.pads
    filters = w.transpose(1, 2, 0, 3).reshape(k_h * k_w * channels_out, c)
    if product_bound is None:
        taps = x.reshape(-1, c) @ filters.T
    else:
        taps = exact_matmul(x.reshape(-1, c), filters, product_bound).astype(np.float64, copy=False)
    taps = taps.reshape(n, in_h, in_w, k_h, k_w, channels_out)
    full_h = max(s_h * (in_h - 1) + k_h, top + out_hw[0])
    full_w = max(s_w * (in_w - 1) + k_w, left + out_hw[1])
    full = np.zeros((n, full_h, full_w, channels_out), dtype=taps.dtype)
    for i in range(k_h):
        rows = window_slice(i, s_h, in_h)
        for j in range(k_w):
            full[:, rows, window_slice(j, s_w, in_w), :] += taps[:, :, :, i, j, :]
    return full[:, top:top + out_hw[0], left:left + out_hw[1], :]


@register_op(Op.TRANSPOSE_CONV_2D, types=CONV_TYPES)
def transpose_conv_2d(ctx: OpContext) -> list[np.ndarray]:
    input_, filt = ctx.tensor(0), ctx.tensor(1)
    bias = ctx.tensor(2) if ctx.has(2) else None
    require_rank4(ctx.name, filter=filt.value)
    channels_out, k_h, k_w, channels_in = filt.value.shape
    args = TransposeArgs(ctx, (k_h, k_w))
    require_rank4(ctx.name, input=input_.value)
    x_raw = to_nhwc(input_.value, args.nchw)
    _, in_h, in_w, depth = x_raw.shape
    if depth != channels_in or min(in_h, in_w, channels_in, channels_out, k_h, k_w) < 1:
        raise op_failure(f"{ctx.name}: input {list(x_raw.shape)} (NHWC) does not fit filter {list(filt.value.shape)}")
    if bias is not None:
        check_bias(ctx.name, bias, channels_out)
    top, bottom, left, right = args.pads
    out_hw = (in_h * args.strides[0] + k_h - args.strides[0] - top - bottom,
              in_w * args.strides[1] + k_w - args.strides[1] - left - right)
    if min(out_hw) < 1:
        raise op_failure(f"{ctx.name}: computed output size {list(out_hw)} is not positive")
    if input_.type in QUANT8:
        x = x_raw.astype(np.float32) - np.float32(input_.zero_point)
        acc = scatter_accumulate(x, filter_values(filt), args, out_hw, value_bound(input_) * value_bound(filt))
        result = quant_finish(ctx, acc, input_, filt, bias, args.activation)
    else:
        acc = scatter_accumulate(x_raw.astype(np.float32, copy=False), filter_values(filt), args, out_hw)
        result = float_finish(acc, float_bias(bias), args.activation, ctx.output())
    return [np.ascontiguousarray(from_nhwc(result, args.nchw))]
