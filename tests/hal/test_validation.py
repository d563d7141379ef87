"""Model and request validation (vts.hal.validation), including VTS's model mutations."""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import math
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vts.hal import memory as hal_memory
from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType
from vts.hal.operations import validate_operation
from vts.hal.types import (
    DataLocation,
    ExtensionNameAndPrefix,
    MemoryToken,
    Model,
    Operand,
    Operation,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
)
from vts.hal.validation import (
    ValidationError,
    count_consumers,
    operand_byte_size,
    validate_memory_pool_names,
    validate_model,
    validate_operand,
    validate_request,
)

T = OperandType
L = OperandLifeTime
Op = OperationType
V10, V11, V12, V13 = HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


# ---------------------------------------------------------------------------
# Model builders


def operand(t: int, dims: list[int], lifetime: int, *, scale: float = 0.0, zero_point: int = 0,
            location: DataLocation | None = None, extra: object = None) -> Operand:
    return Operand(int(t), list(dims), 0, scale, zero_point, int(lifetime), location or DataLocation(), extra)


def finish(subgraph: Subgraph) -> Subgraph:
    """Fill in numberOfConsumers the way a model builder must."""
    for o, count in zip(subgraph.operands, count_consumers(subgraph), strict=True):
        o.number_of_consumers = count
    return subgraph


def add_model() -> Model:
    """The single-ADD model of VTS ValidateModel.cpp: in0 + in1 (F32 [2]) with a NONE activation constant."""
    values = (0).to_bytes(4, "little")
    main = finish(Subgraph(
        operands=[
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            operand(T.INT32, [], L.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.ADD, [0, 1, 2], [3])],
        input_indexes=[0, 1],
        output_indexes=[3],
    ))
    return Model(main=main, operand_values=values)


def conv_model(pool_kind: str = hal_memory.ASHMEM) -> Model:
    """A quantized CONV_2D whose filter (per-channel) lives in a memory pool as CONSTANT_REFERENCE."""
    filter_values = bytes([1, 2, 3, 4, 5, 6, 7, 8])  # [2, 2, 2, 1] int8
    pool = hal_memory.allocate(pool_kind, 16)
    pool.write(0, filter_values)
    values = bytearray()
    bias_offset = 0
    values += (0).to_bytes(4, "little") * 2  # bias [2] int32
    scalar_offset = len(values)
    for v in (2, 1, 1, 0):  # padding VALID, stride 1, 1, activation NONE
        values += v.to_bytes(4, "little")
    scalar_location = [DataLocation(0, scalar_offset + 4 * i, 4) for i in range(4)]
    main = finish(Subgraph(
        operands=[
            operand(T.TENSOR_QUANT8_ASYMM, [1, 3, 3, 1], L.SUBGRAPH_INPUT, scale=0.5, zero_point=128),
            operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 2, 2, 1], L.CONSTANT_REFERENCE,
                    location=DataLocation(0, 0, 8), extra=SymmPerChannelQuantParams([0.5, 0.25], 0)),
            operand(T.TENSOR_INT32, [2], L.CONSTANT_COPY, location=DataLocation(0, bias_offset, 8)),
            *[operand(T.INT32, [], L.CONSTANT_COPY, location=loc) for loc in scalar_location],
            operand(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 2], L.SUBGRAPH_OUTPUT, scale=1.0, zero_point=128),
        ],
        operations=[Operation(Op.CONV_2D, [0, 1, 2, 3, 4, 5, 6], [7])],
        input_indexes=[0],
        output_indexes=[7],
    ))
    return Model(main=main, operand_values=bytes(values), pools=[pool])


def cycle_model() -> Model:
    """VTS BasicTests.cpp CycleTest: t3 = ADD(in0, t4), t4 = ADD(in1, t3), out = ADD(t4, in0)."""
    main = finish(Subgraph(
        operands=[
            operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),  # 0 in0
            operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),  # 1 in1
            operand(T.INT32, [], L.CONSTANT_COPY, location=DataLocation(0, 0, 4)),  # 2 act
            operand(T.TENSOR_FLOAT32, [1], L.TEMPORARY_VARIABLE),  # 3 t3
            operand(T.TENSOR_FLOAT32, [1], L.TEMPORARY_VARIABLE),  # 4 t4
            operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT),  # 5 out
        ],
        operations=[
            Operation(Op.ADD, [0, 4, 2], [3]),
            Operation(Op.ADD, [1, 3, 2], [4]),
            Operation(Op.ADD, [4, 0, 2], [5]),
        ],
        input_indexes=[0, 1],
        output_indexes=[5],
    ))
    return Model(main=main, operand_values=bytes(4))


def _branch(op_type: int) -> Subgraph:
    """x -> op(x, x, NONE); used as IF branches."""
    return finish(Subgraph(
        operands=[
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            operand(T.INT32, [], L.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(op_type, [0, 0, 1], [2])],
        input_indexes=[0],
        output_indexes=[2],
    ))


def if_model() -> Model:
    """out = cond ? x + x : x * x, with the branches as referenced subgraphs 0 and 1."""
    main = finish(Subgraph(
        operands=[
            operand(T.TENSOR_BOOL8, [1], L.SUBGRAPH_INPUT),
            operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 1, 0)),
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.IF, [0, 1, 2, 3], [4])],
        input_indexes=[0, 3],
        output_indexes=[4],
    ))
    return Model(main=main, referenced=[_branch(Op.ADD), _branch(Op.MUL)], operand_values=bytes(4))


def while_model(counter_dims: list[int] | None = None) -> Model:
    """i = 0 (input); while i < limit: i = i + 1.  Referenced 0 = condition, 1 = body."""
    dims = [1] if counter_dims is None else counter_dims
    values = struct.pack("<iff", 0, 10.0, 1.0)  # activation NONE, the limit, the increment
    limit_offset, one_offset = 4, 8
    condition = finish(Subgraph(
        operands=[
            operand(T.TENSOR_FLOAT32, dims, L.SUBGRAPH_INPUT),
            operand(T.TENSOR_FLOAT32, [1], L.CONSTANT_COPY, location=DataLocation(0, limit_offset, 4)),
            operand(T.TENSOR_BOOL8, [1], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.LESS, [0, 1], [2])],
        input_indexes=[0],
        output_indexes=[2],
    ))
    body = finish(Subgraph(
        operands=[
            operand(T.TENSOR_FLOAT32, dims, L.SUBGRAPH_INPUT),
            operand(T.TENSOR_FLOAT32, [1], L.CONSTANT_COPY, location=DataLocation(0, one_offset, 4)),
            operand(T.INT32, [], L.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
            operand(T.TENSOR_FLOAT32, dims, L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.ADD, [0, 1, 2], [3])],
        input_indexes=[0],
        output_indexes=[3],
    ))
    main = finish(Subgraph(
        operands=[
            operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 1, 0)),
            operand(T.TENSOR_FLOAT32, dims, L.SUBGRAPH_INPUT),
            operand(T.TENSOR_FLOAT32, dims, L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.WHILE, [0, 1, 2], [3])],
        input_indexes=[2],
        output_indexes=[3],
    ))
    return Model(main=main, referenced=[condition, body], operand_values=bytes(values))


