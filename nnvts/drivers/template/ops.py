"""The template driver's operations: float32 ADD, MUL, RELU and CONV_2D (NHWC), in numpy.

Each operation has a support check (``*_supported``: what the driver claims
in ``get_supported_operations``; everything else is unsupported and the
harness skips it) and a kernel.  Scalar arguments are read from the model's
constants at preparation, so a claimed operation never depends on a
request for its stride or padding.

An AIDL v4 driver is sent models of every feature level up to 8: the operations AIDL added (BATCH_MATMUL
and PACK at feature level 6, MIRROR_PAD and REVERSE at 7, RESHAPE on int32 and RSQRT on quant8 among the
new operand types) are simply absent from ``OPERATIONS`` here, so ``unsupported_reason`` reports them and
the harness skips their cases.  Add a kernel and its support check to claim one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from vts.hal.enums import (
    FusedActivationFunc,
    OperandLifeTime,
    OperandType,
    OperationType,
    PaddingScheme,
    enum_name,
)
from vts.hal.types import Operand, Operation

CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
#: Constants by operand index, decoded at preparation (``device.decode_constants``).
Constants = dict[int, object]


def activate(x: np.ndarray, code: int) -> np.ndarray:
    """The fused activation of NNAPI's FuseCode."""
    if code == FusedActivationFunc.RELU:
        return np.maximum(x, np.float32(0))
    if code == FusedActivationFunc.RELU1:
        return np.clip(x, np.float32(-1), np.float32(1))
    if code == FusedActivationFunc.RELU6:
        return np.clip(x, np.float32(0), np.float32(6))
    return x


def _is_float_tensor(operand: Operand, rank: int | None = None, max_rank: int = 4) -> bool:
    if operand.type != OperandType.TENSOR_FLOAT32:
        return False
    known = len(operand.dimensions)
    return known == rank if rank is not None else known <= max_rank


def _constant_scalar(operand: Operand, kind: OperandType) -> bool:
    return operand.type == kind and operand.lifetime in CONSTANT


def _binary_supported(inputs: Sequence[Operand], outputs: Sequence[Operand]) -> bool:
    return (len(inputs) == 3 and len(outputs) == 1 and _is_float_tensor(inputs[0]) and _is_float_tensor(inputs[1])
            and _constant_scalar(inputs[2], OperandType.INT32) and _is_float_tensor(outputs[0]))


def _relu_supported(inputs: Sequence[Operand], outputs: Sequence[Operand]) -> bool:
    return len(inputs) == 1 and len(outputs) == 1 and _is_float_tensor(inputs[0]) and _is_float_tensor(outputs[0])


def _conv_explicit(inputs: Sequence[Operand]) -> bool:
    """Explicit padding: 10, 11 or 13 inputs with an INT32 at 7 (implicit with 10 has the BOOL layout there)."""
    return len(inputs) in (10, 11, 13) and inputs[7].type == OperandType.INT32


def _conv_supported(inputs: Sequence[Operand], outputs: Sequence[Operand]) -> bool:
    if len(inputs) not in (7, 8, 10, 11, 13) or len(outputs) != 1:
        return False
    if not (_is_float_tensor(inputs[0], 4) and _is_float_tensor(inputs[1], 4) and _is_float_tensor(inputs[2], 1)
            and _is_float_tensor(outputs[0], 4)):
        return False
    scalars = 7 if _conv_explicit(inputs) else 4  # inputs 3 .. scalars+2 are INT32 (paddings, strides, act)
    if not all(_constant_scalar(o, OperandType.INT32) for o in inputs[3:3 + scalars]):
        return False
    rest = inputs[3 + scalars:]
    if rest and not _constant_scalar(rest[0], OperandType.BOOL):  # the layout: NHWC only (checked at preparation)
        return False
    return all(_constant_scalar(o, OperandType.INT32) for o in rest[1:])  # dilations


def add(values: Sequence[object]) -> np.ndarray:
    a, b, act = values
    return activate(np.add(a, b, dtype=np.float32), int(act))  # type: ignore[arg-type]


def mul(values: Sequence[object]) -> np.ndarray:
    a, b, act = values
    return activate(np.multiply(a, b, dtype=np.float32), int(act))  # type: ignore[arg-type]


def relu(values: Sequence[object]) -> np.ndarray:
    return activate(np.asarray(values[0], dtype=np.float32), FusedActivationFunc.RELU)


