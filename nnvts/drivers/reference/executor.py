"""Graph interpreter of the reference driver: runs a prepared HAL model with numpy.

Constants are decoded once at preparation (``CompiledModel``); each execution
walks the main subgraph's operations in order, as the HAL requires them to be
listed, checking the deadline before every operation the way Android's
``CpuExecutor`` does, so a run that cannot finish in time stops with
MISSED_DEADLINE_TRANSIENT instead of running on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from nnvts.drivers.reference.extensions import ExtensionOp, ModelExtensions
from nnvts.drivers.reference.ops.registry import OpDef, operations
from nnvts.drivers.reference.tensor import OpContext, OutputSpec, Tensor, op_failure
from vts.hal.enums import NUMPY_DTYPE, ErrorStatus, OperandLifeTime, OperandType, OperationType, enum_name
from vts.hal.errors import DriverError
from vts.hal.types import Model, Operand, Subgraph


def operand_dtype(operand_type: int) -> np.dtype:
    if operand_type > 0xFFFF:
        return np.dtype("u1")
    try:
        return np.dtype(NUMPY_DTYPE[OperandType(operand_type)])
    except (KeyError, ValueError):
        return np.dtype("u1")


def make_tensor(operand: Operand, value: np.ndarray) -> Tensor:
    extra = operand.extra_params
    return Tensor(
        value=value,
        type=operand.type,
        scale=operand.scale,
        zero_point=operand.zero_point,
        channel_quant=extra if extra is not None and not isinstance(extra, bytes) else None,
    )


def decode_constant(model: Model, operand: Operand, dtype: np.dtype | None = None) -> np.ndarray:
    loc = operand.location
    dtype = operand_dtype(operand.type) if dtype is None else dtype
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        raw = model.operand_values[loc.offset : loc.offset + loc.length]
    else:
        raw = model.pools[loc.pool_index].read(loc.offset, loc.length)
    flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype).astype(dtype)
    return flat.reshape(operand.dimensions) if operand.dimensions else flat.reshape(())


class DeadlineClock:
    """Deadline checks shared by every operation of one execution."""

    __slots__ = ("deadline",)

    def __init__(self, deadline: int | None) -> None:
        self.deadline = deadline

    def check(self) -> None:
        if self.deadline is not None and time.monotonic_ns() >= self.deadline:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "deadline passed during execution")


CONSTANT_LIFETIMES = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
# Inputs whose value is the same at every execution: constants, and optional inputs the model omits.
UNCHANGING_LIFETIMES = (*CONSTANT_LIFETIMES, OperandLifeTime.NO_VALUE)


@dataclass(slots=True)
class OperationSlot:
    """One operation as every execution runs it, with what only depends on the model worked out once.

    ``memo`` persists across executions: operations keep there what they
    derive from their constant operands and shapes (``OpContext.memoized``).
    """

    op_def: OpDef | ExtensionOp
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    input_operands: list[Operand]
    output_operands: list[Operand]
    output_specs: list[OutputSpec]
    output_dtypes: list[np.dtype]
    constant_inputs: tuple[bool, ...]  # per input: its value never changes (``OpContext.constant_from``)
    release: tuple[int, ...]  # ``release_after``
    memo: dict = field(default_factory=dict)


class CompiledModel:
    """A validated model with its constants decoded and its operations resolved."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.relaxed = model.relax_computation_float32_to_float16
        self.subgraphs: list[Subgraph] = [model.main, *model.referenced]
        registry = operations()
        self.extensions = ModelExtensions(model)
        self.constants: list[list[Tensor | None]] = []
        self.slots: list[list[OperationSlot]] = []
        for graph in self.subgraphs:
            values: list[Tensor | None] = [None] * len(graph.operands)
            for index, operand in enumerate(graph.operands):
                if operand.lifetime in CONSTANT_LIFETIMES:
                    values[index] = make_tensor(operand, decode_constant(model, operand, self.dtype_of(operand.type)))
                elif operand.lifetime == OperandLifeTime.SUBGRAPH:
                    values[index] = Tensor(np.array(operand.location.offset, dtype=np.int32), operand.type)
            self.constants.append(values)
            slots = []
            for op, release in zip(graph.operations, release_after(graph), strict=True):
                op_def = registry.get(op.type) or self.extensions.bind(op, graph)
                if op_def is None:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"operation {enum_name(OperationType, op.type)} is not supported")
                input_operands = [graph.operands[i] for i in op.inputs]
                output_operands = [graph.operands[i] for i in op.outputs]
                slots.append(OperationSlot(
                    op_def, tuple(op.inputs), tuple(op.outputs), input_operands, output_operands,
                    [OutputSpec.of(operand) for operand in output_operands],
                    [self.dtype_of(operand.type) for operand in output_operands],
                    tuple(operand.lifetime in UNCHANGING_LIFETIMES for operand in input_operands), release))
            self.slots.append(slots)

    def dtype_of(self, operand_type: int) -> np.dtype:
        """Element dtype of a base or (per-model encoded) extension operand type."""
        return self.extensions.dtype(operand_type) if operand_type > 0xFFFF else operand_dtype(operand_type)

    def run(self, inputs: Sequence[Tensor | None], clock: DeadlineClock,
            loop_timeout_ns: int | None = None) -> list[Tensor]:
        return self.run_subgraph(0, inputs, clock, loop_timeout_ns)

    def run_subgraph(self, index: int, inputs: Sequence[Tensor | None], clock: DeadlineClock,
                     loop_timeout_ns: int | None) -> list[Tensor]:
        graph = self.subgraphs[index]
        values = list(self.constants[index])
        for position, operand_index in enumerate(graph.input_indexes):
            tensor = inputs[position]
            if tensor is not None:
                operand = graph.operands[operand_index]
                tensor = make_tensor(operand, tensor.value)
            values[operand_index] = tensor

        def run_child(child: int, child_inputs: Sequence[Tensor | None]) -> list[Tensor]:
            # ``child`` indexes Model.referenced (a SUBGRAPH operand's value); self.subgraphs[0] is main.
            if not 0 <= child < len(self.subgraphs) - 1:
                raise op_failure(f"referenced subgraph {child} does not exist")
            return self.run_subgraph(child + 1, child_inputs, clock, loop_timeout_ns)

        for slot in self.slots[index]:
            clock.check()
            self._run_operation(slot, values, run_child, clock, loop_timeout_ns)
            for operand_index in slot.release:  # no later operation reads these (``release_after``)
                values[operand_index] = None
        outputs = []
        for operand_index in graph.output_indexes:
            tensor = values[operand_index]
            if tensor is None:
                raise op_failure(f"subgraph {index} output operand {operand_index} was never written")
            outputs.append(tensor)
        return outputs

    def _run_operation(self, slot: OperationSlot, values: list[Tensor | None],
                       run_child: Callable[[int, Sequence[Tensor | None]], list[Tensor]],
                       clock: DeadlineClock, loop_timeout_ns: int | None) -> None:
        name = slot.op_def.type.name
        context = OpContext(
            name,
            [values[i] for i in slot.inputs],
            (),
            relaxed=self.relaxed,
            run_subgraph=run_child,
            check_deadline=clock.check,
            loop_timeout_ns=loop_timeout_ns,
            input_operands=slot.input_operands,
            output_specs=slot.output_specs,
            memo=slot.memo,
            constant_inputs=slot.constant_inputs,
        )
        try:
            results = slot.op_def.run(context)
        except DriverError:
            raise
        except (ValueError, IndexError, ZeroDivisionError, FloatingPointError, OverflowError) as error:
            raise op_failure(f"{name}: {error}") from error
        except MemoryError as error:
            # A legal model can ask for an enormous result (a RESIZE to a size read from a constant);
            # the sample driver's ANEURALNETWORKS_OUT_OF_MEMORY reaches the client as GENERAL_FAILURE.
            raise op_failure(f"{name}: out of memory: {error}") from error
        if len(results) != len(slot.outputs):
            raise op_failure(f"{name}: produced {len(results)} outputs, model declares {len(slot.outputs)}")
        for operand_index, operand, dtype, result in zip(slot.outputs, slot.output_operands, slot.output_dtypes,
                                                         results, strict=True):
            array = np.asarray(result)
            if array.dtype != dtype:
                array = array.astype(dtype)
            check_shape(name, operand, array.shape)
            values[operand_index] = make_tensor(operand, array)