def expect_invalid(model: Model, match: str, hal_version: HalVersion = V13, **kwargs: object) -> None:
    with pytest.raises(ValidationError, match=match):
        validate_model(model, hal_version, **kwargs)


# ---------------------------------------------------------------------------
# VTS model mutations (ValidateModel.cpp), applied to model.main


_SCALAR_TYPES = (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL)
_FUNDAMENTAL = range(16)
Mutation = tuple[str, Model]


def _size_known(o: Operand) -> bool:
    if o.type in _SCALAR_TYPES:
        return True
    return bool(o.dimensions) and 0 not in o.dimensions


def _become_constant_copy(model: Model, o: Operand) -> None:
    size = operand_byte_size(o.type, o.dimensions)
    if size > len(model.operand_values):
        model.operand_values = bytes(model.operand_values) + bytes(size - len(model.operand_values))
    o.lifetime = L.CONSTANT_COPY
    o.location = DataLocation(0, 0, size)


def _mutant(model: Model, change: Callable[[Model], None]) -> Model:
    clone = model.copy()
    change(clone)
    return clone


def _invalid_scales(t: int) -> list[float]:
    if t in (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.TENSOR_BOOL8, T.TENSOR_FLOAT16,
             T.TENSOR_FLOAT32, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.SUBGRAPH):
        return [1.0]
    if t == T.TENSOR_INT32:
        return [-1.0]
    return [0.0]


def _invalid_zero_points(t: int) -> list[int]:
    table = {
        T.TENSOR_QUANT8_ASYMM: [-1, 256],
        T.TENSOR_QUANT8_SYMM: [-129, -1, 1, 128],
        T.TENSOR_QUANT16_ASYMM: [-1, 65536],
        T.TENSOR_QUANT16_SYMM: [-32769, -1, 1, 32768],
    }
    if t in (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.TENSOR_BOOL8, T.TENSOR_FLOAT16,
             T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.SUBGRAPH):
        return [1]
    return table.get(t, [])


def _mutate_operand_type(o: Operand, t: int) -> None:
    """VTS's mutateOperand: change the type and make the operand self-consistent."""
    dims = list(o.dimensions) if o.dimensions else [1]
    first_dim = o.dimensions[0] if o.dimensions else 0
    o.type = t
    if t in _SCALAR_TYPES:
        o.dimensions, o.scale, o.zero_point = [], 0.0, 0
    elif t in (T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
        o.dimensions, o.scale, o.zero_point = dims, 0.0, 0
    elif t == T.TENSOR_INT32:
        o.dimensions, o.zero_point = dims, 0
    elif t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM):
        o.dimensions, o.scale = dims, (o.scale if o.scale != 0 else 1.0)
    elif t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        o.dimensions, o.scale, o.zero_point = dims, 0.0, 0
        o.extra_params = SymmPerChannelQuantParams([1.0] * first_dim, 0)


def _operand_type_skip(model: Model, index: int, t: int) -> bool:
    """VTS's mutateOperationOperandTypeSkip: substitutes that are legal for the operation."""
    main = model.main
    any_numeric = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                   T.TENSOR_QUANT8_ASYMM_SIGNED)
    floats = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)
    for op in main.operations:
        first_in = op.inputs[0] if op.inputs else None
        second_in = op.inputs[1] if len(op.inputs) > 1 else None
        first_out = op.outputs[0] if op.outputs else None
        if op.type == Op.LSH_PROJECTION and index == second_in:
            return True
        if op.type in (Op.CAST, Op.ARGMAX, Op.ARGMIN) and t in any_numeric:
            return True
        if op.type == Op.QUANTIZE and ((index == first_in and t in floats) or (
                index == first_out and t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED))):
            return True
        if op.type == Op.RANDOM_MULTINOMIAL and index == first_in and t in floats:
            return True
        if op.type == Op.DEQUANTIZE and ((index == first_in and t in (
                T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                T.TENSOR_QUANT8_SYMM_PER_CHANNEL)) or (index == first_out and t in floats)):
            return True
        if op.type in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D) and \
                index == second_in and t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
            return True
        if op.type == Op.AXIS_ALIGNED_BBOX_TRANSFORM and index == second_in and t in (
                T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
            return True
        if op.type == Op.RANK and index == first_in and t not in (*_SCALAR_TYPES, T.SUBGRAPH):
            return True
    return False


def _remove_input_skip(op: Operation, slot: int) -> bool:
    """VTS's removeOperationInputSkip: removals that leave a valid (shorter) signature."""
    n = len(op.inputs)
    skips = {
        Op.DEPTHWISE_CONV_2D: {(12, 11), (9, 8)},
        Op.CONV_2D: {(11, 10), (8, 7)},
        Op.AVERAGE_POOL_2D: {(11, 10), (8, 7)},
        Op.MAX_POOL_2D: {(11, 10), (8, 7)},
        Op.L2_POOL_2D: {(11, 10), (8, 7)},
        Op.SPACE_TO_DEPTH: {(3, 2)},
        Op.DEPTH_TO_SPACE: {(3, 2)},
        Op.BATCH_TO_SPACE_ND: {(3, 2)},
        Op.SPACE_TO_BATCH_ND: {(4, 3)},
        Op.L2_NORMALIZATION: {(2, 1)},
        Op.LOCAL_RESPONSE_NORMALIZATION: {(6, 5)},
        Op.SOFTMAX: {(3, 2)},
    }
    if op.type == Op.CONCATENATION and n > 2 and slot != n - 1:
        return True
    if op.type == Op.RESIZE_BILINEAR and n >= 4 and slot >= 3:
        return True
    if op.type == Op.RESIZE_NEAREST_NEIGHBOR and n >= 5 and slot >= 3:
        return True
    return (n, slot) in skips.get(op.type, set())


def _add_input_skip(op: Operation) -> bool:
    n = len(op.inputs)
    return ((op.type == Op.L2_NORMALIZATION and n == 1)
            or (op.type == Op.LOCAL_RESPONSE_NORMALIZATION and n == 5)
            or (op.type == Op.SOFTMAX and n == 2)
            or (op.type in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR) and n < 6))


def _remove_operand(model: Model, index: int) -> None:
    """Delete operand ``index`` and every reference to it, as VTS's removeOperandTest does.

    VTS means to renumber the larger indexes but does not (its decrement acts on a copy), so the
    surviving references point one operand further along.  The quirk matters: with a correct
    renumbering, removing an optional trailing input (SOFTMAX's axis, CONV_2D's layout flag, a
    CONCATENATION input) leaves a *valid* model, which VTS would then wrongly expect to be refused.
    """
    main = model.main

    def fix(values: list[int]) -> list[int]:
        return [v for v in values if v != index]

    main.input_indexes = fix(main.input_indexes)
    main.output_indexes = fix(main.output_indexes)
    for op in main.operations:
        op.inputs, op.outputs = fix(op.inputs), fix(op.outputs)
    del main.operands[index]


