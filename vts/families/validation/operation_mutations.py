"""Operation and graph mutations of the HAL validation suite: the model's wiring made invalid.

VTS ValidateModel.cpp's mutateExecutionOrderTest, mutateOperandAddWriterTest,
mutateOperationTypeTest, mutateOperation{Input,Output}OperandIndexTest,
mutateOperationRemoveWriteTest, removeOperandTest, removeOperationTest,
removeOperation{Input,Output}Test and addOperation{Input,Output}Test.  Separate
from the operand mutations because these change which operation reads or
writes which operand (order, writers, indexes, removals, additions), and
their skips are the operations' signatures (``_removal_leaves_valid_signature``,
``_input_addition_leaves_valid_signature``).
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families.validation.mutator_base import (
    Mutation,
    Mutators,
    new_scalar,
    new_temporary,
    op_label,
    operand_label,
    own_operand,
    own_operation,
)
from vts.hal.enums import OperandLifeTime, OperationType, OperationTypeRange, is_extension_type
from vts.hal.types import Model, Operation

L = OperandLifeTime
Op = OperationType


def _execution_order(model: Model) -> Iterator[Mutation]:
    main = model.main
    for k, op in enumerate(main.operations):
        reads_temp = any(main.operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)
                         for i in op.inputs if 0 <= i < len(main.operands))
        if reads_temp:
            yield Mutation("execution_order", (k, 0), f"execution_order_{k}_first",
                           f"{op_label(model, k)} moved before the operations that write its inputs")
        writes_used = any(main.operands[i].number_of_consumers > 0 for i in op.outputs if 0 <= i < len(main.operands))
        if writes_used:
            yield Mutation("execution_order", (k, 1), f"execution_order_{k}_last",
                           f"{op_label(model, k)} moved after the operations that read its outputs")


def _apply_execution_order(model: Model, m: Mutation) -> None:
    k, to_end = m.args
    op = model.main.operations.pop(k)
    if to_end:
        model.main.operations.append(op)
    else:
        model.main.operations.insert(0, op)


def _add_writer(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j, output in enumerate(op.outputs):
            yield Mutation("add_writer", (k, j), f"add_writer_{k}_{j}",
                           f"a copy of {op_label(model, k)} also writes operand {output}: two writers")


def _apply_add_writer(model: Model, m: Mutation) -> None:
    k, j = m.args
    op = model.main.operations[k]
    outputs = [out if position == j else new_temporary(model, out) for position, out in enumerate(op.outputs)]
    for i in op.inputs:
        own_operand(model, i).number_of_consumers += 1
    model.main.operations.append(Operation(op.type, list(op.inputs), outputs))


INVALID_OPERATION_TYPES = (OperationTypeRange.FUNDAMENTAL_MAX + 1, OperationTypeRange.OEM_MIN - 1,
                           OperationTypeRange.OEM_MAX + 1)


def _operation_type(model: Model) -> Iterator[Mutation]:
    for k in range(len(model.main.operations)):
        for value in INVALID_OPERATION_TYPES:
            yield Mutation("operation_type", (k, value), f"operation_type_{k}_to_{value}",
                           f"{op_label(model, k)} type changed to invalid value {value}")


def _apply_operation_type(model: Model, m: Mutation) -> None:
    own_operation(model, m.args[0]).type = m.args[1]


def _operation_input_index(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.inputs)):
            yield Mutation("operation_input_index", (k, j), f"operation_input_index_{k}_{j}",
                           f"{op_label(model, k)} input {j} points past the last operand")


def _apply_operation_input_index(model: Model, m: Mutation) -> None:
    k, j = m.args
    own_operation(model, k).inputs[j] = len(model.main.operands)


def _operation_output_index(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.outputs)):
            yield Mutation("operation_output_index", (k, j), f"operation_output_index_{k}_{j}",
                           f"{op_label(model, k)} output {j} points past the last operand")


def _apply_operation_output_index(model: Model, m: Mutation) -> None:
    k, j = m.args
    own_operation(model, k).outputs[j] = len(model.main.operands)


def _remove_write(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j, output in enumerate(op.outputs):
            if model.main.operands[output].number_of_consumers > 0:
                yield Mutation("remove_write", (k, j), f"remove_write_{k}_{j}",
                               f"{op_label(model, k)} no longer writes operand {output}, which is still read")


def _apply_remove_write(model: Model, m: Mutation) -> None:
    k, j = m.args
    op = own_operation(model, k)
    op.outputs[j] = new_temporary(model, op.outputs[j])


_VARIABLE_OUTPUTS = (Op.SPLIT, Op.BIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_RNN,
                     Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.UNIDIRECTIONAL_SEQUENCE_RNN)


def _remove_operand(model: Model) -> Iterator[Mutation]:
    for i, operand in enumerate(model.main.operands):
        if operand.number_of_consumers == 0:
            continue
        if any(op.type in _VARIABLE_OUTPUTS and i in op.outputs for op in model.main.operations):
            continue
        yield Mutation("remove_operand", (i,), f"remove_operand_{i}",
                       f"{operand_label(model, i)} removed with every reference to it")


def _apply_remove_operand(model: Model, m: Mutation) -> None:
    """Delete the operand and every reference to it; later references keep their (now shifted) numbers."""
    (index,) = m.args
    main = model.main
    del main.operands[index]

    def drop(indexes: list[int]) -> list[int]:
        return [i for i in indexes if i != index]

    for k, op in enumerate(main.operations):
        if index in op.inputs or index in op.outputs:
            op = own_operation(model, k)
            op.inputs = drop(op.inputs)
            op.outputs = drop(op.outputs)
    main.input_indexes = drop(main.input_indexes)
    main.output_indexes = drop(main.output_indexes)


def _remove_operation(model: Model) -> Iterator[Mutation]:
    for k in range(len(model.main.operations)):
        yield Mutation("remove_operation", (k,), f"remove_operation_{k}", f"{op_label(model, k)} removed")


def _apply_remove_operation(model: Model, m: Mutation) -> None:
    op = model.main.operations.pop(m.args[0])
    for i in op.inputs:
        own_operand(model, i).number_of_consumers -= 1


def _removal_leaves_valid_signature(op: Operation, slot: int) -> bool:
    """Input removals that leave a still-valid signature are skipped by the suite (removeOperationInputTest)."""
    n = len(op.inputs)
    t = op.type
    if is_extension_type(t):
        return True  # an extension operation's signature is the vendor's: nnvts cannot call a removal invalid
    if t == Op.CONCATENATION and n > 2 and slot != n - 1:
        return True
    if t == Op.DEPTHWISE_CONV_2D and (n, slot) in ((12, 11), (9, 8)):
        return True
    if t in (Op.CONV_2D, Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D) and (n, slot) in ((11, 10), (8, 7)):
        return True
    if t == Op.RESIZE_BILINEAR and n >= 4 and slot >= 3:
        return True
    if t == Op.RESIZE_NEAREST_NEIGHBOR and n >= 5 and slot >= 3:
        return True
    if t in (Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE, Op.BATCH_TO_SPACE_ND) and (n, slot) == (3, 2):
        return True
    if t == Op.SPACE_TO_BATCH_ND and (n, slot) == (4, 3):
        return True
    if t == Op.L2_NORMALIZATION and (n, slot) == (2, 1):
        return True
    if t == Op.LOCAL_RESPONSE_NORMALIZATION and (n, slot) == (6, 5):
        return True
    if t == Op.PACK and n > 2 and slot != 0:
        return True  # AIDL VTS: PACK packs any number of tensors, one fewer is still a PACK
    return t == Op.SOFTMAX and (n, slot) == (3, 2)


def _remove_operation_input(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.inputs)):
            if not _removal_leaves_valid_signature(op, j):
                yield Mutation("remove_operation_input", (k, j), f"remove_operation_input_{k}_{j}",
                               f"{op_label(model, k)} input {j} removed")


def _apply_remove_operation_input(model: Model, m: Mutation) -> None:
    k, j = m.args
    removed = own_operation(model, k).inputs.pop(j)
    own_operand(model, removed).number_of_consumers -= 1


def _remove_operation_output(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        for j in range(len(op.outputs)):
            yield Mutation("remove_operation_output", (k, j), f"remove_operation_output_{k}_{j}",
                           f"{op_label(model, k)} output {j} removed")


def _apply_remove_operation_output(model: Model, m: Mutation) -> None:
    k, j = m.args
    own_operation(model, k).outputs.pop(j)


def _input_addition_leaves_valid_signature(op: Operation) -> bool:
    n = len(op.inputs)
    if is_extension_type(op.type):
        return True  # an extension operation's signature is the vendor's: nnvts cannot call an addition invalid
    return ((op.type == Op.L2_NORMALIZATION and n == 1) or (op.type == Op.LOCAL_RESPONSE_NORMALIZATION and n == 5)
            or (op.type == Op.SOFTMAX and n == 2)
            or (op.type in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR) and n < 6))


def _add_operation_input(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        if not _input_addition_leaves_valid_signature(op):
            yield Mutation("add_operation_input", (k,), f"add_operation_input_{k}",
                           f"{op_label(model, k)} got an extra INT32 input")


def _apply_add_operation_input(model: Model, m: Mutation) -> None:
    index = new_scalar(model, L.SUBGRAPH_INPUT)
    own_operation(model, m.args[0]).inputs.append(index)
    model.main.input_indexes.append(index)


def _add_operation_output(model: Model) -> Iterator[Mutation]:
    for k, op in enumerate(model.main.operations):
        # An extension operation's signature is the vendor's: what makes its extra output invalid for nnvts to
        # call it so is HIDL's numberOfConsumers (the new output is read by nobody), a rule AIDL has not.
        check = "add_operation_output.extension" if is_extension_type(op.type) else ""
        yield Mutation("add_operation_output", (k,), f"add_operation_output_{k}",
                       f"{op_label(model, k)} got an extra INT32 output", check=check)


def _apply_add_operation_output(model: Model, m: Mutation) -> None:
    index = new_scalar(model, L.SUBGRAPH_OUTPUT)
    own_operation(model, m.args[0]).outputs.append(index)
    model.main.output_indexes.append(index)


#: This module's mutators, by kind (``mutations.MUTATORS`` puts them in the suite's order).
MUTATORS: Mutators = {
    "execution_order": (_execution_order, _apply_execution_order),
    "add_writer": (_add_writer, _apply_add_writer),
    "operation_type": (_operation_type, _apply_operation_type),
    "operation_input_index": (_operation_input_index, _apply_operation_input_index),
    "operation_output_index": (_operation_output_index, _apply_operation_output_index),
    "remove_write": (_remove_write, _apply_remove_write),
    "remove_operand": (_remove_operand, _apply_remove_operand),
    "remove_operation": (_remove_operation, _apply_remove_operation),
    "remove_operation_input": (_remove_operation_input, _apply_remove_operation_input),
    "remove_operation_output": (_remove_operation_output, _apply_remove_operation_output),
    "add_operation_input": (_add_operation_input, _apply_add_operation_input),
    "add_operation_output": (_add_operation_output, _apply_add_operation_output),
}
