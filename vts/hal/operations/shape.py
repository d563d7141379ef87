"""Data-movement, reduction and lookup operations.

Facts from Android 11's ``validateOperation`` switch in ``Utils.cpp``
(RESHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, EMBEDDING_LOOKUP,
HASHTABLE_LOOKUP, LSH_PROJECTION, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND,
PAD, PAD_V2, MEAN, ARGMAX/ARGMIN, EXPAND_DIMS, SPLIT, TILE) and the
``Concatenation``, ``Squeeze``, ``StridedSlice``, ``Transpose``, ``Slice``,
``Gather``, ``ChannelShuffle``, ``TopK_V2``, ``Reduce``, ``Fill`` and
``Rank`` validators.
"""

from __future__ import annotations

from collections.abc import Sequence

from vts.hal.enums import HalVersion
from vts.hal.enums import OperationType as Op
from vts.hal.operations._core import (
    B8,
    BOOL,
    F16,
    F32,
    FL6,
    FLOAT,
    HALF,
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
    OpContext,
    OpSpec,
    Signature,
    all_ranks_at_most,
    as_float32,
    rank_at_most,
    rank_exactly,
    same_quant_as_input,
    sig,
    version_if,
    with_optional,
)

_RANK4 = rank_at_most(4)
_SAME_QUANT = same_quant_as_input()

#: The data-movement types of HAL 1.0 operations extended in 1.2/1.3.
_MOVE_1_0 = {F32: V10, F16: V12, QA8: V10, QAS8: V13}
_MOVE_1_1 = {F32: V11, F16: V12, QA8: V11, QAS8: V13}
#: The type set of most operations introduced in HAL 1.2.
_GENERIC_1_2 = {F16: V12, F32: V12, I32: V12, QA8: V12, QAS8: V13}


def _each(
    types: dict[int, HalVersion], inputs: Sequence[int], outputs: Sequence[int] = ()
) -> list[Signature]:
    """``(t, *inputs) -> (t, *outputs)`` for every type ``t``."""
    return [sig((t, *inputs), (t, *outputs), v) for t, v in types.items()]


def _quant_zero_point_nonzero(ctx: OpContext, _: Signature) -> bool:
    """PAD and SPACE_TO_BATCH_ND padded QA8 with 0 before HAL 1.2, so a non-zero zero point needs 1.2."""
    return ctx.inputs[0].type == QA8 and ctx.inputs[0].zero_point != 0


def _concatenation(n_in: int, n_out: int) -> list[Signature]:
    """n >= 1 tensors of one type, then the INT32 axis."""
    if n_in < 2 or n_out != 1:
        return []
    return [sig((t,) * (n_in - 1) + (INT,), (t,), v) for t, v in _MOVE_1_0.items()]


def _concat_requantizes(ctx: OpContext, _: Signature) -> bool:
    """QA8 inputs with a quantization other than the output's are a HAL 1.2 feature."""
    output = ctx.outputs[0]
    if output.type != QA8:
        return False
    return any(
        as_float32(x.scale) != as_float32(output.scale) or x.zero_point != output.zero_point
        for x in ctx.inputs[:-1]
    )


def _split(n_in: int, n_out: int) -> list[Signature]:
    """in, INT32 axis, INT32 number of splits -> that many outputs of the input type."""
    if n_in != 3 or n_out < 1:
        return []
    return [sig((t, INT, INT), (t,) * n_out, v) for t, v in _GENERIC_1_2.items()]


def _lsh_projection() -> tuple[Signature, ...]:
    """Hash functions and optional weights are F32 (or F16 from 1.2); the input may be any of four types."""
    result = []
    for hash_type, version in ((F32, V10), (F16, V12)):
        for data in (F16, F32, I32, QA8):
            result.append(sig((hash_type, data, hash_type, INT), (I32,), version))
    return tuple(result)