def model_mutations(model: Model) -> Iterator[Mutation]:
    """Every model mutation of VTS's validateModel (1.3), in order; each must be rejected."""
    main = model.main
    operands, operations = main.operands, main.operations

    # 1. execution order
    for k, op in enumerate(operations):
        if any(operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT) for i in op.inputs):
            def to_front(m: Model, k: int = k) -> None:
                m.main.operations.insert(0, m.main.operations.pop(k))
            yield f"execution order: operation {k} is a reader", _mutant(model, to_front)
        if any(operands[i].number_of_consumers > 0 for i in op.outputs):
            def to_end(m: Model, k: int = k) -> None:
                m.main.operations.append(m.main.operations.pop(k))
            yield f"execution order: operation {k} is a writer", _mutant(model, to_end)

    for i, o in enumerate(operands):
        # 2. invalid operand types
        for bad in (-1, 16, 9999, 10002):
            yield f"operand {i} type {bad}", _mutant(model, lambda m, i=i, bad=bad: setattr(
                m.main.operands[i], "type", bad))
        # 3. scalar rank
        if o.type in _SCALAR_TYPES:
            yield f"operand {i} rank 1", _mutant(model, lambda m, i=i: setattr(
                m.main.operands[i], "dimensions", [0]))
    for i, o in enumerate(operands):
        # 4. scale
        for scale in _invalid_scales(o.type):
            yield f"operand {i} scale {scale}", _mutant(model, lambda m, i=i, s=scale: setattr(
                m.main.operands[i], "scale", s))
    for i, o in enumerate(operands):
        # 5. zero point
        for zero_point in _invalid_zero_points(o.type):
            yield f"operand {i} zeroPoint {zero_point}", _mutant(model, lambda m, i=i, z=zero_point: setattr(
                m.main.operands[i], "zero_point", z))
    for i, o in enumerate(operands):
        # 6. lifetime flips between "written" and "not written"
        if o.lifetime in (L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE):
            targets = [L.SUBGRAPH_INPUT] + ([L.CONSTANT_COPY] if _size_known(o) else [])
        elif o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT):
            targets = [L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT]
        else:
            targets = []
        for target in targets:
            def flip(m: Model, i: int = i, target: int = target) -> None:
                g, x = m.main, m.main.operands[i]
                if x.lifetime == L.SUBGRAPH_INPUT:
                    g.input_indexes.remove(i)
                if x.lifetime == L.SUBGRAPH_OUTPUT:
                    g.output_indexes.remove(i)
                x.lifetime, x.location = target, DataLocation()
                if target == L.CONSTANT_COPY:
                    _become_constant_copy(m, x)
                elif target == L.SUBGRAPH_INPUT:
                    g.input_indexes.append(i)
                elif target == L.SUBGRAPH_OUTPUT:
                    g.output_indexes.append(i)
            yield f"operand {i} lifetime {L(target).name}", _mutant(model, flip)
    for i, o in enumerate(operands):
        # 7. lifetime changed without fixing the input/output lists
        def keep_lists(m: Model, i: int = i) -> None:
            x = m.main.operands[i]
            if x.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
                x.lifetime, x.location = L.SUBGRAPH_INPUT, DataLocation()
            elif x.lifetime == L.SUBGRAPH_INPUT:
                _become_constant_copy(m, x)
            elif x.lifetime == L.SUBGRAPH_OUTPUT:
                x.lifetime = L.TEMPORARY_VARIABLE
            elif x.lifetime == L.TEMPORARY_VARIABLE:
                x.lifetime = L.SUBGRAPH_OUTPUT
        if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE) or (
                o.lifetime == L.SUBGRAPH_INPUT and _size_known(o)):
            yield f"operand {i} input/output lifetime", _mutant(model, keep_lists)
    for i, o in enumerate(operands):
        # 8. numberOfConsumers
        n = o.number_of_consumers
        for count in ([1] if n == 0 else [n - 1, n + 1]):
            yield f"operand {i} numberOfConsumers {count}", _mutant(model, lambda m, i=i, c=count: setattr(
                m.main.operands[i], "number_of_consumers", c))
    for k, op in enumerate(operations):
        # 9. a second writer
        for j in range(len(op.outputs)):
            def second_writer(m: Model, k: int = k, j: int = j) -> None:
                g = m.main
                new = copy.deepcopy(g.operations[k])
                for x in new.inputs:
                    g.operands[x].number_of_consumers += 1
                for slot, x in enumerate(new.outputs):
                    if slot == j:
                        continue
                    fresh = copy.deepcopy(g.operands[x])
                    fresh.number_of_consumers = 0
                    fresh.lifetime = L.TEMPORARY_VARIABLE
                    g.operands.append(fresh)
                    new.outputs[slot] = len(g.operands) - 1
                g.operations.append(new)
            yield f"operation {k} output {j} second writer", _mutant(model, second_writer)
    for i, o in enumerate(operands):
        # 10. operand type replaced by every other fundamental type, made self-consistent
        for t in _FUNDAMENTAL:
            if t == o.type or _operand_type_skip(model, i, t):
                continue
            yield f"operand {i} becomes {T(t).name}", _mutant(model, lambda m, i=i, t=t: _mutate_operand_type(
                m.main.operands[i], t))
    for k in range(len(operations)):
        # 11. invalid operation types
        for bad in (106, 9999, 10001):
            yield f"operation {k} type {bad}", _mutant(model, lambda m, k=k, bad=bad: setattr(
                m.main.operations[k], "type", bad))
    for k, op in enumerate(operations):
        # 12. / 13. operand indexes out of range
        for j in range(len(op.inputs)):
            yield f"operation {k} input {j} out of range", _mutant(
                model, lambda m, k=k, j=j: m.main.operations[k].inputs.__setitem__(j, len(m.main.operands)))
    for k, op in enumerate(operations):
        for j in range(len(op.outputs)):
            yield f"operation {k} output {j} out of range", _mutant(
                model, lambda m, k=k, j=j: m.main.operations[k].outputs.__setitem__(j, len(m.main.operands)))
    for k, op in enumerate(operations):
        # 14. the written operand is never written
        for j, x in enumerate(op.outputs):
            if operands[x].number_of_consumers > 0:
                def remove_write(m: Model, k: int = k, j: int = j) -> None:
                    g = m.main
                    fresh = copy.deepcopy(g.operands[g.operations[k].outputs[j]])
                    fresh.number_of_consumers = 0
                    fresh.lifetime = L.TEMPORARY_VARIABLE
                    g.operands.append(fresh)
                    g.operations[k].outputs[j] = len(g.operands) - 1
                yield f"operation {k} output {j} write removed", _mutant(model, remove_write)
    for i, o in enumerate(operands):
        # 15. remove an operand that is read
        writers = [op for op in operations if i in op.outputs]
        variable = any(op.type in (Op.SPLIT, Op.BIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_RNN,
                                   Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.UNIDIRECTIONAL_SEQUENCE_RNN)
                       for op in writers)
        if o.number_of_consumers > 0 and not variable:
            yield f"operand {i} removed", _mutant(model, lambda m, i=i: _remove_operand(m, i))
    for k in range(len(operations)):
        # 16. remove an operation
        def remove_operation(m: Model, k: int = k) -> None:
            removed = m.main.operations.pop(k)
            for x in removed.inputs:
                m.main.operands[x].number_of_consumers -= 1
        yield f"operation {k} removed", _mutant(model, remove_operation)
    for k, op in enumerate(operations):
        # 17. remove an operation input
        for j in range(len(op.inputs)):
            if _remove_input_skip(op, j):
                continue
            def remove_input(m: Model, k: int = k, j: int = j) -> None:
                x = m.main.operations[k].inputs.pop(j)
                m.main.operands[x].number_of_consumers -= 1
            yield f"operation {k} input {j} removed", _mutant(model, remove_input)
    for k, op in enumerate(operations):
        # 18. remove an operation output
        for j in range(len(op.outputs)):
            yield f"operation {k} output {j} removed", _mutant(model, lambda m, k=k, j=j: m.main.operations[
                k].outputs.pop(j))
    for k, op in enumerate(operations):
        # 19. add an operation input
        if not _add_input_skip(op):
            def add_input(m: Model, k: int = k) -> None:
                g = m.main
                g.operands.append(operand(T.INT32, [], L.SUBGRAPH_INPUT))
                g.operands[-1].number_of_consumers = 1
                g.operations[k].inputs.append(len(g.operands) - 1)
                g.input_indexes.append(len(g.operands) - 1)
            yield f"operation {k} extra input", _mutant(model, add_input)
    for k in range(len(operations)):
        # 20. add an operation output (created with numberOfConsumers 1, as VTS does)
        def add_output(m: Model, k: int = k) -> None:
            g = m.main
            g.operands.append(operand(T.INT32, [], L.SUBGRAPH_OUTPUT))
            g.operands[-1].number_of_consumers = 1
            g.operations[k].outputs.append(len(g.operands) - 1)
            g.output_indexes.append(len(g.operands) - 1)
        yield f"operation {k} extra output", _mutant(model, add_output)


