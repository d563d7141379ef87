"""NN HAL 1.3 structures, rendered as Python dataclasses.

Field names are the HAL's in snake_case and keep the HAL's field order, so a
reader can hold this file beside types.hal.  Numeric fields stay plain ints
(not enums) where a validation test must be able to store an out-of-range
value: a mutated model with operand type 9999 is a legal *object* that the
driver must reject, not something the constructor refuses.

The structures are mutable on purpose: validation mutators copy a model with
``copy.deepcopy`` and then change one field, exactly as the HAL's VTS does.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from vts.hal.enums import NO_TIMING

if TYPE_CHECKING:
    from vts.hal.memory import Memory


@dataclass(slots=True)
class DataLocation:
    """Where an operand's or a request argument's bytes lie in a pool.

    ``padding`` is AIDL's (DataLocation.aidl, feature level 5+): bytes after a request argument's
    ``length`` that the device may touch to access memory in chunks but never to hold output data; 0
    in an Operand and everywhere under HAL 1.3, which has no such field (a 1.3 request always has 0).
    """

    pool_index: int = 0
    offset: int = 0
    length: int = 0
    padding: int = 0


@dataclass(slots=True)
class SymmPerChannelQuantParams:
    scales: list[float]
    channel_dim: int


@dataclass(slots=True)
class Operand:
    """One operand of a subgraph (HAL 1.3 ``Operand``).

    ``extra_params`` follows the HAL's safe_union: ``None`` (none), a
    ``SymmPerChannelQuantParams`` (channelQuant) or ``bytes`` (extension).
    """

    type: int
    dimensions: list[int]
    number_of_consumers: int
    scale: float
    zero_point: int
    lifetime: int
    location: DataLocation = field(default_factory=DataLocation)
    extra_params: SymmPerChannelQuantParams | bytes | None = None


@dataclass(slots=True)
class Operation:
    type: int
    inputs: list[int]
    outputs: list[int]


@dataclass(slots=True)
class Subgraph:
    operands: list[Operand]
    operations: list[Operation]
    input_indexes: list[int]
    output_indexes: list[int]


@dataclass(slots=True)
class ExtensionNameAndPrefix:
    name: str
    prefix: int


@dataclass(slots=True)
class Model:
    main: Subgraph
    referenced: list[Subgraph] = field(default_factory=list)
    operand_values: bytes = b""
    pools: list[Memory] = field(default_factory=list)
    relax_computation_float32_to_float16: bool = False
    extension_name_to_prefix: list[ExtensionNameAndPrefix] = field(default_factory=list)

    def copy(self) -> Model:
        """Deep copy of the structure that shares the (immutable) memory pools.

        Drivers copy every model they prepare, so this walks the HAL structure
        directly (``copy.deepcopy`` was a sixth of a corpus run); any field that
        holds something other than what the HAL defines (a mutated model's junk)
        is deep-copied as before, so the result is the same either way.
        """
        if type(self.main) is not Subgraph or type(self.referenced) is not list:
            return self._deepcopy()
        return Model(
            main=_copy_subgraph(self.main),
            referenced=[_copy_subgraph(g) for g in self.referenced],
            operand_values=_copy_value(self.operand_values),
            pools=list(self.pools),
            relax_computation_float32_to_float16=_copy_value(self.relax_computation_float32_to_float16),
            extension_name_to_prefix=copy.deepcopy(self.extension_name_to_prefix),
        )

    def _deepcopy(self) -> Model:
        pools = self.pools
        self.pools = []
        try:
            clone = copy.deepcopy(self)
        finally:
            self.pools = pools
        clone.pools = list(pools)
        return clone


_ATOMS = frozenset({int, float, bool, str, bytes, type(None)})


def _copy_value(value: object) -> object:
    return value if type(value) in _ATOMS else copy.deepcopy(value)


def _copy_list(values: object) -> object:
    """A list of scalars copied shallowly (same as deep), anything else deep-copied."""
    if type(values) is list and all(type(v) in _ATOMS for v in values):
        return list(values)
    return copy.deepcopy(values)


def _copy_operand(o: object) -> object:
    if type(o) is not Operand:
        return copy.deepcopy(o)
    loc = o.location
    if type(loc) is DataLocation:
        loc = DataLocation(_copy_value(loc.pool_index), _copy_value(loc.offset), _copy_value(loc.length))
    else:
        loc = copy.deepcopy(loc)
    extra = o.extra_params
    if type(extra) is SymmPerChannelQuantParams:
        extra = SymmPerChannelQuantParams(_copy_list(extra.scales), _copy_value(extra.channel_dim))
    else:
        extra = _copy_value(extra)
    return Operand(_copy_value(o.type), _copy_list(o.dimensions), _copy_value(o.number_of_consumers),
                   _copy_value(o.scale), _copy_value(o.zero_point), _copy_value(o.lifetime), loc, extra)


def _copy_operation(op: object) -> object:
    if type(op) is not Operation:
        return copy.deepcopy(op)
    return Operation(_copy_value(op.type), _copy_list(op.inputs), _copy_list(op.outputs))


def _copy_subgraph(g: object) -> object:
    if type(g) is not Subgraph or type(g.operands) is not list or type(g.operations) is not list:
        return copy.deepcopy(g)
    return Subgraph([_copy_operand(o) for o in g.operands], [_copy_operation(op) for op in g.operations],
                    _copy_list(g.input_indexes), _copy_list(g.output_indexes))


@dataclass(slots=True)
class RequestArgument:
    has_no_value: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MemoryToken:
    """A request pool that names a driver-allocated buffer (memory domains)."""

    token: int


RequestPool = Union["Memory", MemoryToken]


@dataclass(slots=True)
class Request:
    inputs: list[RequestArgument]
    outputs: list[RequestArgument]
    pools: list[RequestPool]

    def copy(self) -> Request:
        """Deep copy of the arguments that shares the pools (walked directly: ``copy.deepcopy`` of the
        arguments cost more than the validation case that mutates the copy)."""
        return Request(inputs=[_copy_argument(a) for a in self.inputs],
                       outputs=[_copy_argument(a) for a in self.outputs], pools=list(self.pools))


def _copy_argument(argument: object) -> object:
    if type(argument) is not RequestArgument:
        return copy.deepcopy(argument)  # a mutated request's junk, copied as before
    loc = argument.location
    if type(loc) is DataLocation:
        loc = DataLocation(_copy_value(loc.pool_index), _copy_value(loc.offset), _copy_value(loc.length))
    else:
        loc = copy.deepcopy(loc)
    return RequestArgument(_copy_value(argument.has_no_value), loc, _copy_list(argument.dimensions))


@dataclass(frozen=True, slots=True)
class PerformanceInfo:
    """Speed and power relative to the CPU: lower is better, 1.0 is parity."""

    exec_time: float
    power_usage: float


@dataclass(frozen=True, slots=True)
class OperandPerformance:
    type: int
    info: PerformanceInfo


@dataclass(frozen=True, slots=True)
class Capabilities:
    relaxed_float32_to_float16_performance_scalar: PerformanceInfo
    relaxed_float32_to_float16_performance_tensor: PerformanceInfo
    operand_performance: tuple[OperandPerformance, ...]
    if_performance: PerformanceInfo
    while_performance: PerformanceInfo

    def performance_of(self, operand_type: int) -> PerformanceInfo:
        """The HAL rule: a type missing from the table counts as FLT_MAX."""
        for entry in self.operand_performance:
            if entry.type == operand_type:
                return entry.info
        flt_max = 3.4028234663852886e38
        return PerformanceInfo(flt_max, flt_max)


@dataclass(frozen=True, slots=True)
class OperandTypeInformation:
    type: int
    is_tensor: bool
    byte_size: int


@dataclass(frozen=True, slots=True)
class Extension:
    name: str
    operand_types: tuple[OperandTypeInformation, ...] = ()


@dataclass(slots=True)
class BufferDesc:
    dimensions: list[int] = field(default_factory=list)


@dataclass(slots=True)
class BufferRole:
    model_index: int
    io_index: int
    frequency: float


@dataclass(frozen=True, slots=True)
class OutputShape:
    dimensions: tuple[int, ...]
    is_sufficient: bool


@dataclass(frozen=True, slots=True)
class Timing:
    """Microseconds; ``NO_TIMING`` (UINT64_MAX) means "not measured"."""

    time_on_device: int = NO_TIMING
    time_in_driver: int = NO_TIMING

    @property
    def measured(self) -> bool:
        return self.time_on_device != NO_TIMING or self.time_in_driver != NO_TIMING


NO_TIMING_INFO = Timing()


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    """What a successful execution returns (status NONE)."""

    output_shapes: tuple[OutputShape, ...] = ()
    timing: Timing = NO_TIMING_INFO
