"""Reading an NNAPI model the way a translator needs it: operands, constants, and argument conventions.

NNAPI passes an operation's parameters as scalar operands in positional
argument lists whose shape depends on the variant (explicit or implicit
padding, with or without the layout flag and dilation factors).  Engines
want attributes.  ``ModelView`` reads operands and constants of a validated
HAL model; ``conv_window``/``pool_window`` decode the window arguments into
one ``Window`` with padding made explicit, following Android's
``calculateExplicitPadding`` (SAME puts half the excess at the head and the
rest at the tail, measured on the dilated filter).

Anything a translator cannot honour exactly raises ``Unsupported`` with a
reason: a driver answers such an operation unsupported, never guesses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vts.hal.enums import NUMPY_DTYPE, OperandLifeTime, OperandType, OperationType
from vts.hal.types import Model, Operand, Operation, SymmPerChannelQuantParams

PADDING_SAME = 1
PADDING_VALID = 2


class Unsupported(Exception):
    """The translator cannot express this operation (or operand) exactly; the message says why."""


@dataclass(frozen=True, slots=True)
class Window:
    """The geometry of a CONV_2D / DEPTHWISE_CONV_2D / pooling operation, padding made explicit.

    ``pads`` is (top, bottom, left, right); ``kernel`` (height, width) is the
    undilated window; ``nchw`` says the data operand is NCHW (the layout flag).
    """

    pads: tuple[int, int, int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    kernel: tuple[int, int]
    activation: int
    nchw: bool

    def same_pads(self, in_h: int, in_w: int) -> tuple[int, int, int, int]:
        """The pads SAME would give for this window (to tell whether explicit pads mean SAME)."""
        top, bottom = implicit_padding(in_h, self.strides[0], self.kernel[0], self.dilations[0], PADDING_SAME)
        left, right = implicit_padding(in_w, self.strides[1], self.kernel[1], self.dilations[1], PADDING_SAME)
        return top, bottom, left, right


def implicit_padding(in_size: int, stride: int, kernel: int, dilation: int, scheme: int) -> tuple[int, int]:
    """Android's ``calculateExplicitPadding``: (head, tail)."""
    if scheme != PADDING_SAME:
        return 0, 0
    effective = (kernel - 1) * dilation + 1
    out_size = (in_size + stride - 1) // stride
    needed = max(0, (out_size - 1) * stride + effective - in_size)
    return needed // 2, needed - needed // 2