# ---------------------------------------------------------------------------
# Valid models


def test_add_model_is_valid_in_every_hal_version() -> None:
    for version in (V10, V11, V12, V13):
        validate_model(add_model(), version)


def test_count_consumers() -> None:
    model = cycle_model()
    assert count_consumers(model.main) == [2, 1, 3, 1, 2, 0]
    broken = Subgraph([operand(T.FLOAT32, [], L.SUBGRAPH_INPUT)], [Operation(Op.ADD, [0, 7, -1], [])], [], [])
    assert count_consumers(broken) == [1]


def test_conv_model_with_a_constant_pool_is_valid() -> None:
    model = conv_model()
    try:
        validate_model(model, V12)
        expect_invalid(model, r"needs a later HAL|need HAL 1.2", V11)
    finally:
        model.pools[0].close()


def test_if_and_while_models_are_valid() -> None:
    validate_model(if_model())
    validate_model(while_model())


# ---------------------------------------------------------------------------
# The single-op ADD mutation matrix


def test_add_model_mutation_matrix_is_complete_and_every_case_is_rejected() -> None:
    mutations = list(model_mutations(add_model()))
    # ValidateModel.cpp's mutations worked through: 122 getSupportedOperations cases for the add model.
    assert len(mutations) == 122
    accepted = []
    for description, mutant in mutations:
        try:
            validate_model(mutant)
        except ValidationError as error:
            assert error.message, description
        else:
            accepted.append(description)
    assert accepted == []


@pytest.mark.parametrize("builder", [conv_model, if_model, while_model])
def test_mutations_of_other_models_are_rejected(builder: Callable[[], Model]) -> None:
    model = builder()
    accepted = []
    try:
        validate_model(model)
        for description, mutant in model_mutations(model):
            try:
                validate_model(mutant)
            except ValidationError:
                continue
            accepted.append(description)
    finally:
        for pool in model.pools:
            pool.close()
    assert accepted == []


def test_messages_name_the_problem() -> None:
    model = add_model()
    model.main.operands[1].type = T.TENSOR_INT32
    expect_invalid(model, "main operation 0: ADD: input 1 has type TENSOR_INT32, expected TENSOR_FLOAT32")
    model = add_model()
    model.main.operands[3].number_of_consumers = 1
    expect_invalid(model, "main operand 3 declares numberOfConsumers 1, but 0 operation inputs read it")
    model = add_model()
    model.main.operations[0].type = 106
    expect_invalid(model, "unknown operation type 106")


# ---------------------------------------------------------------------------
# Graph rules


def test_cycle_is_rejected() -> None:
    expect_invalid(cycle_model(), r"main operation 0 \(ADD\) input 1 reads operand 4 before it is written")


def test_operand_written_twice_and_never_written() -> None:
    model = add_model()
    model.main.operations.append(copy.deepcopy(model.main.operations[0]))
    for x in (0, 1, 2):
        model.main.operands[x].number_of_consumers += 1
    expect_invalid(model, "already written")
    model = add_model()
    model.main.operands.append(operand(T.TENSOR_FLOAT32, [2], L.TEMPORARY_VARIABLE))
    expect_invalid(model, "main operand 4 is never written")


def test_input_output_lists() -> None:
    model = add_model()
    model.main.input_indexes = [0, 1, 1]
    expect_invalid(model, "more than once")
    model = add_model()
    model.main.input_indexes = [0]
    expect_invalid(model, "main operand 1 has lifetime SUBGRAPH_INPUT but is not in the subgraph's inputs")
    model = add_model()
    model.main.output_indexes = [2]
    expect_invalid(model, r"output 0 .* has lifetime CONSTANT_COPY, expected SUBGRAPH_OUTPUT")
    model = add_model()
    model.main.output_indexes = [9]
    expect_invalid(model, "out of range")


def test_operation_outputs_must_be_temporary_or_output() -> None:
    model = add_model()
    model.main.operations[0].outputs = [1]  # writes a subgraph input
    expect_invalid(model, "operations may only write TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT")


def test_empty_main_subgraph() -> None:
    model = add_model()
    model.main.operations = []
    expect_invalid(model, "at least one operation")


# ---------------------------------------------------------------------------
# Operand rules


def _check_operand(o: Operand, **kwargs: object) -> None:
    validate_operand(o, index=0, operand_values_size=16, pool_sizes=[8], referenced_count=1, **kwargs)