SPECS: dict[int, OpSpec] = {
    # OperationType.aidl: TENSOR_INT32 since feature level 6.
    Op.RESHAPE: OpSpec(tuple(_each({**_MOVE_1_0, I32: FL6}, (I32,))), (_RANK4, _SAME_QUANT)),
    Op.DEPTH_TO_SPACE: OpSpec(
        with_optional(_each(_MOVE_1_0, (INT,)), ((BOOL,), V12)), (rank_exactly(4), _SAME_QUANT)
    ),
    Op.SPACE_TO_DEPTH: OpSpec(
        with_optional(_each(_MOVE_1_0, (INT,)), ((BOOL,), V12)), (rank_exactly(4), _SAME_QUANT)
    ),
    Op.BATCH_TO_SPACE_ND: OpSpec(
        with_optional(_each(_MOVE_1_1, (I32,)), ((BOOL,), V12)), (rank_exactly(4), _SAME_QUANT)
    ),
    Op.SPACE_TO_BATCH_ND: OpSpec(
        with_optional(_each(_MOVE_1_1, (I32, I32)), ((BOOL,), V12)),
        (rank_exactly(4), _SAME_QUANT, version_if(_quant_zero_point_nonzero, V12)),
    ),
    Op.PAD: OpSpec(
        tuple(_each(_MOVE_1_1, (I32,))),
        (_RANK4, _SAME_QUANT, version_if(_quant_zero_point_nonzero, V12)),
    ),
    Op.PAD_V2: OpSpec(
        (
            sig((F32, I32, FLOAT), (F32,), V12),
            sig((F16, I32, HALF), (F16,), V12),
            sig((QA8, I32, INT), (QA8,), V12),
            sig((QAS8, I32, INT), (QAS8,), V13),
        ),
        (_RANK4, _SAME_QUANT),
    ),
    Op.SQUEEZE: OpSpec(tuple(_each(_MOVE_1_1, (I32,))), (_RANK4, _SAME_QUANT)),
    Op.TRANSPOSE: OpSpec(tuple(_each(_MOVE_1_1, (I32,))), (_RANK4, _SAME_QUANT)),
    Op.STRIDED_SLICE: OpSpec(
        tuple(_each(_MOVE_1_1, (I32, I32, I32, INT, INT, INT))), (_RANK4, _SAME_QUANT)
    ),
    Op.MEAN: OpSpec(tuple(_each(_MOVE_1_1, (I32, INT))), (_RANK4,)),
    Op.CONCATENATION: OpSpec(
        _concatenation,
        (all_ranks_at_most(4, skip_last=1), version_if(_concat_requantizes, V12)),
        arity="at least 2 inputs and 1 output",
    ),
    Op.SPLIT: OpSpec(_split, (same_quant_as_input(0, None),), arity="3 inputs and at least 1 output"),
    Op.SLICE: OpSpec(tuple(_each(_GENERIC_1_2, (I32, I32))), (_SAME_QUANT,)),
    Op.GATHER: OpSpec(tuple(_each(_GENERIC_1_2, (INT, I32))), (_SAME_QUANT,)),
    Op.TILE: OpSpec(tuple(_each(_GENERIC_1_2, (I32,))), (_SAME_QUANT,)),
    Op.EXPAND_DIMS: OpSpec(tuple(_each(_GENERIC_1_2, (INT,))), (_SAME_QUANT,)),
    Op.CHANNEL_SHUFFLE: OpSpec(
        tuple(_each({F16: V12, F32: V12, QA8: V12, QAS8: V13}, (INT, INT))), (_RANK4, _SAME_QUANT)
    ),
    Op.TOPK_V2: OpSpec(tuple(_each(_GENERIC_1_2, (INT,), (I32,))), (_SAME_QUANT,)),
    Op.ARGMAX: OpSpec(tuple(sig((t, INT), (I32,), v) for t, v in _GENERIC_1_2.items())),
    Op.ARGMIN: OpSpec(tuple(sig((t, INT), (I32,), v) for t, v in _GENERIC_1_2.items())),
    Op.REDUCE_ALL: OpSpec((sig((B8, I32, BOOL), (B8,), V12),), (_RANK4,)),
    Op.REDUCE_ANY: OpSpec((sig((B8, I32, BOOL), (B8,), V12),), (_RANK4,)),
    Op.REDUCE_MAX: OpSpec(
        tuple(_each({F16: V12, F32: V12, QA8: V12, QAS8: V13}, (I32, BOOL))), (_RANK4, _SAME_QUANT)
    ),
    Op.REDUCE_MIN: OpSpec(
        tuple(_each({F16: V12, F32: V12, QA8: V12, QAS8: V13}, (I32, BOOL))), (_RANK4, _SAME_QUANT)
    ),
    Op.REDUCE_PROD: OpSpec(tuple(_each({F16: V12, F32: V12}, (I32, BOOL))), (_RANK4,)),
    Op.REDUCE_SUM: OpSpec(tuple(_each({F16: V12, F32: V12}, (I32, BOOL))), (_RANK4,)),
    Op.EMBEDDING_LOOKUP: OpSpec(
        tuple(sig((I32, t), (t,), v) for t, v in {F32: V10, I32: V12, QA8: V12, F16: V13, QAS8: V13}.items())
    ),
    Op.HASHTABLE_LOOKUP: OpSpec(tuple(sig((I32, I32, t), (t, QA8), V10) for t in (F32, I32, QA8))),
    Op.LSH_PROJECTION: OpSpec(_lsh_projection()),
    Op.FILL: OpSpec((
        sig((I32, HALF), (F16,), V13),
        sig((I32, FLOAT), (F32,), V13),
        sig((I32, INT), (I32,), V13),
    )),
    Op.RANK: OpSpec(tuple(
        sig((t,), (INT,), V13) for t in (F16, F32, I32, QA8, QS16, B8, QPC8, QA16, QS8, QAS8)
    )),
}
