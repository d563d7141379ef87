"""The reference executor's bookkeeping: which temporaries it drops after which operation."""

from __future__ import annotations

from nnvts.drivers.reference.executor import release_after
from vts.hal.enums import OperandLifeTime, OperationType
from vts.hal.enums import OperandType as T
from vts.hal.types import Operand, Operation, Subgraph


def _operand(lifetime: OperandLifeTime) -> Operand:
    return Operand(T.TENSOR_FLOAT32, [2], 0, 0.0, 0, lifetime)


def test_temporaries_are_released_after_their_last_reader_and_nothing_else_is():
    """in -> t1; t1 -> t2; (t2, t1) -> out; t1 -> dead: t1 and t2 go after their last reader, dead at once."""
    life = OperandLifeTime
    operands = [
        _operand(life.SUBGRAPH_INPUT),  # 0
        _operand(life.CONSTANT_COPY),  # 1
        _operand(life.TEMPORARY_VARIABLE),  # 2: t1
        _operand(life.TEMPORARY_VARIABLE),  # 3: t2
        _operand(life.SUBGRAPH_OUTPUT),  # 4: out
        _operand(life.TEMPORARY_VARIABLE),  # 5: dead (written, never read)
    ]
    add = OperationType.ADD
    operations = [
        Operation(add, [0, 1], [2]),
        Operation(add, [2, 2], [3]),
        Operation(add, [3, 2], [4]),
        Operation(add, [0, 0], [5]),
    ]
    graph = Subgraph(operands, operations, [0], [4])
    assert release_after(graph) == [(), (), (2, 3), (5,)]


def test_every_temporary_is_released_exactly_once():
    """However operations share operands, each temporary is dropped once and never before a reader runs."""
    life = OperandLifeTime
    operands = [_operand(life.SUBGRAPH_INPUT)] + [_operand(life.TEMPORARY_VARIABLE) for _ in range(5)]
    operands.append(_operand(life.SUBGRAPH_OUTPUT))
    add = OperationType.ADD
    operations = [Operation(add, [0, 0], [1]), Operation(add, [1, 0], [2]), Operation(add, [1, 2], [3]),
                  Operation(add, [3, 1], [4]), Operation(add, [4, 2], [5]), Operation(add, [5, 3], [6])]
    releases = release_after(Subgraph(operands, operations, [0], [6]))
    released = [index for indexes in releases for index in indexes]
    assert sorted(released) == [1, 2, 3, 4, 5]
    for position, indexes in enumerate(releases):
        for index in indexes:
            assert all(index not in op.inputs for op in operations[position + 1:])
