"""The operations the stable AIDL interface added: BATCH_MATMUL, PACK (feature level 6), MIRROR_PAD, REVERSE (7).

Their documentation is OperationType.aidl; what a model must keep to be
valid is Android 13's validators (``packages/modules/NeuralNetworks``,
``common/types/operations/src/{BatchMatmul,Pack,MirrorPad,Reverse}.cpp``),
which check types, counts, the quantization the output must share and the
ranks that are known.  Shape rules that need values (BATCH_MATMUL's
``canMatrixMul``, its rank 2 to 4, a padding larger than the dimension) are
checked at execution, as Android's ``prepare`` does: a driver fails the
execution, it does not refuse the model.  The two wider type changes of these
levels (RESHAPE of TENSOR_INT32, quant8 RSQRT) live in the tables of those
operations.
"""

from __future__ import annotations

from vts.hal.enums import OperationType as Op
from vts.hal.operations._core import (
    BOOL,
    F16,
    F32,
    FL6,
    FL7,
    I32,
    INT,
    QA8,
    QAS8,
    QUANT8_ASYMM_TYPES,
    OpContext,
    OpSpec,
    Signature,
    as_float32,
    rank_of,
    same_quant_as_input,
    sig,
)

#: BATCH_MATMUL's types (no unsigned quant8: OperationType.aidl).
_MATMUL_TYPES = (F16, F32, QAS8, I32)
#: PACK, MIRROR_PAD and REVERSE move values of these types.
_MOVE_TYPES = (F16, F32, QA8, QAS8, I32)


def _pack(n_in: int, n_out: int) -> list[Signature]:
    """The INT32 axis, then N >= 1 tensors of one type -> one tensor of that type."""
    if n_in < 2 or n_out != 1:
        return []
    return [sig((INT,) + (t,) * (n_in - 1), (t,), FL6) for t in _MOVE_TYPES]


def _pack_inputs_match_output(ctx: OpContext, _: Signature) -> None:
    """Every input has the output's quantization and one rank, the output's rank less one (Pack.cpp)."""
    output = ctx.outputs[0]
    required = rank_of(output) - 1 if rank_of(output) else 0
    for number, operand in enumerate(ctx.inputs[1:]):
        if output.type in QUANT8_ASYMM_TYPES and (
                as_float32(operand.scale) != as_float32(output.scale) or operand.zero_point != output.zero_point):
            ctx.fail(f"input tensor {number} has scale {operand.scale:g} and zeroPoint {operand.zero_point}, the "
                     f"output {output.scale:g} and {output.zero_point}")
        rank = rank_of(operand)
        if rank:
            if required and rank != required:
                ctx.fail(f"input tensor {number} has rank {rank}, expected {required}")
            required = required or rank


def _mirror_pad_shapes(ctx: OpContext, _: Signature) -> None:
    """Paddings are ``[rank(input), 2]``; the output keeps the input's rank (MirrorPad.cpp)."""
    data, paddings, output = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if rank_of(paddings):
        if rank_of(paddings) != 2:
            ctx.fail(f"the paddings (input 1) must have 2 dimensions, got {rank_of(paddings)}")
        if paddings.dimensions[1] not in (0, 2):
            ctx.fail(f"the paddings' second dimension must be 2, got {paddings.dimensions[1]}")
        if rank_of(data) and paddings.dimensions[0] not in (0, rank_of(data)):
            ctx.fail(f"the paddings' first dimension {paddings.dimensions[0]} is not the input's rank "
                     f"{rank_of(data)}")
    if rank_of(data) and rank_of(output) and rank_of(data) != rank_of(output):
        ctx.fail(f"output rank {rank_of(output)} differs from input rank {rank_of(data)}")


def _reverse_shapes(ctx: OpContext, _: Signature) -> None:
    """The axis is a ``[1]`` tensor; the output keeps the input's rank (Reverse.cpp)."""
    data, axis, output = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if rank_of(axis):
        if rank_of(axis) != 1:
            ctx.fail(f"the axis (input 1) must have 1 dimension, got {rank_of(axis)}")
        if axis.dimensions[0] not in (0, 1):
            ctx.fail(f"the axis (input 1) must hold 1 element, got {axis.dimensions[0]}")
    if rank_of(data) and rank_of(output) and rank_of(data) != rank_of(output):
        ctx.fail(f"output rank {rank_of(output)} differs from input rank {rank_of(data)}")


SPECS: dict[int, OpSpec] = {
    # Android 13's validator takes exactly 4 inputs: the adjoint flags are "optional" in the text only.
    Op.BATCH_MATMUL: OpSpec(tuple(sig((t, t, BOOL, BOOL), (t,), FL6) for t in _MATMUL_TYPES)),
    Op.PACK: OpSpec(_pack, (_pack_inputs_match_output,), arity="at least 2 inputs and 1 output"),
    Op.MIRROR_PAD: OpSpec(
        tuple(sig((t, I32, INT), (t,), FL7) for t in _MOVE_TYPES), (same_quant_as_input(), _mirror_pad_shapes)
    ),
    Op.REVERSE: OpSpec(
        tuple(sig((t, I32), (t,), FL7) for t in _MOVE_TYPES), (same_quant_as_input(), _reverse_shapes)
    ),
}
