"""Convolutions, pooling, fully connected, normalizations, softmax and resizing.

Facts from Android 11's ``Conv2D.cpp``, ``DepthwiseConv2D.cpp``,
``GroupedConv2D`` (``Utils.cpp``), ``TransposeConv2D.cpp``, ``Pooling.cpp``,
``FullyConnected.cpp``, ``L2Normalization.cpp``,
``LocalResponseNormalization.cpp``, ``Softmax.cpp``, ``LogSoftmax.cpp``,
``InstanceNormalization.cpp`` and ``ResizeImageOps.cpp`` validators.
"""

from __future__ import annotations

from vts.hal.enums import HalVersion
from vts.hal.enums import OperationType as Op
from vts.hal.operations._core import (
    BOOL,
    F16,
    F32,
    FLOAT,
    I32,
    INT,
    QA8,
    QAS8,
    QPC8,
    V10,
    V12,
    V13,
    Check,
    OpContext,
    OpSpec,
    Signature,
    channel_dim,
    fixed_output_quant,
    product_scale_constraint,
    rank_at_most,
    rank_exactly,
    same_quant_as_input,
    scalar_of,
    sig,
    version_if,
    with_optional,
)

#: (input, filter, bias) -> output type combinations shared by the convolutions.
_CONV_TENSORS = (
    ((F32, F32, F32), F32, V10),
    ((F16, F16, F16), F16, V12),
    ((QA8, QA8, I32), QA8, V10),
    ((QA8, QPC8, I32), QA8, V12),  # per-channel filter: HAL 1.2
    ((QAS8, QAS8, I32), QAS8, V13),
    ((QAS8, QPC8, I32), QAS8, V13),
)

_LAYOUT = ((BOOL,), V12)
_DILATION = ((INT, INT), V12)


def _conv_family(implicit_params: int, explicit_params: int) -> tuple[Signature, ...]:
    """Implicit- and explicit-padding forms, each with optional layout then dilation."""
    bases = []
    for tensors, output, version in _CONV_TENSORS:
        for count, label in ((implicit_params, "implicit padding"), (explicit_params, "explicit padding")):
            bases.append(sig(tensors + (INT,) * count, (output,), version, label))
    return with_optional(bases, _LAYOUT, _DILATION)


def _grouped_conv() -> tuple[Signature, ...]:
    """GROUPED_CONV_2D (1.2) always carries the layout flag: 9 or 12 inputs."""
    result = []
    for tensors, output, version in _CONV_TENSORS:
        for count in (5, 8):
            result.append(sig(tensors + (INT,) * count + (BOOL,), (output,), max(version, V12)))
    return tuple(result)


def _transpose_conv() -> tuple[Signature, ...]:
    """TRANSPOSE_CONV_2D: explicit (11 inputs) or implicit with an output-shape tensor (9)."""
    result = []
    for tensors, output, version in _CONV_TENSORS:
        version = max(version, V12)
        result.append(sig(tensors + (INT,) * 7 + (BOOL,), (output,), version, "explicit padding"))
        result.append(sig(tensors + (I32,) + (INT,) * 4 + (BOOL,), (output,), version, "implicit padding"))
    return tuple(result)


def _pooling(types: dict[int, HalVersion]) -> tuple[Signature, ...]:
    """Implicit (7 inputs) and explicit (10 inputs) padding, optional layout."""
    bases = []
    for t, version in types.items():
        bases.append(sig((t,) + (INT,) * 6, (t,), version, "implicit padding"))
        bases.append(sig((t,) + (INT,) * 9, (t,), version, "explicit padding"))
    return with_optional(bases, _LAYOUT)


def _fully_connected_shapes(ctx: OpContext, _: Signature) -> None:
    """Android checks FULLY_CONNECTED shapes as soon as all three ranks are known."""
    data, weights, bias = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    if not (data.dimensions and weights.dimensions and bias.dimensions):
        return
    rank = len(data.dimensions)
    if not 2 <= rank <= 4:
        ctx.fail(f"input 0 has rank {rank}, expected rank 2 to 4")
    if len(weights.dimensions) != 2:
        ctx.fail(f"weights (input 1) have rank {len(weights.dimensions)}, expected 2")
    if len(bias.dimensions) != 1:
        ctx.fail(f"bias (input 2) has rank {len(bias.dimensions)}, expected 1")
    num_units, input_size = weights.dimensions
    elements = 1
    for d in data.dimensions:
        elements *= d
    if input_size != 0 and elements % input_size != 0:
        ctx.fail(f"input 0 has {elements} elements, not a multiple of the weights' input size {input_size}")
    bias_length = bias.dimensions[0]
    if num_units != 0 and bias_length != 0 and bias_length != num_units:
        ctx.fail(f"bias length {bias_length} differs from the number of units {num_units}")


def _no_axis_and_rank_not(ranks: tuple[int, ...], base_inputs: int) -> Check:
    """Before HAL 1.2 these ops had no axis input and only accepted some ranks."""

    def predicate(ctx: OpContext, _: Signature) -> bool:
        return len(ctx.inputs) == base_inputs and len(ctx.inputs[0].dimensions) not in ranks

    return version_if(predicate, V12)