def check_shape(name: str, operand: Operand, shape: tuple[int, ...]) -> None:
    """The computed shape must agree with every dimension the model fixed."""
    dims = operand.dimensions
    if not dims:
        return
    if tuple(dims) == shape:  # fully specified and equal: the common case, decided at once
        return
    if len(dims) != len(shape) or any(d and d != s for d, s in zip(dims, shape, strict=True)):
        raise op_failure(f"{name}: computed output shape {list(shape)} conflicts with declared {list(dims)}")



def release_after(graph: Subgraph) -> list[tuple[int, ...]]:
    """For each operation, the temporaries that no later operation reads: dropped once it has run.

    Android's ``CpuExecutor`` frees a temporary when its count of uses left
    reaches zero; here that lets numpy hand the memory of a dead activation
    to the next one, so a deep network keeps reusing a few cache-warm
    buffers instead of holding every intermediate result until the end.
    Subgraph inputs, outputs and constants are never released (they are not
    TEMPORARY_VARIABLE).
    """
    last_reader: dict[int, int] = {}
    for position, op in enumerate(graph.operations):
        for operand_index in (*op.inputs, *op.outputs):
            last_reader[operand_index] = position
    releases: list[list[int]] = [[] for _ in graph.operations]
    for operand_index, position in sorted(last_reader.items()):
        if (0 <= operand_index < len(graph.operands)
                and graph.operands[operand_index].lifetime == OperandLifeTime.TEMPORARY_VARIABLE):
            releases[position].append(operand_index)
    return [tuple(indexes) for indexes in releases]
