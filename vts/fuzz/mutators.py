"""Hypothesis draws of edits to a valid model and to a valid request.

Each mutator targets one kind of field the HAL lets a client get wrong
(types, ranks, dims, zero points, scales, lifetimes, locations, operand
indices, pool indices/offsets/lengths, extension prefixes, control-flow
subgraph references, huge values) and draws its target and value from the
layout of the base model, so most edits land on something that exists.
Choices are ordered simplest first: Hypothesis shrinks towards the first
mutator, the first operand and the first (plainest) value, which is what a
saved failing input should look like.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from vts.families.fuzz_replay import Edit, Path
from vts.hal.enums import OperandLifeTime, OperandType, OperationType
from vts.hal.types import Model, Request

Draw = Callable[[st.SearchStrategy[Any]], Any]

_UINT32_INTERESTING = (0, 1, 2, 3, 4, 8, 63, 64, 255, 256, 4095, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1)
_INT32_INTERESTING = (0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, -32768, 65535, 2**31 - 1, -(2**31))
_FLOATS = (0.0, 1.0, -1.0, 0.5, -0.0, 1e-45, 1e-38, 3.4e38, 1e300, math.inf, -math.inf, math.nan)
_SMALL_DIMS = (1, 2, 3, 0, 4, 7)
_BAD_OPERAND_TYPES = (9999, -1, 16, 10002, (1 << 16) | 1, (0xFFFF << 16) | 0xFFFF, 2**31 - 1)
_BAD_OPERATION_TYPES = (9999, -1, 103, 10001, (1 << 16) | 1, (0xFFFF << 16), 2**31 - 1)
_LIFETIMES = (*(int(v) for v in OperandLifeTime), 7, 99, -1)
_EXTENSION_NAMES = ("com.example.fuzz", "", "no_dot", "a" * 300, "com.example.fuzz")


@cache
def _strategies() -> dict[str, st.SearchStrategy[Any]]:
    """Built once: strategy construction is slower than drawing."""
    return {
        "uint32": st.one_of(st.sampled_from(_UINT32_INTERESTING), st.integers(0, 2**32 - 1)),
        "int32": st.one_of(st.sampled_from(_INT32_INTERESTING), st.integers(-(2**31), 2**31 - 1)),
        "float": st.one_of(st.sampled_from(_FLOATS), st.floats(allow_nan=True, allow_infinity=True, width=32)),
        "dim": st.one_of(st.sampled_from(_SMALL_DIMS), st.sampled_from(_UINT32_INTERESTING)),
        "operand_type": st.one_of(st.sampled_from([int(t) for t in OperandType]),
                                  st.sampled_from(_BAD_OPERAND_TYPES)),
        "operation_type": st.one_of(st.sampled_from(sorted(int(t) for t in OperationType)),
                                    st.sampled_from(_BAD_OPERATION_TYPES)),
        "lifetime": st.sampled_from(_LIFETIMES),
        "rank": st.integers(0, 6),
        "bool": st.booleans(),
        "prefix": st.one_of(st.sampled_from((1, 0, 2, 65535, 65536, -1)), st.integers(-(2**31), 2**31 - 1)),
    }


def _s(name: str) -> st.SearchStrategy[Any]:
    return _strategies()[name]


@cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@cache
def _one_of(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


@cache
def _operand_indexes(count: int) -> st.SearchStrategy[int]:
    return st.one_of(_ints(0, max(count - 1, 0)), st.sampled_from((count, count + 1, 2**32 - 1, -1)))


def _index(draw: Draw, size: int) -> int:
    return draw(_ints(0, max(size - 1, 0)))


def _operand_index(draw: Draw, count: int) -> int:
    """An operand index: mostly in range, sometimes just past the end or huge."""
    return draw(_operand_indexes(count))


# -- layouts --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphLayout:
    path: Path
    operand_dims: tuple[int, ...]  # rank of each operand
    operation_arity: tuple[tuple[int, int], ...]  # (inputs, outputs) of each operation
    inputs: int
    outputs: int
    subgraph_operands: tuple[int, ...]  # indices of SUBGRAPH-lifetime operands

    @property
    def operands(self) -> int:
        return len(self.operand_dims)


@dataclass(frozen=True, slots=True)
class ModelLayout:
    graphs: tuple[GraphLayout, ...]
    pools: int
    operand_values: int

    @classmethod
    def of(cls, model: Model) -> ModelLayout:
        graphs = []
        for path, graph in [(("main",), model.main)] + [(("referenced", i), g) for i, g in enumerate(model.referenced)]:
            graphs.append(GraphLayout(
                path=path,
                operand_dims=tuple(len(o.dimensions) for o in graph.operands),
                operation_arity=tuple((len(op.inputs), len(op.outputs)) for op in graph.operations),
                inputs=len(graph.input_indexes),
                outputs=len(graph.output_indexes),
                subgraph_operands=tuple(i for i, o in enumerate(graph.operands)
                                        if o.lifetime == OperandLifeTime.SUBGRAPH)))
        return cls(tuple(graphs), len(model.pools), len(model.operand_values))


@dataclass(frozen=True, slots=True)
class RequestLayout:
    inputs: int
    outputs: int
    pools: int
    input_ranks: tuple[int, ...]
    output_ranks: tuple[int, ...]

    @classmethod
    def of(cls, request: Request) -> RequestLayout:
        return cls(len(request.inputs), len(request.outputs), len(request.pools),
                   tuple(len(a.dimensions) for a in request.inputs), tuple(len(a.dimensions) for a in request.outputs))


# -- model mutators -------------------------------------------------------------


def _graph(draw: Draw, layout: ModelLayout) -> GraphLayout:
    return layout.graphs[_index(draw, len(layout.graphs))]


def _operand(draw: Draw, layout: ModelLayout) -> tuple[GraphLayout, int, Path]:
    graph = _graph(draw, layout)
    index = _index(draw, graph.operands)
    return graph, index, (*graph.path, "operands", index)


def _dims_list(draw: Draw, rank: int | None = None) -> list[int]:
    rank = draw(_s("rank")) if rank is None else rank
    return [draw(_s("dim")) for _ in range(rank)]


def m_operand_type(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    return Edit("set", (*path, "type"), draw(_s("operand_type")))


def m_operand_dim(draw: Draw, layout: ModelLayout) -> Edit:
    graph, index, path = _operand(draw, layout)
    rank = graph.operand_dims[index]
    if rank == 0:
        return Edit("set", (*path, "dimensions"), _dims_list(draw))
    return Edit("set", (*path, "dimensions", _index(draw, rank)), draw(_s("dim")))


def m_operand_rank(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    return Edit("set", (*path, "dimensions"), _dims_list(draw))


def m_zero_point(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    return Edit("set", (*path, "zero_point"), draw(_s("int32")))


def m_scale(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    return Edit("set", (*path, "scale"), draw(_s("float")))


def m_lifetime(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    return Edit("set", (*path, "lifetime"), draw(_s("lifetime")))


def m_location(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    field = draw(_one_of(("offset", "length", "pool_index")))
    return Edit("set", (*path, "location", field), draw(_s("uint32")))


def m_consumers(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    return Edit("set", (*path, "number_of_consumers"), draw(_one_of((0, 1, 2, 100, 2**32 - 1))))


def m_extra_params(draw: Draw, layout: ModelLayout) -> Edit:
    _, _, path = _operand(draw, layout)
    choice = draw(_ints(0, 2))
    if choice == 0:
        value: Any = None
    elif choice == 1:
        scales = draw(st.lists(_s("float"), max_size=4))
        value = {"channel_quant": [scales, draw(_one_of((0, 1, 3, 4, 2**32 - 1)))]}
    else:
        value = {"bytes": draw(st.binary(max_size=8)).hex()}
    return Edit("set", (*path, "extra_params"), value)


def m_operation_type(draw: Draw, layout: ModelLayout) -> Edit:
    graph = _graph(draw, layout)
    k = _index(draw, len(graph.operation_arity))
    return Edit("set", (*graph.path, "operations", k, "type"), draw(_s("operation_type")))


def m_operation_operand(draw: Draw, layout: ModelLayout) -> Edit:
    graph = _graph(draw, layout)
    k = _index(draw, len(graph.operation_arity))
    side = draw(_one_of(("inputs", "outputs")))
    arity = graph.operation_arity[k][0 if side == "inputs" else 1] if graph.operation_arity else 0
    return Edit("set", (*graph.path, "operations", k, side, _index(draw, arity)),
                _operand_index(draw, graph.operands))


def m_operation_arity(draw: Draw, layout: ModelLayout) -> Edit:
    graph = _graph(draw, layout)
    k = _index(draw, len(graph.operation_arity))
    side = draw(_one_of(("inputs", "outputs")))
    arity = graph.operation_arity[k][0 if side == "inputs" else 1] if graph.operation_arity else 0
    op = draw(_one_of(("delete", "duplicate", "append")))
    path = (*graph.path, "operations", k, side)
    if op == "append":
        return Edit(op, path, _operand_index(draw, graph.operands))
    return Edit(op, path, _index(draw, arity))


def m_graph_io(draw: Draw, layout: ModelLayout) -> Edit:
    graph = _graph(draw, layout)
    side = draw(_one_of(("input_indexes", "output_indexes")))
    size = graph.inputs if side == "input_indexes" else graph.outputs
    op = draw(_one_of(("set", "delete", "duplicate", "append")))
    path = (*graph.path, side)
    if op == "set":
        return Edit(op, (*path, _index(draw, size)), _operand_index(draw, graph.operands))
    if op == "append":
        return Edit(op, path, _operand_index(draw, graph.operands))
    return Edit(op, path, _index(draw, size))


def m_structure(draw: Draw, layout: ModelLayout) -> Edit:
    graph = _graph(draw, layout)
    what = draw(_one_of(("operations", "operands")))
    size = len(graph.operation_arity) if what == "operations" else graph.operands
    op = draw(_one_of(("delete", "duplicate", "swap")))
    return Edit(op, (*graph.path, what), _index(draw, size))


def m_subgraph_reference(draw: Draw, layout: ModelLayout) -> Edit:
    holders = [g for g in layout.graphs if g.subgraph_operands]
    if holders and draw(_s("bool")):
        graph = holders[_index(draw, len(holders))]
        index = graph.subgraph_operands[_index(draw, len(graph.subgraph_operands))]
        target = draw(_operand_indexes(len(layout.graphs)))
        return Edit("set", (*graph.path, "operands", index, "location", "offset"), target)
    op = draw(_one_of(("delete", "duplicate", "swap")))
    return Edit(op, ("referenced",), _index(draw, len(layout.graphs) - 1))


def m_extension(draw: Draw, layout: ModelLayout) -> Edit:
    if draw(_s("bool")):
        name = draw(_one_of(_EXTENSION_NAMES))
        return Edit("append", ("extension_name_to_prefix",), {"extension": [name, draw(_s("prefix"))]})
    _, _, path = _operand(draw, layout)
    prefix = draw(_one_of((1, 2, 0xFFFF)))
    return Edit("set", (*path, "type"), (prefix << 16) | draw(_ints(0, 3)))


def m_model_data(draw: Draw, layout: ModelLayout) -> Edit:
    choice = draw(_ints(0, 2))
    if choice == 0:
        size = draw(_ints(0, max(layout.operand_values - 1, 0)))
        return Edit("set", ("operand_values",), {"bytes": "00" * size})
    if choice == 1:
        return Edit("delete", ("pools",), 0)
    return Edit("set", ("relax_computation_float32_to_float16",), True)


MODEL_MUTATORS: tuple[Callable[[Draw, ModelLayout], Edit], ...] = (
    m_operand_dim, m_operand_type, m_operand_rank, m_zero_point, m_scale, m_lifetime, m_location,
    m_operation_operand, m_operation_type, m_operation_arity, m_graph_io, m_structure, m_consumers,
    m_extra_params, m_subgraph_reference, m_extension, m_model_data,
)


def draw_model_edits(draw: Draw, layout: ModelLayout, max_edits: int = 3) -> list[Edit]:
    count = draw(_ints(0, max_edits))
    return [draw(_one_of(MODEL_MUTATORS))(draw, layout) for _ in range(count)]


# -- request mutators -----------------------------------------------------------


def _argument(draw: Draw, layout: RequestLayout) -> tuple[str, int, int]:
    side = draw(_one_of(("inputs", "outputs")))
    size = layout.inputs if side == "inputs" else layout.outputs
    index = _index(draw, size)
    ranks = layout.input_ranks if side == "inputs" else layout.output_ranks
    return side, index, ranks[index] if index < len(ranks) else 0


def r_location(draw: Draw, layout: RequestLayout) -> Edit:
    side, index, _ = _argument(draw, layout)
    field = draw(_one_of(("offset", "length", "pool_index")))
    return Edit("set", (side, index, "location", field), draw(_s("uint32")))


def r_dimensions(draw: Draw, layout: RequestLayout) -> Edit:
    side, index, rank = _argument(draw, layout)
    if rank and draw(_s("bool")):
        return Edit("set", (side, index, "dimensions", _index(draw, rank)), draw(_s("dim")))
    return Edit("set", (side, index, "dimensions"), _dims_list(draw))


def r_no_value(draw: Draw, layout: RequestLayout) -> Edit:
    side, index, _ = _argument(draw, layout)
    return Edit("set", (side, index, "has_no_value"), draw(_s("bool")))


def r_arguments(draw: Draw, layout: RequestLayout) -> Edit:
    side = draw(_one_of(("inputs", "outputs")))
    size = layout.inputs if side == "inputs" else layout.outputs
    return Edit(draw(_one_of(("delete", "duplicate", "swap"))), (side,), _index(draw, size))


def r_pools(draw: Draw, layout: RequestLayout) -> Edit:
    op = draw(_one_of(("delete", "duplicate", "swap", "set")))
    if op == "set":
        token = draw(_one_of((0, 1, -1, 2**63 - 1)))
        return Edit("set", ("pools", _index(draw, layout.pools)), {"token": token})
    return Edit(op, ("pools",), _index(draw, layout.pools))


REQUEST_MUTATORS: tuple[Callable[[Draw, RequestLayout], Edit], ...] = (
    r_location, r_dimensions, r_no_value, r_arguments, r_pools,
)


def draw_request_edits(draw: Draw, layout: RequestLayout, max_edits: int = 2, min_edits: int = 0) -> list[Edit]:
    count = draw(_ints(min(min_edits, max_edits), max_edits))
    return [draw(_one_of(REQUEST_MUTATORS))(draw, layout) for _ in range(count)]
