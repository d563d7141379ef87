"""Drivers that mix up layouts: right on NHWC, wrong on NCHW only where the axes tell them apart (issue 43).

``nchw_pool_padding_from_nhwc``: for an NCHW pooling with implicit padding it
computes the padding from the NHWC positions of the input's dims (height from
``dims[1]``, which is C in NCHW, width from ``dims[2]``, which is H): a real
bug, found by a customer of Arm's android-nn-driver, not by Android's suite.
The padding is then right whenever the stride is 1 (SAME pads ``filter - 1``
whatever the size), the tensor is square with one channel, or the swapped
sizes happen to give the same padding: on every bundled NCHW pooling case
before issue 43.  The reference does the rest: the fake rewrites such an
operation to the explicit padding it computed, and prepares that.
"""

from __future__ import annotations

import struct
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.enums import OperandLifeTime, OperandType, OperationType
from vts.hal.interfaces import PreparedModel
from vts.hal.types import DataLocation, Model, Operand, Subgraph

_POOLS = {int(OperationType.AVERAGE_POOL_2D), int(OperationType.MAX_POOL_2D), int(OperationType.L2_POOL_2D)}
_SAME = 1


def _scalar(model: Model, graph: Subgraph, index: int) -> int | None:
    operand = graph.operands[index]
    if operand.lifetime != OperandLifeTime.CONSTANT_COPY:
        return None
    raw = model.operand_values[operand.location.offset:operand.location.offset + operand.location.length]
    if operand.type == OperandType.BOOL:
        return raw[0] if raw else None
    return struct.unpack("<i", raw)[0] if len(raw) == 4 else None


def _padding(size: int, stride: int, filter_size: int, scheme: int) -> tuple[int, int]:
    if scheme != _SAME:
        return 0, 0
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + filter_size - size, 0)
    return total // 2, total - total // 2


def _constant(model: Model, graph: Subgraph, value: int) -> int:
    offset = len(model.operand_values)
    model.operand_values = bytes(model.operand_values) + struct.pack("<i", value)
    graph.operands.append(Operand(int(OperandType.INT32), [], 1, 0.0, 0, int(OperandLifeTime.CONSTANT_COPY),
                                  DataLocation(0, offset, 4)))
    return len(graph.operands) - 1


def _with_nhwc_padding(model: Model) -> Model:
    """``model`` with each NCHW implicit-padding pool turned explicit, its padding from the wrong axes."""
    changed = model.copy()
    graph = changed.main
    for op in graph.operations:
        if int(op.type) not in _POOLS or len(op.inputs) != 8:  # the implicit form with a layout flag
            continue
        scalars = [_scalar(changed, graph, i) for i in op.inputs[1:]]
        if any(s is None for s in scalars) or not scalars[-1]:
            continue
        scheme, stride_w, stride_h, filter_w, filter_h = (int(s) for s in scalars[:5])  # type: ignore[arg-type]
        dims = graph.operands[op.inputs[0]].dimensions
        if len(dims) != 4:
            continue
        top, bottom = _padding(dims[1], stride_h, filter_h, scheme)  # NHWC's H position: NCHW's C
        left, right = _padding(dims[2], stride_w, filter_w, scheme)  # NHWC's W position: NCHW's H
        pads = [_constant(changed, graph, v) for v in (left, right, top, bottom)]
        graph.operands[op.inputs[1]].number_of_consumers -= 1  # the scheme, no longer read
        op.inputs = [op.inputs[0], *pads, *op.inputs[2:]]
    return changed


class _NhwcPaddingDevice(ReferenceDevice):
    name = "nnvts-nhwcpadding"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return super().prepare_model(_with_nhwc_padding(model), *args, **kwargs)


def nchw_pool_padding_from_nhwc() -> ReferenceDevice:
    """Caught by ``generated`` on the layout-distinct shapes (specs/pooling/layout_distinct.yaml)."""
    return _NhwcPaddingDevice()


_TRANSPOSE = int(OperationType.TRANSPOSE_CONV_2D)


def _with_nhwc_output_shape(model: Model) -> Model:
    """``model`` with each NCHW implicit TRANSPOSE_CONV_2D's output-shape tensor [n, c, h, w] read at its NHWC
    positions (height from index 1, width from index 2): rewritten to [n, w, c, h], which the NCHW reader
    (height index 2, width index 3) sees as the wrong-axes height c and width h."""
    changed = model.copy()
    graph = changed.main
    for op in graph.operations:
        if int(op.type) != _TRANSPOSE or len(op.inputs) != 9 or not _scalar(changed, graph, op.inputs[8]):
            continue
        shape = graph.operands[op.inputs[3]]
        if shape.lifetime != OperandLifeTime.CONSTANT_COPY or shape.location.length != 16:
            continue
        start = shape.location.offset
        n, c, h, w = struct.unpack("<4i", changed.operand_values[start:start + 16])
        values = bytearray(changed.operand_values)
        values[start:start + 16] = struct.pack("<4i", n, w, c, h)
        changed.operand_values = bytes(values)
    return changed


class _NhwcOutputShapeDevice(ReferenceDevice):
    name = "nnvts-nhwcoutputshape"

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return super().prepare_model(_with_nhwc_output_shape(model), *args, **kwargs)


def nchw_transpose_shape_from_nhwc() -> ReferenceDevice:
    """Caught by ``generated`` on the layout-distinct transposed convolutions (SAME, NCHW)."""
    return _NhwcOutputShapeDevice()
