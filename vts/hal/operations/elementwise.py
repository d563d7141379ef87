"""Element-wise operations: arithmetic, activations, math, comparisons, casts.

Signatures and versions follow Android 11's ``nn/common`` validators
(``Broadcast.cpp``, ``Activation.cpp``, ``Elementwise.cpp``,
``Comparisons.cpp``, ``Cast`` in ``Utils.cpp``...) and NeuralNetworks.h.
"""

from __future__ import annotations

from vts.hal.enums import HalVersion
from vts.hal.enums import OperationType as Op
from vts.hal.operations._core import (
    B8,
    F16,
    F32,
    FL7,
    I32,
    INT,
    QA8,
    QA16,
    QAS8,
    QPC8,
    QS8,
    QS16,
    V10,
    V11,
    V12,
    V13,
    Check,
    OpContext,
    OpSpec,
    Signature,
    fixed_output_quant,
    product_scale_constraint,
    rank_at_most,
    same_quant_as_input,
    scalar_of,
    sig,
)


def _binary(types: dict[int, HalVersion]) -> tuple[Signature, ...]:
    """A, B (same type, broadcast), INT32 fused activation -> same type."""
    return tuple(sig((t, t, INT), (t,), v) for t, v in types.items())


def _unary(types: dict[int, HalVersion]) -> tuple[Signature, ...]:
    return tuple(sig((t,), (t,), v) for t, v in types.items())


def _both_ranks_at_most_4(ctx: OpContext, _: Signature) -> None:
    """Broadcast ops support rank <= 4; Android checks it once both ranks are known."""
    ranks = [len(ctx.inputs[0].dimensions), len(ctx.inputs[1].dimensions)]
    if ranks[0] and ranks[1]:
        for i, rank in enumerate(ranks):
            if rank > 4:
                ctx.fail(f"input {i} has rank {rank}, the operation supports rank up to 4")


_RANK4: Check = rank_at_most(4)

# Quantized LOGISTIC maps [0, 1) onto the 8-bit range; TANH maps [-1, 1).
_LOGISTIC_QUANT = fixed_output_quant(0, {QA8: (1.0 / 256, 0), QAS8: (1.0 / 256, -128)})
_TANH_QUANT = fixed_output_quant(0, {QA8: (1.0 / 128, 128), QAS8: (1.0 / 128, 0)})

_ACTIVATION_TYPES = {F32: V10, F16: V12, QA8: V10, QAS8: V13}
_COMPARISON = tuple(
    sig((t, t), (B8,), v) for t, v in {B8: V12, F16: V12, F32: V12, I32: V12, QA8: V12, QAS8: V13}.items()
)
_FLOAT_MATH = _unary({F16: V12, F32: V12})


def _cast_signatures() -> tuple[Signature, ...]:
    """CAST converts between F16/F32/I32/QA8 (1.2); 1.3 adds identity casts of other types."""
    numeric = (F16, F32, I32, QA8)
    result = [sig((a,), (b,), V12) for a in numeric for b in numeric]
    result += [sig((t,), (t,), V13) for t in (B8, QA16, QS16, QAS8, QS8)]
    return tuple(result)


def _cast_same_shape(ctx: OpContext, _: Signature) -> None:
    """CAST keeps the shape: Android rejects known, non-empty shapes that differ."""
    source, target = ctx.inputs[0].dimensions, ctx.outputs[0].dimensions
    if source and target and 0 not in target and list(source) != list(target):
        ctx.fail(f"output dimensions {list(target)} differ from input dimensions {list(source)}")


def _dequantize_signatures() -> tuple[Signature, ...]:
    result = [sig((QA8,), (F32,), V10)]
    for source in (QA8, QS8, QPC8, QAS8):
        for target in (F16, F32):
            if (source, target) != (QA8, F32):
                result.append(sig((source,), (target,), V13 if source == QAS8 else V12))
    return tuple(result)