@dataclass(frozen=True)
class ConvArgs:
    """CONV_2D's scalar arguments, in NNAPI's order turned into (height, width) pairs."""

    padding: tuple[int, int, int, int] | PaddingScheme  # (top, bottom, left, right) or SAME/VALID
    stride: tuple[int, int]
    dilation: tuple[int, int]
    activation: int


def conv_args(values: Sequence[object]) -> ConvArgs:
    """Explicit: in, filter, bias, left, right, top, bottom, stride w, stride h, act [, nchw, dil w, dil h];
    implicit: in, filter, bias, scheme, stride w, stride h, act [, nchw, dil w, dil h]."""
    scalars = [int(v) for v in values[3:] if not isinstance(v, np.ndarray)]  # type: ignore[call-overload]
    if len(values) in (10, 11, 13) and isinstance(values[7], int | np.integer) and not isinstance(values[7], bool):
        left, right, top, bottom, stride_w, stride_h, act = scalars[:7]
        dilation = scalars[8:10] if len(scalars) >= 10 else [1, 1]
        return ConvArgs((top, bottom, left, right), (stride_h, stride_w), (dilation[1], dilation[0]), act)
    scheme, stride_w, stride_h, act = scalars[:4]
    dilation = scalars[5:7] if len(scalars) >= 7 else [1, 1]
    return ConvArgs(PaddingScheme(scheme), (stride_h, stride_w), (dilation[1], dilation[0]), act)


def _same_padding(size: int, stride: int, effective: int) -> tuple[int, int]:
    out = math.ceil(size / stride)
    needed = max(0, (out - 1) * stride + effective - size)
    return needed // 2, needed - needed // 2


def conv_2d(values: Sequence[object]) -> np.ndarray:
    """NHWC convolution with dilation: one matrix product per filter tap, over the strided, dilated window."""
    x, filt, bias = (np.asarray(v, dtype=np.float32) for v in values[:3])
    args = conv_args(values)
    out_c, k_h, k_w, _ = filt.shape
    (s_h, s_w), (d_h, d_w) = args.stride, args.dilation
    eff_h, eff_w = (k_h - 1) * d_h + 1, (k_w - 1) * d_w + 1
    if isinstance(args.padding, PaddingScheme):
        if args.padding == PaddingScheme.SAME:
            (top, bottom), (left, right) = _same_padding(x.shape[1], s_h, eff_h), _same_padding(x.shape[2], s_w, eff_w)
        else:
            top = bottom = left = right = 0
    else:
        top, bottom, left, right = args.padding
    padded = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out_h = (padded.shape[1] - eff_h) // s_h + 1
    out_w = (padded.shape[2] - eff_w) // s_w + 1
    out = np.zeros((x.shape[0], max(out_h, 0), max(out_w, 0), out_c), dtype=np.float32)
    for i in range(k_h):
        for j in range(k_w):
            window = padded[:, i * d_h: i * d_h + (out_h - 1) * s_h + 1: s_h,
                            j * d_w: j * d_w + (out_w - 1) * s_w + 1: s_w, :]
            out += window @ filt[:, i, j, :].T
    return activate(out + bias, args.activation)


@dataclass(frozen=True)
class OpDef:
    supported: Callable[[Sequence[Operand], Sequence[Operand]], bool]
    kernel: Callable[[Sequence[object]], np.ndarray]


OPERATIONS: dict[int, OpDef] = {
    OperationType.ADD: OpDef(_binary_supported, add),
    OperationType.MUL: OpDef(_binary_supported, mul),
    OperationType.RELU: OpDef(_relu_supported, relu),
    OperationType.CONV_2D: OpDef(_conv_supported, conv_2d),
}


def unsupported_reason(op: Operation, operands: Sequence[Operand], constants: Constants) -> str | None:
    """Why this driver does not claim ``op`` (None when it does), naming the operation and its operand type."""
    name = enum_name(OperationType, op.type)
    op_def = OPERATIONS.get(op.type)
    if op_def is None:
        return f"{name}: not implemented by the template driver"
    inputs = [operands[i] for i in op.inputs]
    outputs = [operands[i] for i in op.outputs]
    if not op_def.supported(inputs, outputs):
        kind = enum_name(OperandType, inputs[0].type) if inputs else "no inputs"
        return f"{name} on {kind}: only float32 tensors (rank <= 4, NHWC) with constant scalar arguments"
    if op.type == OperationType.CONV_2D:
        explicit = _conv_explicit(inputs)
        layout = 10 if explicit and len(inputs) > 10 else 7 if not explicit and len(inputs) > 7 else None
        if layout is not None and bool(constants.get(op.inputs[layout], False)):
            return f"{name}: NCHW layout is not implemented by the template driver"
    return None
