"""The suite's operand type substitution: an operand given a type its operation does not accept.

VTS ValidateModel.cpp's mutateOperationOperandTypeTest.  Separate from the
other operand mutations because it alone is judged by the operations'
signatures: where the substitute is legal for the operation that reads or
writes the operand, the suite skips it, and that table of exceptions
(``_substitute_is_legal``) is the bulk of the mutator.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families.validation.mutator_base import (
    SCALAR_TYPES,
    Mutation,
    Mutators,
    operand_label,
    own_operand,
    type_label,
)
from vts.hal.enums import OperandType, OperandTypeRange, OperationType, is_extension_type
from vts.hal.types import Model, SymmPerChannelQuantParams

T = OperandType
Op = OperationType


_FUNDAMENTAL_TYPES = tuple(range(OperandTypeRange.FUNDAMENTAL_MIN, OperandTypeRange.FUNDAMENTAL_MAX + 1))


_CAST_LIKE = (Op.CAST, Op.ARGMAX, Op.ARGMIN)


_CAST_LIKE_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                    T.TENSOR_QUANT8_ASYMM_SIGNED)


_CONVOLUTIONS = (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D)


_TENSOR_TYPES = tuple(t for t in _FUNDAMENTAL_TYPES if t not in (*SCALAR_TYPES, T.SUBGRAPH))


#: How an operation uses an operand: (operation type, input slot), the slot -1 for an output.
Use = tuple[int, int]


def _operand_uses(model: Model) -> dict[int, list[Use]]:
    """Every use of each operand, gathered once per model (the rules below look at one operand's uses)."""
    uses: dict[int, list[Use]] = {}
    for op in model.main.operations:
        for slot, operand in enumerate(op.inputs):
            uses.setdefault(operand, []).append((op.type, slot))
        for operand in op.outputs:
            uses.setdefault(operand, []).append((op.type, -1))
    return uses


def _substitute_is_legal(uses: list[Use], model_has_cast_like: bool, new_type: int) -> bool:
    """Where another type is legal for the operand, the suite skips it (mutateOperationOperandTypeTest).

    ``uses`` are the operand's uses (``_operand_uses``); ``model_has_cast_like``
    whether any operation of the model is CAST, ARGMAX or ARGMIN.
    """
    if model_has_cast_like and new_type in _CAST_LIKE_TYPES:
        return True  # the suite skips these for every operand of such a model
    for op_type, slot in uses:
        if is_extension_type(op_type):
            return True  # an extension operation's signature is the vendor's: nnvts cannot call a type illegal
        if slot >= 0:
            if op_type == Op.LSH_PROJECTION and slot == 1:
                return True
            if op_type == Op.QUANTIZE and slot == 0 and new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
                return True
            if op_type == Op.RANDOM_MULTINOMIAL and slot == 0 and new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
                return True
            if op_type == Op.DEQUANTIZE and slot == 0 and new_type in (
                    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                    T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
                return True
            if op_type in _CONVOLUTIONS and slot == 1 and new_type in (
                    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
                return True
            if op_type == Op.AXIS_ALIGNED_BBOX_TRANSFORM and slot == 1 and new_type in (
                    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
                return True
            if op_type == Op.RANK and slot == 0 and new_type in _TENSOR_TYPES:
                return True
        else:
            if op_type == Op.QUANTIZE and new_type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
                return True
            if op_type == Op.DEQUANTIZE and new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
                return True
    return False


def _operation_operand_type(model: Model) -> Iterator[Mutation]:
    uses = _operand_uses(model)
    cast_like = any(op.type in _CAST_LIKE for op in model.main.operations)
    for i, operand in enumerate(model.main.operands):
        operand_uses = uses.get(i, [])
        for new_type in _FUNDAMENTAL_TYPES:
            if new_type == operand.type or _substitute_is_legal(operand_uses, cast_like, new_type):
                continue
            name = type_label(new_type)
            yield Mutation("operation_operand_type", (i, new_type),
                           f"operation_operand_type_{i}_to_{name}",
                           f"{operand_label(model, i)} changed to {name} (a type its operation "
                           "does not accept), with dims and quantization made consistent")


def _apply_operation_operand_type(model: Model, m: Mutation) -> None:
    """Change the type and make the operand self-consistent for the new type, as the suite does."""
    index, new_type = m.args
    operand = own_operand(model, index)
    dims = list(operand.dimensions) or [1]
    operand.type = new_type
    if new_type in SCALAR_TYPES:
        operand.dimensions, operand.scale, operand.zero_point = [], 0.0, 0
    elif new_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_BOOL8):
        operand.dimensions, operand.scale, operand.zero_point = dims, 0.0, 0
    elif new_type == T.TENSOR_INT32:
        operand.dimensions, operand.zero_point = dims, 0
    elif new_type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM):
        operand.dimensions = dims
        operand.scale = operand.scale if operand.scale != 0.0 else 1.0
    elif new_type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        operand.dimensions, operand.scale, operand.zero_point = dims, 0.0, 0
        channels = operand.dimensions[0] if operand.dimensions else 0
        operand.extra_params = SymmPerChannelQuantParams([1.0] * channels, 0)


#: This module's mutator, by kind (``mutations.MUTATORS`` puts it in the suite's order).
MUTATORS: Mutators = {
    "operation_operand_type": (_operation_operand_type, _apply_operation_operand_type),
}