def _resize(types: dict[int, HalVersion], layout_required: bool) -> tuple[Signature, ...]:
    """in, two output-size scalars (INT32 sizes, or float scales from 1.2) [layout] [2 flags @1.3]."""
    bases = []
    for t, version in types.items():
        scalar_options = [((INT, INT), version), ((scalar_of(t),) * 2, max(version, V12))]
        for scalars, scalar_version in scalar_options:
            inputs = (t, *scalars)
            if layout_required:
                bases.append(sig((*inputs, BOOL), (t,), max(scalar_version, V12)))
            else:
                bases.append(sig(inputs, (t,), scalar_version))
    groups = [((BOOL,), V13), ((BOOL,), V13)]
    if not layout_required:
        groups.insert(0, _LAYOUT)
    return with_optional(bases, *groups)


_SOFTMAX_QUANT = fixed_output_quant(0, {QA8: (1.0 / 256, 0), QAS8: (1.0 / 256, -128)})
_L2_NORM_QUANT = fixed_output_quant(0, {QA8: (1.0 / 128, 128), QAS8: (1.0 / 128, 0)})
#: Android 10/11 validate CONV_2D and TRANSPOSE_CONV_2D by operand types (``validate`` in Conv2D.cpp /
#: TransposeConv2D.cpp) and DEPTHWISE/GROUPED_CONV_2D by count and types (Validation.cpp); the 4-D
#: rank is checked when the executor prepares the operation.  So for the HAL a wrong rank is not an
#: invalid model: it is an operation the driver does not support.
_CONV_RANKS = rank_exactly(4, 0, 1, hal_enforced=False)
_POOL_TYPES = {F32: V10, F16: V12, QA8: V10, QAS8: V13}

SPECS: dict[int, OpSpec] = {
    Op.CONV_2D: OpSpec(
        _conv_family(4, 7),
        (_CONV_RANKS, channel_dim(1, 0), product_scale_constraint(0, 1, strict_error=False)),
    ),
    Op.DEPTHWISE_CONV_2D: OpSpec(
        _conv_family(5, 8),
        (_CONV_RANKS, channel_dim(1, 3), product_scale_constraint(0, 1, strict_error=False)),
    ),
    Op.GROUPED_CONV_2D: OpSpec(_grouped_conv(), (_CONV_RANKS, channel_dim(1, 0))),
    Op.TRANSPOSE_CONV_2D: OpSpec(_transpose_conv(), (_CONV_RANKS, channel_dim(1, 0))),
    Op.FULLY_CONNECTED: OpSpec(
        (
            sig((F32, F32, F32, INT), (F32,), V10),
            sig((F16, F16, F16, INT), (F16,), V12),
            sig((QA8, QA8, I32, INT), (QA8,), V10),
            sig((QAS8, QAS8, I32, INT), (QAS8,), V13),
        ),
        (_fully_connected_shapes, product_scale_constraint(0, 1, strict_error=False)),
    ),
    Op.AVERAGE_POOL_2D: OpSpec(_pooling(_POOL_TYPES), (rank_exactly(4), same_quant_as_input())),
    Op.MAX_POOL_2D: OpSpec(_pooling(_POOL_TYPES), (rank_exactly(4), same_quant_as_input())),
    Op.L2_POOL_2D: OpSpec(_pooling({F32: V10, F16: V12}), (rank_exactly(4),)),
    Op.L2_NORMALIZATION: OpSpec(
        with_optional(
            [sig((t,), (t,), v) for t, v in {F32: V10, F16: V12, QA8: V12, QAS8: V13}.items()],
            ((INT,), V12),
        ),
        (rank_at_most(4), _no_axis_and_rank_not((4,), 1), _L2_NORM_QUANT),
    ),
    Op.LOCAL_RESPONSE_NORMALIZATION: OpSpec(
        with_optional(
            [sig((t, INT) + (scalar_of(t),) * 3, (t,), v) for t, v in {F32: V10, F16: V12}.items()],
            ((INT,), V12),
        ),
        (rank_at_most(4), _no_axis_and_rank_not((4,), 5)),
    ),
    Op.SOFTMAX: OpSpec(
        with_optional(
            [
                sig((F32, FLOAT), (F32,), V10),
                sig((QA8, FLOAT), (QA8,), V10),
                sig((F16, scalar_of(F16)), (F16,), V12),
                sig((QAS8, FLOAT), (QAS8,), V13),
            ],
            ((INT,), V12),
        ),
        (rank_at_most(4), _no_axis_and_rank_not((0, 2, 4), 2), _SOFTMAX_QUANT),
    ),
    Op.LOG_SOFTMAX: OpSpec(tuple(sig((t, scalar_of(t), INT), (t,), V12) for t in (F32, F16))),
    Op.INSTANCE_NORMALIZATION: OpSpec(
        tuple(sig((t,) + (scalar_of(t),) * 3 + (BOOL,), (t,), V12) for t in (F32, F16)),
        (rank_exactly(4),),
    ),
    Op.RESIZE_BILINEAR: OpSpec(
        _resize({F32: V10, F16: V12, QA8: V12, QAS8: V13}, layout_required=False), (rank_exactly(4),)
    ),
    Op.RESIZE_NEAREST_NEIGHBOR: OpSpec(
        _resize({F32: V12, F16: V12, QA8: V12, QAS8: V13}, layout_required=True), (rank_exactly(4),)
    ),
}