SPECS: dict[int, OpSpec] = {
    Op.ADD: OpSpec(_binary({F32: V10, F16: V12, QA8: V10, QAS8: V13, I32: V13}), (_both_ranks_at_most_4,)),
    Op.MUL: OpSpec(
        _binary({F32: V10, F16: V12, QA8: V10, QAS8: V13, I32: V13}),
        (_both_ranks_at_most_4, product_scale_constraint(0, 1, strict_error=True, types=(QA8, QAS8))),
    ),
    Op.SUB: OpSpec(_binary({F32: V11, F16: V12, QA8: V12, QAS8: V13, I32: V13}), (_both_ranks_at_most_4,)),
    Op.DIV: OpSpec(_binary({F32: V11, F16: V12, I32: V13}), (_both_ranks_at_most_4,)),
    Op.RELU: OpSpec(_unary(_ACTIVATION_TYPES), (_RANK4, same_quant_as_input())),
    Op.RELU1: OpSpec(_unary(_ACTIVATION_TYPES), (_RANK4, same_quant_as_input())),
    Op.RELU6: OpSpec(_unary(_ACTIVATION_TYPES), (_RANK4, same_quant_as_input())),
    Op.LOGISTIC: OpSpec(_unary(_ACTIVATION_TYPES), (_RANK4, _LOGISTIC_QUANT)),
    Op.TANH: OpSpec(_unary({F32: V10, F16: V12, QA8: V12, QAS8: V13}), (_RANK4, _TANH_QUANT)),
    Op.HARD_SWISH: OpSpec(_unary({F32: V13, F16: V13, QA8: V13, QAS8: V13})),
    Op.ELU: OpSpec(tuple(sig((t, scalar_of(t)), (t,), V13) for t in (F16, F32))),
    Op.FLOOR: OpSpec(_unary({F32: V10, F16: V12}), (_RANK4,)),
    Op.ABS: OpSpec(_unary({F32: V12, F16: V12, I32: V13})),
    Op.NEG: OpSpec(_unary({F32: V12, F16: V12, I32: V12})),
    Op.EXP: OpSpec(_FLOAT_MATH),
    Op.LOG: OpSpec(_FLOAT_MATH),
    # OperationType.aidl: quant8 RSQRT since feature level 7, its output quantization free.
    Op.RSQRT: OpSpec(_unary({F16: V12, F32: V12, QA8: FL7, QAS8: FL7})),
    Op.SIN: OpSpec(_FLOAT_MATH),
    Op.SQRT: OpSpec(_FLOAT_MATH),
    Op.EQUAL: OpSpec(_COMPARISON),
    Op.NOT_EQUAL: OpSpec(_COMPARISON),
    Op.GREATER: OpSpec(_COMPARISON),
    Op.GREATER_EQUAL: OpSpec(_COMPARISON),
    Op.LESS: OpSpec(_COMPARISON),
    Op.LESS_EQUAL: OpSpec(_COMPARISON),
    Op.LOGICAL_AND: OpSpec((sig((B8, B8), (B8,), V12),)),
    Op.LOGICAL_OR: OpSpec((sig((B8, B8), (B8,), V12),)),
    Op.LOGICAL_NOT: OpSpec((sig((B8,), (B8,), V12),)),
    Op.MAXIMUM: OpSpec(tuple(
        sig((t, t), (t,), v) for t, v in {F16: V12, F32: V12, I32: V12, QA8: V12, QAS8: V13}.items()
    )),
    Op.MINIMUM: OpSpec(tuple(
        sig((t, t), (t,), v) for t, v in {F16: V12, F32: V12, I32: V12, QA8: V12, QAS8: V13}.items()
    )),
    Op.POW: OpSpec(tuple(sig((t, t), (t,), V12) for t in (F16, F32))),
    Op.PRELU: OpSpec(tuple(
        sig((t, t), (t,), v) for t, v in {F16: V12, F32: V12, QA8: V12, QAS8: V13}.items()
    )),
    Op.SELECT: OpSpec(tuple(
        sig((B8, t, t), (t,), v) for t, v in {F16: V12, F32: V12, I32: V12, QA8: V12, QAS8: V13}.items()
    )),
    Op.CAST: OpSpec(_cast_signatures(), (_cast_same_shape,)),
    Op.QUANTIZE: OpSpec(tuple(
        sig((s,), (t,), V13 if t == QAS8 else V12) for s in (F16, F32) for t in (QA8, QAS8)
    )),
    Op.DEQUANTIZE: OpSpec(_dequantize_signatures(), (_RANK4,)),
}
