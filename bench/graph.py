"""Reading a CaseModel's operations the way the bench peers need them (geometry, activations).

The numpy baseline walks a MobileNet-shaped
``CaseModel``; this module decodes the NNAPI argument conventions for it:
explicit vs implicit padding, strides, window size, depthwise
multiplier, fused activation.  Padding follows Android's
``calculateExplicitPadding`` (SAME puts the odd extra row or column at the
tail).  Layouts other than NHWC and dilation are refused, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vts.hal.enums import OperationType
from vts.model.casemodel import CaseModel, CaseOperand, CaseOperation

PADDING_VALID = 2


@dataclass(frozen=True, slots=True)
class Window:
    """Padding (top, bottom, left, right), strides (h, w), kernel (h, w) and fused activation of one op."""

    pads: tuple[int, int, int, int]
    strides: tuple[int, int]
    kernel: tuple[int, int]
    activation: int


def implicit_padding(in_size: int, stride: int, kernel: int, scheme: int) -> tuple[int, int]:
    if scheme == PADDING_VALID:
        return 0, 0
    out_size = (in_size + stride - 1) // stride
    needed = max(0, (out_size - 1) * stride + kernel - in_size)
    return needed // 2, needed - needed // 2


def operand(model: CaseModel, index: int) -> CaseOperand:
    return model.main.operands[index]


def constant(model: CaseModel, index: int) -> np.ndarray:
    value = operand(model, index).value
    if not isinstance(value, np.ndarray):
        raise NotImplementedError(f"operand {operand(model, index).name} is not a constant")
    return value


def scalar(model: CaseModel, index: int) -> int | float:
    return constant(model, index).reshape(-1)[0].item()


def window(model: CaseModel, op: CaseOperation) -> Window:
    """The window of a CONV_2D, DEPTHWISE_CONV_2D or AVERAGE_POOL_2D operation."""
    kind = OperationType(op.type)
    args = op.inputs
    in_dims = operand(model, args[0]).dims
    if kind == OperationType.AVERAGE_POOL_2D:
        base, explicit = 1, len(args) >= 10
    else:
        base, explicit = 3, len(args) >= (11 if kind == OperationType.DEPTHWISE_CONV_2D else 10)
    if explicit:
        left, right, top, bottom, stride_w, stride_h = (int(scalar(model, i)) for i in args[base:base + 6])
        rest = args[base + 6:]
    else:
        scheme, stride_w, stride_h = (int(scalar(model, i)) for i in args[base:base + 3])
        rest = args[base + 3:]
    if kind == OperationType.AVERAGE_POOL_2D:
        kernel = (int(scalar(model, rest[1])), int(scalar(model, rest[0])))
        rest = rest[2:]
    else:
        filt = constant(model, args[1])
        kernel = (filt.shape[1], filt.shape[2])
        if kind == OperationType.DEPTHWISE_CONV_2D:
            if int(scalar(model, rest[0])) != 1:
                raise NotImplementedError("depthwise multiplier other than 1")
            rest = rest[1:]
    if len(rest) > 1 and any(int(scalar(model, i)) not in (0, 1) for i in rest[1:]):
        raise NotImplementedError("NCHW layout or dilation")
    if not explicit:
        top, bottom = implicit_padding(in_dims[1], stride_h, kernel[0], scheme)
        left, right = implicit_padding(in_dims[2], stride_w, kernel[1], scheme)
    return Window((top, bottom, left, right), (stride_h, stride_w), kernel, int(scalar(model, rest[0])))