@pytest.mark.parametrize(
    ("t", "scale", "zero_point", "ok"),
    [
        (T.TENSOR_FLOAT32, 0.0, 0, True), (T.TENSOR_FLOAT32, 0.5, 0, False),
        (T.TENSOR_FLOAT32, 0.0, 1, False),
        (T.TENSOR_INT32, 0.25, 0, True), (T.TENSOR_INT32, -1.0, 0, False), (T.TENSOR_INT32, 0.0, 3, False),
        (T.TENSOR_QUANT8_ASYMM, 0.5, 255, True), (T.TENSOR_QUANT8_ASYMM, 0.0, 0, False),
        (T.TENSOR_QUANT8_ASYMM, 0.5, 256, False), (T.TENSOR_QUANT8_ASYMM, 0.5, -1, False),
        (T.TENSOR_QUANT8_ASYMM_SIGNED, 0.5, -128, True), (T.TENSOR_QUANT8_ASYMM_SIGNED, 0.5, 128, False),
        (T.TENSOR_QUANT8_SYMM, 0.5, 0, True), (T.TENSOR_QUANT8_SYMM, 0.5, 1, False),
        (T.TENSOR_QUANT16_ASYMM, 0.125, 65535, True), (T.TENSOR_QUANT16_ASYMM, 0.125, 65536, False),
        (T.TENSOR_QUANT16_SYMM, 0.5, 0, True), (T.TENSOR_QUANT16_SYMM, -0.5, 0, False),
        (T.TENSOR_BOOL8, 0.0, 0, True), (T.TENSOR_BOOL8, 1.0, 0, False),
        (T.TENSOR_OEM_BYTE, 3.0, 7, True),
        (T.TENSOR_QUANT8_ASYMM, math.nan, 0, False), (T.TENSOR_QUANT8_ASYMM, math.inf, 0, False),
    ],
)
def test_scale_and_zero_point_rules(t: int, scale: float, zero_point: int, ok: bool) -> None:
    o = operand(t, [2], L.SUBGRAPH_INPUT, scale=scale, zero_point=zero_point)
    if ok:
        _check_operand(o)
    else:
        with pytest.raises(ValidationError, match="main operand 0"):
            _check_operand(o)


def test_scalars_and_unknown_ranks() -> None:
    with pytest.raises(ValidationError, match="scalar INT32 has dimensions"):
        _check_operand(operand(T.INT32, [1], L.SUBGRAPH_INPUT))
    _check_operand(operand(T.TENSOR_FLOAT32, [], L.SUBGRAPH_INPUT))
    with pytest.raises(ValidationError, match=r"unknown rank needs HAL 1.2"):
        _check_operand(operand(T.TENSOR_FLOAT32, [], L.SUBGRAPH_INPUT), hal_version=V11)
    with pytest.raises(ValidationError, match="constant tensor must have a known rank"):
        _check_operand(operand(T.TENSOR_FLOAT32, [], L.CONSTANT_COPY))
    with pytest.raises(ValidationError, match="uint32"):
        _check_operand(operand(T.TENSOR_FLOAT32, [-1], L.SUBGRAPH_INPUT))


def test_operand_types_per_hal_version() -> None:
    signed = operand(T.TENSOR_QUANT8_ASYMM_SIGNED, [2], L.SUBGRAPH_INPUT, scale=1.0)
    _check_operand(signed)
    with pytest.raises(ValidationError, match=r"needs a later HAL than 1.2"):
        _check_operand(signed, hal_version=V12)
    with pytest.raises(ValidationError, match=r"needs a later HAL than 1.1"):
        _check_operand(operand(T.TENSOR_FLOAT16, [2], L.SUBGRAPH_INPUT), hal_version=V11)
    for bad in (-1, 16, 9999, 10002, 0xFFFF):
        with pytest.raises(ValidationError, match="invalid operand type"):
            _check_operand(operand(bad, [2], L.SUBGRAPH_INPUT))


def test_channel_quant_rules() -> None:
    def per_channel(dims: list[int], scales: list[float], dim: int, extra: object = "auto") -> Operand:
        params = SymmPerChannelQuantParams(scales, dim) if extra == "auto" else extra
        return operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dims, L.SUBGRAPH_INPUT, extra=params)

    _check_operand(per_channel([2, 3], [0.5, 0.25], 0))
    with pytest.raises(ValidationError, match="needs channelQuant"):
        _check_operand(per_channel([2, 3], [], 0, extra=None))
    with pytest.raises(ValidationError, match="channelDim 2 is not a dimension"):
        _check_operand(per_channel([2, 3], [0.5, 0.25], 2))
    with pytest.raises(ValidationError, match="has 2 scales, expected 3"):
        _check_operand(per_channel([2, 3], [0.5, 0.25], 1))
    with pytest.raises(ValidationError, match="must be known"):
        _check_operand(per_channel([0, 3], [], 0))
    with pytest.raises(ValidationError, match=r"scales\[1\]"):
        _check_operand(per_channel([2, 3], [0.5, 0.0], 0))
    with pytest.raises(ValidationError, match="must have no extraParams"):
        params = SymmPerChannelQuantParams([1.0], 0)
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT, extra=params))


def test_lifetime_and_location_rules() -> None:
    _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_COPY, location=DataLocation(0, 8, 8)))
    with pytest.raises(ValidationError, match="exceeds operandValues"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_COPY, location=DataLocation(0, 12, 8)))
    with pytest.raises(ValidationError, match="CONSTANT_COPY must use pool index 0"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_COPY, location=DataLocation(1, 0, 8)))
    with pytest.raises(ValidationError, match="needs 8 bytes, location length is 4"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_COPY, location=DataLocation(0, 0, 4)))
    _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_REFERENCE, location=DataLocation(0, 0, 8)))
    with pytest.raises(ValidationError, match="exceeds the size 8 of pool 0"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_REFERENCE, location=DataLocation(0, 4, 8)))
    with pytest.raises(ValidationError, match="pool index 1 out of range"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.CONSTANT_REFERENCE, location=DataLocation(1, 0, 8)))
    with pytest.raises(ValidationError, match="all-zero location"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.TEMPORARY_VARIABLE, location=DataLocation(0, 4, 0)))
    _check_operand(operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 0, 0)))
    with pytest.raises(ValidationError, match="references subgraph 1, the model has 1"):
        _check_operand(operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 1, 0)))
    with pytest.raises(ValidationError, match="SUBGRAPH type and SUBGRAPH lifetime go together"):
        _check_operand(operand(T.SUBGRAPH, [], L.SUBGRAPH_INPUT))
    with pytest.raises(ValidationError, match="go together"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH, location=DataLocation(0, 0, 0)))
    with pytest.raises(ValidationError, match="invalid lifetime 77"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], 77))
    with pytest.raises(ValidationError, match=r"invalid lifetime SUBGRAPH for HAL 1.2"):
        _check_operand(operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH), hal_version=V12)


