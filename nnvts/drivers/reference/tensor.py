"""What an operation implementation sees: tensors with their quantization, and its context.

Operations receive stored values (quantized integers, halves, bools) with the
operand's scale, zero point and per-channel parameters, and return plain
numpy arrays for their outputs; the executor attaches the output operands'
metadata.  Keeping the op interface this small is what lets each op module be
a handful of lines (ONNX reference-evaluator style).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from vts.hal.enums import NUMPY_DTYPE, ErrorStatus, OperandType
from vts.hal.errors import DriverError
from vts.hal.types import Operand, SymmPerChannelQuantParams


@dataclass(slots=True)
class Tensor:
    value: np.ndarray  # stored values, shaped by the operand's (actual) dims
    type: int
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: SymmPerChannelQuantParams | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)

    @property
    def rank(self) -> int:
        return self.value.ndim

    def real(self) -> np.ndarray:
        """Real (dequantized) values in float64; floats and ints are converted as is."""
        if self.channel_quant is not None:
            scales = np.asarray(self.channel_quant.scales, dtype=np.float64)
            shape = [1] * self.value.ndim
            shape[self.channel_quant.channel_dim] = -1
            return self.value.astype(np.float64) * scales.reshape(shape)
        if self.type in _QUANT:
            return (self.value.astype(np.float64) - self.zero_point) * self.scale
        return self.value.astype(np.float64)

    def item(self) -> int | float | bool:
        """The scalar this operand holds (scalars and one-element tensors): the first element, as Python's."""
        return self.value.item(0)


_QUANT = frozenset(
    {
        OperandType.TENSOR_QUANT8_ASYMM,
        OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
        OperandType.TENSOR_QUANT8_SYMM,
        OperandType.TENSOR_QUANT16_ASYMM,
        OperandType.TENSOR_QUANT16_SYMM,
    }
)


def op_failure(message: str) -> DriverError:
    """An operation that cannot run on these values (Android's OP_FAILED -> GENERAL_FAILURE)."""
    return DriverError(ErrorStatus.GENERAL_FAILURE, message)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """The declared output operand: type and quantization the op must produce (shared by every execution)."""

    type: int
    scale: float
    zero_point: int
    dims: tuple[int, ...]

    @classmethod
    def of(cls, operand: Operand) -> OutputSpec:
        return cls(operand.type, operand.scale, operand.zero_point, tuple(operand.dimensions))

    @property
    def dtype(self) -> np.dtype:
        return output_dtype(self.type)


@functools.lru_cache(maxsize=256)
def output_dtype(operand_type: int) -> np.dtype:
    """numpy dtype of a (base) operand type; extension types are bytes."""
    return np.dtype(NUMPY_DTYPE.get(OperandType(operand_type), "u1")) if operand_type <= 0xFFFF else np.dtype("u1")


#: Entries one operation keeps in its memo before it starts afresh (a model whose input shapes keep changing
#: must not grow it without bound).
MEMO_LIMIT = 16


class OpContext:
    """Inputs of one operation plus the hooks control-flow operations need."""

    __slots__ = (
        "_check_deadline",
        "_constant_inputs",
        "_memo",
        "_run_subgraph",
        "input_operands",
        "inputs",
        "loop_timeout_ns",
        "name",
        "outputs",
        "relaxed",
    )

    def __init__(
        self,
        name: str,
        inputs: Sequence[Tensor | None],
        outputs: Sequence[Operand],
        relaxed: bool = False,
        run_subgraph: Callable[[int, Sequence[Tensor | None]], list[Tensor]] | None = None,
        check_deadline: Callable[[], None] | None = None,
        loop_timeout_ns: int | None = None,
        input_operands: Sequence[Operand] = (),
        output_specs: Sequence[OutputSpec] | None = None,
        memo: dict | None = None,
        constant_inputs: Sequence[bool] = (),
    ) -> None:
        self.name = name
        self.inputs = inputs
        self.outputs = list(output_specs) if output_specs is not None else [OutputSpec.of(o) for o in outputs]
        self.relaxed = relaxed
        self._run_subgraph = run_subgraph
        self._check_deadline = check_deadline
        self.loop_timeout_ns = loop_timeout_ns
        self.input_operands = input_operands
        self._memo = memo
        self._constant_inputs = constant_inputs

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    def has(self, index: int) -> bool:
        """True when input ``index`` exists and is not an omitted optional input."""
        return index < len(self.inputs) and self.inputs[index] is not None

    def tensor(self, index: int) -> Tensor:
        tensor = self.inputs[index] if index < len(self.inputs) else None
        if tensor is None:
            raise op_failure(f"{self.name}: required input {index} has no value")
        return tensor

    def array(self, index: int) -> np.ndarray:
        return self.tensor(index).value

    def scalar(self, index: int, default: int | float | bool | None = None) -> int | float | bool:
        if not self.has(index):
            if default is None:
                raise op_failure(f"{self.name}: required scalar input {index} has no value")
            return default
        return self.tensor(index).item()

    def constant_from(self, first: int) -> bool:
        """True when every input from ``first`` on is a model constant or omitted in the model: their values
        never change.  (Known only under the executor, whose ``constant_inputs`` flags say so per input; a bare
        context says False.)
        """
        flags = self._constant_inputs
        return bool(flags) and all(flags[first:])

    def memoized(self, key: object, build: Callable[[], object]) -> object:
        """``build()``, kept for the next executions of this operation under ``key``.

        For what an operation derives from its constants and input shapes
        alone (a window, a tiled bias row, a filter laid out for its kernel):
        ``key`` must name everything else the result depends on.  Without an
        executor's memo, nothing is kept.  Concurrent executions may both
        build; either result is right.
        """
        memo = self._memo
        if memo is None:
            return build()
        value = memo.get(key)
        if value is None:
            value = build()
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[key] = value
        return value

    def output(self, index: int = 0) -> OutputSpec:
        return self.outputs[index]

    def run_subgraph(self, index: int, inputs: Sequence[Tensor | None]) -> list[Tensor]:
        if self._run_subgraph is None:
            raise op_failure(f"{self.name}: no subgraph executor")
        return self._run_subgraph(index, inputs)

    def check_deadline(self) -> None:
        if self._check_deadline is not None:
            self._check_deadline()
