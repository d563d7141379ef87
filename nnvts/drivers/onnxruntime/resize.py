"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR as ONNX ``Resize``, exactly or not at all.

NNAPI's resize is TFLite's: a source coordinate ``y * in / out`` (the
ratio computed first, in float32), ``(y + 0.5) * in / out - 0.5`` for
bilinear with half_pixel_centers, ``(y + 0.5) * in / out`` for nearest
with half_pixel_centers, ``y * (in - 1) / (out - 1)`` with align_corners;
nearest takes the floor, or rounds halves away from zero with
align_corners.  ONNX names each of these: coordinate_transformation_mode
``asymmetric``, ``half_pixel``, ``tf_half_pixel_for_nn``, ``align_corners``,
nearest_mode ``floor`` or ``round_prefer_ceil`` (the same on the
non-negative coordinates here).  Both flags at once has no ONNX name:
unsupported.

ONNX Runtime computes the same coordinates in another order (it divides by
``out / in`` where TFLite multiplies by ``in / out``), and for nearest
neighbour the floor of a coordinate that lands just below a whole number
picks the previous pixel (14 → 2 pixels: NNAPI reads pixel 7, ONNX Runtime
pixel 6).  Nearest indices depend on the sizes alone, so they are computed
here both ways (``onnx_nearest_indices`` mirrors ONNX Runtime's
arithmetic; a test holds it to the engine) and a size where they differ is
unsupported.  Bilinear weights move by an ulp, which the tolerance allows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nnvts.drivers.engine.nnapi import Resize, Unsupported, resize_arguments
from vts.hal.enums import OperationType as Op
from vts.hal.types import Operation

if TYPE_CHECKING:
    from nnvts.drivers.onnxruntime.ops import Graph

F32 = np.float32


def onnx_modes(nearest: bool, resize: Resize) -> dict[str, str]:
    """The Resize attributes that name NNAPI's coordinate rule for these flags."""
    if resize.align_corners and resize.half_pixel_centers:
        raise Unsupported("align_corners with half_pixel_centers (no ONNX coordinate transformation is both)")
    if resize.align_corners:
        return {"coordinate_transformation_mode": "align_corners",
                **({"nearest_mode": "round_prefer_ceil"} if nearest else {})}
    if resize.half_pixel_centers:
        return ({"coordinate_transformation_mode": "tf_half_pixel_for_nn", "nearest_mode": "floor"} if nearest
                else {"coordinate_transformation_mode": "half_pixel"})
    return {"coordinate_transformation_mode": "asymmetric", **({"nearest_mode": "floor"} if nearest else {})}


def nnapi_nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """The source pixel of each output pixel, as Android (TFLite's reference kernel) computes it."""
    ratio = F32(in_size - 1) / F32(out_size - 1) if align_corners and out_size > 1 else F32(in_size) / F32(out_size)
    offset = F32(0.5) if half_pixel else F32(0)
    indices = []
    for y in range(out_size):
        source = (F32(y) + offset) * ratio
        index = int(np.floor(source + F32(0.5))) if align_corners else int(np.floor(source))
        indices.append(max(0, min(index, in_size - 1)))
    return indices


def onnx_nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """The source pixel of each output pixel as ONNX Runtime's Resize computes it (sizes given, float32)."""
    scale = F32(out_size) / F32(in_size)
    indices = []
    for y in range(out_size):
        if align_corners:
            source = F32(0) if out_size == 1 else F32(F32(y) * F32(in_size - 1)) / F32(out_size - 1)
        elif half_pixel:
            source = (F32(y) + F32(0.5)) / scale
        else:
            source = F32(y) / scale
        index = int(np.floor(source + F32(0.5))) if align_corners else int(np.floor(source))
        indices.append(max(0, min(index, in_size - 1)))
    return indices


def _check_nearest_indices(resize: Resize) -> None:
    for axis, in_size, out_size in zip("HW", resize.in_size, resize.out_size, strict=True):
        flags = (resize.align_corners, resize.half_pixel_centers)
        if nnapi_nearest_indices(in_size, out_size, *flags) != onnx_nearest_indices(in_size, out_size, *flags):
            raise Unsupported(f"nearest neighbour from {in_size} to {out_size} along {axis}: ONNX Runtime's "
                              "coordinate arithmetic picks a different source pixel than NNAPI's for some output")


def translate_resize(g: Graph, op: Operation) -> None:
    """RESIZE_*: NCHW Resize with explicit output sizes; quantized data through floats."""
    nearest = op.type == Op.RESIZE_NEAREST_NEIGHBOR
    resize = resize_arguments(g.view, op)
    x, out = op.inputs[0], op.outputs[0]
    dims = g.view.dims(x)
    if len(dims) != 4 or not all(d > 0 for d in dims):
        raise Unsupported("resize of an input whose dimensions are not all known")
    if min(resize.out_size) <= 0:
        raise Unsupported(f"output size {resize.out_size}")
    attrs = {"mode": "nearest" if nearest else "linear", **onnx_modes(nearest, resize)}
    if nearest:
        _check_nearest_indices(resize)
    batch, channels = (dims[0], dims[1]) if resize.nchw else (dims[0], dims[3])
    sizes = g.const(np.array([batch, channels, *resize.out_size], np.int64), "sizes")
    value = g.fresh("resize")
    g.node("Resize", [g.nchw_input_value(g.dequantized(x), resize.nchw), "", "", sizes], [value], **attrs)
    if g.quantized(out):
        quantized = g.fresh("q")
        g.node("QuantizeLinear", [value, *g.quant_params(out)], [quantized])
        value = quantized
    g.nchw_output_into(value, out, resize.nchw)