class ModelView:
    """Operands and constants of a validated HAL model's main subgraph."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.graph = model.main
        self._constants: dict[int, np.ndarray] = {}

    def operand(self, index: int) -> Operand:
        return self.graph.operands[index]

    def type_of(self, index: int) -> OperandType:
        return OperandType(self.operand(index).type)

    def dims(self, index: int) -> list[int]:
        return list(self.operand(index).dimensions)

    def is_constant(self, index: int) -> bool:
        return self.operand(index).lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)

    def is_omitted(self, index: int) -> bool:
        return self.operand(index).lifetime == OperandLifeTime.NO_VALUE

    def channel_quant(self, index: int) -> SymmPerChannelQuantParams | None:
        extra = self.operand(index).extra_params
        return extra if isinstance(extra, SymmPerChannelQuantParams) else None

    def constant(self, index: int) -> np.ndarray:
        """The value of a constant operand (CONSTANT_COPY or CONSTANT_REFERENCE), decoded once."""
        if index not in self._constants:
            operand = self.operand(index)
            if not self.is_constant(index):
                raise Unsupported(f"operand {index} must be a constant")
            dtype = np.dtype(NUMPY_DTYPE[OperandType(operand.type)])
            loc = operand.location
            if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
                raw = self.model.operand_values[loc.offset:loc.offset + loc.length]
            else:
                raw = self.model.pools[loc.pool_index].read(loc.offset, loc.length)
            value = np.frombuffer(raw, dtype=dtype).copy()
            self._constants[index] = value.reshape(operand.dimensions) if operand.dimensions else value.reshape(())
        return self._constants[index]

    def scalar(self, index: int) -> int | float | bool:
        """A constant scalar parameter (an engine needs it at translation time, not at execution)."""
        return self.constant(index).reshape(-1)[0].item()

    def optional_scalar(self, op: Operation, position: int, default: int | float | bool) -> int | float | bool:
        """An optional trailing parameter: ``default`` when the operation has no such input."""
        return self.scalar(op.inputs[position]) if len(op.inputs) > position else default


def conv_window(view: ModelView, op: Operation) -> tuple[Window, int]:
    """(window, depth multiplier) of a CONV_2D or DEPTHWISE_CONV_2D; the multiplier is 1 for CONV_2D.

    Variants are told apart as Android does: with explicit padding the
    argument after the four pads and two strides is an INT32 (stride or
    multiplier), with implicit padding that slot holds the BOOL layout flag.
    """
    args = op.inputs
    depthwise = op.type == OperationType.DEPTHWISE_CONV_2D
    explicit_count = 11 if depthwise else 10
    explicit = len(args) >= explicit_count and view.type_of(args[explicit_count - 3]) != OperandType.BOOL
    if explicit:
        left, right, top, bottom, stride_w, stride_h = (int(view.scalar(i)) for i in args[3:9])
        rest = list(args[9:])
    else:
        scheme, stride_w, stride_h = (int(view.scalar(i)) for i in args[3:6])
        rest = list(args[6:])
    multiplier = int(view.scalar(rest.pop(0))) if depthwise else 1
    activation = int(view.scalar(rest[0]))
    nchw = bool(view.scalar(rest[1])) if len(rest) > 1 else False
    dil_w, dil_h = (int(view.scalar(rest[2])), int(view.scalar(rest[3]))) if len(rest) > 3 else (1, 1)
    filter_dims = view.dims(args[1])
    kernel = (filter_dims[1], filter_dims[2])
    if not explicit:
        in_dims = view.dims(args[0])
        in_h, in_w = (in_dims[2], in_dims[3]) if nchw else (in_dims[1], in_dims[2])
        top, bottom = implicit_padding(in_h, stride_h, kernel[0], dil_h, scheme)
        left, right = implicit_padding(in_w, stride_w, kernel[1], dil_w, scheme)
    window = Window((top, bottom, left, right), (stride_h, stride_w), (dil_h, dil_w), kernel, activation, nchw)
    return window, multiplier


def pool_window(view: ModelView, op: Operation) -> Window:
    """The window of AVERAGE_POOL_2D, MAX_POOL_2D or L2_POOL_2D (explicit: 10 or 11 inputs)."""
    args = op.inputs
    explicit = len(args) >= 10
    if explicit:
        left, right, top, bottom, stride_w, stride_h, filter_w, filter_h, activation = (
            int(view.scalar(i)) for i in args[1:10])
        rest = args[10:]
    else:
        scheme, stride_w, stride_h, filter_w, filter_h, activation = (int(view.scalar(i)) for i in args[1:7])
        rest = args[7:]
    nchw = bool(view.scalar(rest[0])) if rest else False
    if not explicit:
        in_dims = view.dims(args[0])
        in_h, in_w = (in_dims[2], in_dims[3]) if nchw else (in_dims[1], in_dims[2])
        top, bottom = implicit_padding(in_h, stride_h, filter_h, 1, scheme)
        left, right = implicit_padding(in_w, stride_w, filter_w, 1, scheme)
    return Window((top, bottom, left, right), (stride_h, stride_w), (1, 1), (filter_h, filter_w), activation, nchw)


def layout_flag(view: ModelView, op: Operation, position: int) -> bool:
    """The optional NCHW flag of operations that take one at ``position`` (false when absent)."""
    return bool(view.optional_scalar(op, position, False))


#: NHWC <-> NCHW permutations.
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def transpose_conv_window(view: ModelView, op: Operation) -> tuple[Window, tuple[int, int]]:
    """(window, output (height, width)) of a TRANSPOSE_CONV_2D.

    Explicit (11 inputs): pads left/right/top/bottom, strides, activation,
    layout.  Implicit (9): an INT32 output-shape tensor, the scheme, strides,
    activation, layout; the pads are Android's
    ``calculateExplicitPaddingTransposeConv`` on the requested output size
    (the tail may be negative).  The output size is always
    ``in * stride + filter - stride - head - tail``.
    """
    args = op.inputs
    nchw = bool(view.scalar(args[-1]))
    in_dims = view.dims(args[0])
    in_h, in_w = (in_dims[2], in_dims[3]) if nchw else (in_dims[1], in_dims[2])
    kernel = (view.dims(args[1])[1], view.dims(args[1])[2])
    if len(args) >= 11:
        left, right, top, bottom, stride_w, stride_h, activation = (int(view.scalar(i)) for i in args[3:10])
    else:
        shape = [int(d) for d in view.constant(args[3]).reshape(-1)]
        out_h, out_w = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
        scheme, stride_w, stride_h, activation = (int(view.scalar(i)) for i in args[4:8])
        top, bottom = _transpose_padding(out_h, stride_h, kernel[0], scheme)
        left, right = _transpose_padding(out_w, stride_w, kernel[1], scheme)
    out = (in_h * stride_h + kernel[0] - stride_h - top - bottom, in_w * stride_w + kernel[1] - stride_w - left - right)
    return Window((top, bottom, left, right), (stride_h, stride_w), (1, 1), kernel, activation, nchw), out


def _transpose_padding(out_size: int, stride: int, kernel: int, scheme: int) -> tuple[int, int]:
    if scheme != PADDING_SAME:
        return 0, 0
    count = (out_size + stride - 1) // stride
    excess = (count - 1) * stride + kernel - out_size
    head = excess // 2 if excess > 0 else 0
    return head, excess - head


@dataclass(frozen=True, slots=True)
class Resize:
    """RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR arguments, the output size made explicit.

    Inputs: (x, width, height | width scale, height scale, [layout,
    align_corners, half_pixel_centers]).  Given scales, the output size is
    Android's ``static_cast<int32_t>(inputSize * scale)`` in float32.
    """

    in_size: tuple[int, int]
    out_size: tuple[int, int]
    nchw: bool
    align_corners: bool
    half_pixel_centers: bool


def resize_arguments(view: ModelView, op: Operation) -> Resize:
    x, width, height = op.inputs[:3]
    nchw = layout_flag(view, op, 3)
    dims = view.dims(x)
    in_h, in_w = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
    if view.type_of(width) == OperandType.INT32:
        out_w, out_h = int(view.scalar(width)), int(view.scalar(height))
    else:
        out_w = int(np.float32(in_w) * np.float32(view.scalar(width)))
        out_h = int(np.float32(in_h) * np.float32(view.scalar(height)))
    return Resize((in_h, in_w), (out_h, out_w), nchw, bool(view.optional_scalar(op, 4, False)),
                  bool(view.optional_scalar(op, 5, False)))