def test_extension_operands_need_a_declared_prefix() -> None:
    ext_type = (7 << 16) | 2
    model = add_model()
    model.main.operands.append(operand(ext_type, [3], L.SUBGRAPH_INPUT))
    model.main.input_indexes.append(4)
    expect_invalid(model, "prefix 7, which the model's extensionNameToPrefix does not declare")
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.fancy", 7)]
    validate_model(model)
    expect_invalid(model, r"extensions need HAL 1.2", V11)
    model.main.operands[4].scale = 1.0
    expect_invalid(model, "extension operand must have scale 0")
    model.main.operands[4].scale = 0.0
    model.extension_name_to_prefix.append(ExtensionNameAndPrefix("com.example.other", 7))
    expect_invalid(model, "repeated")


def test_extension_operations_skip_signature_checks() -> None:
    model = add_model()
    model.main.operations[0].type = (3 << 16) | 1
    expect_invalid(model, "extension prefix 3 is not declared")
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.ops", 3)]
    validate_model(model)
    expect_invalid(model, "extension", V11)


def test_pool_kinds() -> None:
    for kind in (hal_memory.ASHMEM, hal_memory.MMAP_FD, hal_memory.HARDWARE_BUFFER_BLOB):
        pool = hal_memory.allocate(kind, 8)
        try:
            validate_memory_pool_names([pool], V13)
            if kind == hal_memory.HARDWARE_BUFFER_BLOB:
                with pytest.raises(ValidationError, match="unsupported memory kind"):
                    validate_memory_pool_names([pool], V11)
        finally:
            pool.close()
    with pytest.raises(ValidationError, match="no handle"):
        validate_memory_pool_names([pool], V13)  # closed
    odd = hal_memory.allocate(hal_memory.ASHMEM, 8)
    try:
        odd.name = "gralloc"
        with pytest.raises(ValidationError, match="unsupported memory kind 'gralloc'"):
            validate_memory_pool_names([odd])
    finally:
        odd.close()
    with pytest.raises(ValidationError, match="only valid in requests"):
        validate_memory_pool_names([MemoryToken(1)])


def test_model_level_version_gates() -> None:
    expect_invalid(if_model(), r"referenced subgraphs need HAL 1.3", V12)
    model = add_model()
    model.relax_computation_float32_to_float16 = True
    validate_model(model, V11)
    expect_invalid(model, r"needs HAL 1.1", V10)


# ---------------------------------------------------------------------------
# Control flow


def test_if_model_broken_variants() -> None:
    model = if_model()
    model.main.operands[0].dimensions = [2]
    expect_invalid(model, r"IF: condition \(input 0\) must have dimensions \[1\]")
    model = if_model()
    model.main.operands[2].location.offset = 5
    expect_invalid(model, "references subgraph 5, the model has 2")
    model = if_model()
    model.referenced[1].operands[2].dimensions = [3]
    expect_invalid(model, r"IF: output 0 \(else output 0\) is incompatible .* dimensions \[2\] vs \[3\]")
    model = if_model()
    model.referenced[0].operands[0].type = T.TENSOR_INT32
    expect_invalid(model, r"IF: input 3 .* incompatible")
    model = if_model()
    model.referenced[0].output_indexes = [7]
    expect_invalid(model, "out of range")


def test_reference_cycle_is_rejected() -> None:
    """An IF branch that calls IF on itself again: the signatures agree, the cycle is the only fault."""

    def recursive_if(branch: int) -> Subgraph:
        return finish(Subgraph(
            operands=[
                operand(T.TENSOR_BOOL8, [1], L.SUBGRAPH_INPUT),
                operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, branch, 0)),
                operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
                operand(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
            ],
            operations=[Operation(Op.IF, [0, 1, 1, 0, 2], [3])],
            input_indexes=[0, 2],
            output_indexes=[3],
        ))

    model = Model(main=recursive_if(0), referenced=[recursive_if(0)])
    expect_invalid(model, r"circular subgraph reference: main -> referenced\[0\] -> referenced\[0\]")
    model = Model(main=recursive_if(0), referenced=[recursive_if(1), recursive_if(0)])
    expect_invalid(model, r"main -> referenced\[0\] -> referenced\[1\] -> referenced\[0\]")


def test_direct_reference_cycle_reports_the_path() -> None:
    model = while_model()
    body = model.referenced[1]
    # The body becomes "WHILE(cond, body, x)" itself: body -> body.
    body.operands = [
        operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 0, 0)),
        operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(0, 1, 0)),
        operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
        operand(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT),
    ]
    body.operations = [Operation(Op.WHILE, [0, 1, 2], [3])]
    body.input_indexes, body.output_indexes = [2], [3]
    finish(body)
    expect_invalid(model, r"circular subgraph reference: main -> referenced\[1\] -> referenced\[1\]")


def test_while_model_rules() -> None:
    dynamic = while_model(counter_dims=[0])
    expect_invalid(dynamic, r"WHILE: .*unknown size")
    validate_model(dynamic, allow_unknown_control_flow_sizes=True)
    model = while_model()
    model.referenced[0].operands[2].type = T.TENSOR_FLOAT32
    expect_invalid(model, "LESS|condition subgraph output 0 has type TENSOR_FLOAT32")
    model = while_model()
    model.main.operations[0].inputs = [1, 0, 2]  # body and condition swapped
    expect_invalid(model, "WHILE")
    expect_invalid(while_model(), r"operation introduced in HAL 1.3|referenced subgraphs need HAL 1.3", V12)


# ---------------------------------------------------------------------------
# Robustness: junk never escapes as a Python exception


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m.main.operands[0], "type", "TENSOR_FLOAT32"),
        lambda m: setattr(m.main.operands[0], "type", None),
        lambda m: setattr(m.main.operands[0], "type", 2**40),
        lambda m: setattr(m.main.operands[0], "dimensions", None),
        lambda m: setattr(m.main.operands[0], "dimensions", [2.5]),
        lambda m: setattr(m.main.operands[0], "scale", "big"),
        lambda m: setattr(m.main.operands[0], "zero_point", 0.5),
        lambda m: setattr(m.main.operands[0], "lifetime", None),
        lambda m: setattr(m.main.operands[0], "location", None),
        lambda m: setattr(m.main.operands[2], "location", DataLocation(-1, 0, 4)),
        lambda m: setattr(m.main.operands[2], "number_of_consumers", "one"),
        lambda m: setattr(m.main.operations[0], "type", None),
        lambda m: setattr(m.main.operations[0], "type", True),
        lambda m: setattr(m.main.operations[0], "inputs", [0, 1, -3]),
        lambda m: setattr(m.main.operations[0], "outputs", [None]),
        lambda m: setattr(m.main, "input_indexes", [0, "1"]),
        lambda m: m.main.operands.append(None),
        lambda m: setattr(m, "pools", [None]),
        lambda m: setattr(m, "operand_values", None),
        lambda m: setattr(m, "referenced", [None]),
        lambda m: setattr(m, "extension_name_to_prefix", [ExtensionNameAndPrefix("x.y", 70000)]),
    ],
)
def test_junk_values_raise_validation_error(change: Callable[[Model], None]) -> None:
    model = add_model()
    change(model)
    with pytest.raises(ValidationError):
        validate_model(model)


# ---------------------------------------------------------------------------
# Requests


def _request_for_add() -> tuple[Request, list[hal_memory.Memory]]:
    pools = [hal_memory.allocate(hal_memory.ASHMEM, 16), hal_memory.allocate(hal_memory.ASHMEM, 8)]
    request = Request(
        inputs=[RequestArgument(False, DataLocation(0, 0, 8)), RequestArgument(False, DataLocation(0, 8, 8))],
        outputs=[RequestArgument(False, DataLocation(1, 0, 8))],
        pools=list(pools),
    )
    return request, pools


@pytest.fixture
def add_request() -> Iterator[Request]:
    request, pools = _request_for_add()
    yield request
    for pool in pools:
        pool.close()


def expect_bad_request(request: Request, model: Model, match: str, **kwargs: object) -> None:
    with pytest.raises(ValidationError, match=match):
        validate_request(request, model, **kwargs)


def test_valid_request(add_request: Request) -> None:
    validate_request(add_request, add_model())
    validate_request(add_request, add_model(), False)


def test_request_counts(add_request: Request) -> None:
    model = add_model()
    request = add_request.copy()
    del request.inputs[1]
    expect_bad_request(request, model, "request has 1 inputs, the model has 2")
    request = add_request.copy()
    del request.outputs[0]
    expect_bad_request(request, model, "request has 0 outputs, the model has 1")


def test_request_locations(add_request: Request) -> None:
    model = add_model()
    request = add_request.copy()
    request.inputs[1].location = DataLocation(0, 12, 8)
    expect_bad_request(request, model, r"request input 1: offset 12 \+ length 8 exceeds the size 16 of pool")
    request = add_request.copy()
    request.outputs[0].location = DataLocation(2, 0, 8)
    expect_bad_request(request, model, "request output 0: pool index 2 out of range")
    request = add_request.copy()
    request.inputs[0] = RequestArgument(True, DataLocation(0, 0, 8))
    expect_bad_request(request, model, "has no value, so its location and dimensions must be empty")
    request.inputs[0] = RequestArgument(True)
    validate_request(request, model)  # an omitted (optional) input


def test_request_tokens(add_request: Request) -> None:
    model = add_model()
    request = add_request.copy()
    request.pools.append(MemoryToken(5))
    request.outputs[0] = RequestArgument(False, DataLocation(2, 0, 0))
    validate_request(request, model)
    request.outputs[0] = RequestArgument(False, DataLocation(2, 0, 8))
    expect_bad_request(request, model, "exceeds the size 0 of pool 2")
    request.outputs[0] = RequestArgument(False, DataLocation(2, 0, 0))
    request.pools[2] = MemoryToken(0)
    expect_bad_request(request, model, "memory token 0 must be a positive uint32")
    request.pools[2] = MemoryToken(5)
    expect_bad_request(request, model, r"tokens need HAL 1.3", hal_version=V12)


def test_request_dimensions(add_request: Request) -> None:
    model = add_model()
    request = add_request.copy()
    request.inputs[0].dimensions = [2]
    validate_request(request, model)
    request.inputs[0].dimensions = [2, 1]
    expect_bad_request(request, model, "rank 2 differs from the model's rank 1")
    request.inputs[0].dimensions = [3]
    expect_bad_request(request, model, "dimension 0 is 3, the model fixes it to 2")
    dynamic = add_model()
    dynamic.main.operands[0].dimensions = [0]
    dynamic.main.operands[3].dimensions = [0]
    validate_model(dynamic)
    request = add_request.copy()
    expect_bad_request(request, dynamic, r"request input 0: the model's dimensions \[0\] are not fully")
    request.inputs[0].dimensions = [2]
    validate_request(request, dynamic)  # dynamic output allowed
    expect_bad_request(request, dynamic, "request output 0", allow_unspecified_output=False)
    expect_bad_request(request, dynamic, "request output 0", hal_version=V11)
    request.outputs[0].dimensions = [0]
    validate_request(request, dynamic)
    expect_bad_request(request, dynamic, "dimension 0 is 0", allow_unspecified_output=False)
    request.inputs[0].dimensions = [0]
    expect_bad_request(request, dynamic, "request input 0: dimension 0 is 0")


def test_request_scalar_dimensions_and_pools(add_request: Request) -> None:
    model = add_model()
    model.main.operands[2] = operand(T.INT32, [], L.SUBGRAPH_INPUT)
    model.main.operands[2].number_of_consumers = 1
    model.main.input_indexes.append(2)
    model.operand_values = b""
    validate_model(model)
    request = add_request.copy()
    request.inputs.append(RequestArgument(False, DataLocation(0, 0, 4), [1]))
    expect_bad_request(request, model, "scalar operand cannot take dimensions")
    request = add_request.copy()
    request.pools.append("not a pool")  # type: ignore[arg-type]
    expect_bad_request(request, add_model(), "request pool 2: is str")


# ---------------------------------------------------------------------------
# The external corpus


def _corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("V1_*/*.json.gz"))


def _corpus_models(path: Path) -> list[object]:
    from vts.model.casemodel import parse_spec

    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return parse_spec(json.load(handle))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the external corpus (../shared/corpus) is not present")
def test_every_corpus_model_is_valid() -> None:
    """All 6140 imported models validate, expect_failure ones included (their failure is semantic).

    Each is checked at HAL 1.3 with both constant policies, and at the HAL version of its corpus
    folder (V1_0, V1_1, V1_2): Android generated those models for that version, so the version
    gates must not refuse them.
    """
    from vts.model.casemodel import ConstantPolicy, close_model, to_hal_model

    failures: list[str] = []
    count = 0
    for path in _corpus_files():
        folder_version = HalVersion.parse(path.parent.name[1:].replace("_", "."))
        for test_model in _corpus_models(path):
            for policy in (ConstantPolicy(), ConstantPolicy("as_written")):
                model = to_hal_model(test_model, policy)
                count += 1
                versions = (V13, folder_version) if policy.mode == "as_written" else (V13,)
                try:
                    for version in versions:
                        validate_model(model, version)
                except ValidationError as error:
                    failures.append(f"{path.name} {test_model.name} (HAL {version}): {error}")
                finally:
                    close_model(model)
    assert count == 2 * 6140
    assert failures == []


def _locally_valid(model: Model, index: int, mutated: Operand) -> bool:
    """Would ``validate_model`` accept ``model`` with operand ``index`` replaced by ``mutated``?

    A type mutation can only break the operand itself or the operations that read or write it.
    """
    operands = list(model.main.operands)
    operands[index] = mutated
    try:
        validate_operand(
            mutated, index=index, operand_values_size=len(model.operand_values),
            pool_sizes=[pool.size for pool in model.pools], referenced_count=len(model.referenced),
        )
        for op in model.main.operations:
            if index in op.inputs or index in op.outputs:
                inputs = [operands[k] for k in op.inputs]
                validate_operation(op.type, inputs, [operands[k] for k in op.outputs])
    except ValidationError:
        return False
    return True


def test_local_validity_agrees_with_validate_model() -> None:
    model = add_model()
    for i, original in enumerate(model.main.operands):
        for t in _FUNDAMENTAL:
            mutated = copy.deepcopy(original)
            _mutate_operand_type(mutated, t)
            mutant = model.copy()
            mutant.main.operands[i] = mutated
            try:
                validate_model(mutant)
                expected = True
            except ValidationError:
                expected = False
            assert _locally_valid(model, i, mutated) == expected, (i, t)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the external corpus (../shared/corpus) is not present")
def test_corpus_operand_type_mutations_are_rejected() -> None:
    """mutateOperationOperandTypeTest on the smallest model of every corpus spec: nothing slips through.

    The full run over all 6140 models (333k mutations) also rejects every case; this sample keeps the
    test fast while still touching every operation and type combination family of the corpus.
    """
    from vts.model.casemodel import ConstantPolicy, close_model, to_hal_model

    accepted: list[str] = []
    for path in _corpus_files():
        test_model = min(_corpus_models(path), key=lambda m: len(m.main.operands))
        model = to_hal_model(test_model, ConstantPolicy("as_written"))
        try:
            operands = model.main.operands
            for i, original in enumerate(list(operands)):
                for t in _FUNDAMENTAL:
                    if t == original.type or _operand_type_skip(model, i, t):
                        continue
                    # Only the mutated operand and the operations that use it can change verdict, so
                    # check those (a full validate_model per case is too slow for the large models).
                    mutated = copy.deepcopy(original)
                    _mutate_operand_type(mutated, t)
                    if not _locally_valid(model, i, mutated):
                        continue
                    accepted.append(f"{path.name} {test_model.name}: operand {i} -> {T(t).name}")
        finally:
            close_model(model)
    assert accepted == []


_JUNK: tuple[object, ...] = (
    None, -1, 0, 1, 3, 77, 9999, 2**33, 1.5, math.nan, "x", True, [], [None], [-1], [0, 2**40],
)
_SUBGRAPH_FIELDS = ("operands", "operations", "input_indexes", "output_indexes")
_OPERAND_FIELDS = (
    "type", "dimensions", "number_of_consumers", "scale", "zero_point", "lifetime", "location",
    "extra_params",
)


def _fuzz_targets(model: Model) -> list[tuple[object, str]]:
    """(object, attribute) pairs of every field a driver reads from a model."""
    targets: list[tuple[object, str]] = [(model, "referenced"), (model, "operand_values"), (model, "pools")]
    for subgraph in [model.main, *model.referenced]:
        targets += [(subgraph, name) for name in _SUBGRAPH_FIELDS]
        for o in subgraph.operands:
            targets += [(o, name) for name in _OPERAND_FIELDS]
            targets += [(o.location, name) for name in ("pool_index", "offset", "length")]
        for op in subgraph.operations:
            targets += [(op, name) for name in ("type", "inputs", "outputs")]
    return targets


@pytest.mark.parametrize("builder", [add_model, if_model, while_model])
def test_fuzzed_models_only_raise_validation_error(builder: Callable[[], Model]) -> None:
    """Any junk in any field ends as ValidationError (or a valid model), never as another exception."""
    import numpy as np

    rng = np.random.default_rng(20260)
    for _ in range(600):
        model = builder()
        targets = _fuzz_targets(model)
        for _ in range(int(rng.integers(1, 3))):
            obj, name = targets[int(rng.integers(len(targets)))]
            setattr(obj, name, copy.deepcopy(_JUNK[int(rng.integers(len(_JUNK)))]))
        with contextlib.suppress(ValidationError):
            validate_model(model)


def test_fuzzed_requests_only_raise_validation_error() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    model = add_model()
    for _ in range(300):
        request, pools = _request_for_add()
        targets: list[tuple[object, str]] = [(request, "inputs"), (request, "outputs"), (request, "pools")]
        for argument in request.inputs + request.outputs:
            targets += [(argument, "has_no_value"), (argument, "dimensions"), (argument, "location")]
            targets += [(argument.location, name) for name in ("pool_index", "offset", "length")]
        obj, name = targets[int(rng.integers(len(targets)))]
        setattr(obj, name, copy.deepcopy(_JUNK[int(rng.integers(len(_JUNK)))]))
        try:
            validate_request(request, model)
        except ValidationError:
            pass
        finally:
            for pool in pools:
                pool.close()


# ---------------------------------------------------------------------------
# The memo of proven operands (issue 23: a long-running driver host must not grow with the corpus)


def _add_model_of_width(width: int) -> Model:
    """``add_model`` on [width] tensors: two operand keys (the inputs', the output's) no other width shares."""
    model = add_model()
    for o in model.main.operands:
        if o.dimensions:
            o.dimensions = [width]
    return model


def test_proven_operand_memo_forgets_models_left_behind() -> None:
    """Ten generations' worth of distinct models: the memo holds two generations at most.

    Before, one set kept every proven key until it held 50,000 (about 16 MB), so a driver host's
    memory grew for the first few hundred thousand cases of a corpus run.
    """
    from vts.hal import validation

    limit = validation._PROVEN_OPERANDS_LIMIT
    assert 2 * limit <= 10_000  # a few models' worth, not a corpus' worth
    for width in range(1, 5 * limit + 1):  # ten generations' worth of keys
        validate_model(_add_model_of_width(width))
        assert validation.proven_operand_keys() <= 2 * limit
    # A model without extensions shares one empty set of prefixes (each key's context holds it).
    assert validation._validate_extension_prefixes(add_model(), V13) is validation._NO_PREFIXES


def test_proven_operand_memo_keeps_the_model_being_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model a sweep keeps coming back to is never proven again, however many others pass meanwhile."""
    from vts.hal import validation

    proofs = 0
    prove = validation.validate_operand

    def counting(*args: object, **kwargs: object) -> None:
        nonlocal proofs
        proofs += 1
        prove(*args, **kwargs)

    monkeypatch.setattr(validation, "validate_operand", counting)
    swept = _add_model_of_width(1_000_000)
    validate_model(swept)
    limit = validation._PROVEN_OPERANDS_LIMIT
    others = iter(range(1, 10 * limit))
    for _ in range(12):  # four generations' worth of other keys in all
        for _, width in zip(range(limit // 6), others, strict=False):
            validate_model(_add_model_of_width(width))
        before = proofs
        validate_model(swept)
        assert proofs == before
