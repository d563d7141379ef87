"""The HAL side of an engine-backed driver: validation, support, preparation, pools, execution paths.

A subclass names its engine (``translator``) and its identity; everything
the HAL asks of a driver around the engine is here, once:

- **Validation** reuses the harness's HAL rules (``vts.hal.validation``), as
  docs/driver-guide.md allows: a malformed model or request is
  INVALID_ARGUMENT before the engine sees anything.
- **Support** is what the translator can express *and the engine accepts*:
  ``Translator.unsupported_reason`` translates the operation on its own and
  loads it into the engine, so an operation the engine would refuse at
  preparation is answered unsupported instead of claimed and then refused.
- **Requests** are served from the shared pools: inputs are read from the
  byte ranges the request names, outputs written back into them (every
  output or none: OUTPUT_INSUFFICIENT_SIZE with one shape per output when a
  range is too small).  Driver-allocated buffers (memory domains) are not
  offered: ``allocate`` answers GENERAL_FAILURE, and a request naming a
  token is INVALID_ARGUMENT (no such buffer exists).
- **Deadlines**: a deadline already passed is MISSED_DEADLINE_PERSISTENT;
  an engine cannot be interrupted mid-run, so a run that ends after its
  deadline is reported MISSED_DEADLINE_TRANSIENT and its outputs dropped,
  rather than a late success.
- **Priorities** are validated (LOW/MEDIUM/HIGH) but not scheduled: the
  engines run one request at a time per prepared model, in arrival order.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import numpy as np

from nnvts.drivers.engine.isolation import run_forked
from nnvts.drivers.engine.nnapi import ModelView, Unsupported
from vts.hal.checked import CheckedDevice, CheckedPreparedModel, DeviceTimer, deadline_passed
from vts.hal.enums import (
    NUMPY_DTYPE,
    DeviceType,
    ErrorStatus,
    HalVersion,
    MeasureTiming,
    OperandType,
    OperationType,
    Priority,
    enum_name,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import CacheFiles, Execution, PreparedModel
from vts.hal.memory import POOL_KINDS, Memory
from vts.hal.operations import beyond_hal_rule_broken
from vts.hal.types import (
    Capabilities,
    Model,
    OperandPerformance,
    Operation,
    OutputShape,
    PerformanceInfo,
    Request,
)


class EngineFailure(Exception):
    """The engine refused or failed a model or a run (reported as GENERAL_FAILURE)."""


class Program(abc.ABC):
    """A model compiled by an engine: NNAPI-ordered input arrays in, NNAPI-ordered output arrays out."""

    @abc.abstractmethod
    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Outputs in model order, with the shapes the engine computed; raise ``EngineFailure``."""


class Translator(abc.ABC):
    """NNAPI model -> engine program, and support asked of the engine one operation at a time.

    ``unsupported_reason`` is the same for every engine: no handler, or a
    handler that raises ``Unsupported``, is the translator's own refusal;
    otherwise the one-operation model is probed in the engine (in a forked
    child: engines abort on some models) and the engine's complaint, if
    any, is the reason.  Probes are cached by the bytes of the
    one-operation model.  A subclass says how it builds and probes that model.
    """

    #: The target format named in reasons ("no TFLite translation").
    target: ClassVar[str]
    #: NNAPI operation type -> the handler that translates it.
    handlers: ClassVar[Mapping[int, Callable[..., object]]]
    #: Probe in a forked child (False: in this process, for an engine whose child of a fork deadlocks:
    #: a plugin's thread pools, held by threads the child does not have, after the parent ran a model).
    fork_probes: bool = True

    def __init__(self) -> None:
        self._probes: dict[bytes, str | None] = {}

    def unsupported_reason(self, view: ModelView, op_index: int) -> str | None:
        """Why operation ``op_index`` of the main subgraph cannot run on this engine, or None if it can."""
        op = view.graph.operations[op_index]
        name = enum_name(OperationType, op.type)
        if op.type not in self.handlers:
            return f"{name}: no {self.target} translation"
        try:
            inputs, content = self.one_operation_model(view, op)
        except Unsupported as error:
            return f"{name}: {error}"
        if content not in self._probes:
            self._probes[content] = (run_forked(lambda: self.probe(view, inputs, content)) if self.fork_probes
                                     else _in_process(lambda: self.probe(view, inputs, content)))
        reason = self._probes[content]
        return None if reason is None else f"{name}: {reason}"

    @abc.abstractmethod
    def one_operation_model(self, view: ModelView, op: Operation) -> tuple[list[int], bytes]:
        """``op`` translated alone: the operands its model reads, and the model's bytes; raise ``Unsupported``."""

    @abc.abstractmethod
    def probe(self, view: ModelView, inputs: list[int], content: bytes) -> str | None:
        """None if the engine loads and runs the one-operation model; else its complaint (runs in a child)."""

    @abc.abstractmethod
    def compile(self, view: ModelView) -> Program:
        """The whole model for the engine; raise ``EngineFailure`` if the engine refuses it."""


def _in_process(probe: Callable[[], str | None]) -> str | None:
    """``probe()`` here: its answer, or its exception as the reason (an abort takes the driver down: a crash)."""
    try:
        return probe()
    except Exception as error:
        return f"probe failed: {error!r}"[:300]


def capabilities_table(figures: dict[OperandType, PerformanceInfo], default: PerformanceInfo) -> Capabilities:
    """A HAL capabilities table: every operand type listed (sorted, no SUBGRAPH), ``default`` where unmeasured.

    Relaxed float32 models run exactly as float32 ones (the engines compute
    them in float32), so the relaxed figures are the float32 figure.
    """
    table = tuple(
        OperandPerformance(int(t), figures.get(t, default))
        for t in sorted(OperandType)
        if t not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
    )
    relaxed = figures.get(OperandType.TENSOR_FLOAT32, default)
    return Capabilities(relaxed, relaxed, table, default, default)


def require_engine(module: str, extra: str) -> None:
    """Raise ImportError naming the extra to install when the engine package ``module`` is missing.

    Engines are imported lazily (``nnvts`` runs without them), so without
    this check a missing engine would surface at the first model, as a
    GENERAL_FAILURE on every case; here it surfaces once, when the driver loads.
    """
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ImportError(f"the {module} package is not installed: pip install 'nnvts[{extra}]'")


def _rule_broken(model: Model, op: Operation) -> str | None:
    """The NeuralNetworks.h rule beyond ValidateHal's that ``op`` breaks: no engine is asked to run it."""
    operands = model.main.operands
    broken = beyond_hal_rule_broken(op.type, [operands[i] for i in op.inputs], [operands[i] for i in op.outputs],
                                    model.referenced)
    return None if broken is None else str(broken)


def check_pools(pools: Sequence[object], where: str) -> None:
    """Shared memory of any kind nnvts defines is a mapped file descriptor: every kind maps."""
    for index, pool in enumerate(pools):
        if isinstance(pool, Memory) and pool.name not in POOL_KINDS:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{where} pool {index}: cannot map {pool.name!r} memory")


class EngineDevice(CheckedDevice):
    """A CPU device whose operations run on an inference engine; subclasses supply the translator."""

    translator: Translator
    #: The interface the engine drivers speak: AIDL v4 (feature level 8).  This plumbing follows AIDL v4's
    #: rules (``vts.hal.checked`` validates by ``hal_version``: no OEM types, no numberOfConsumers, 15-bit
    #: extension prefixes), a reusable execution is checked at creation and each run reads the pools anew,
    #: and an operation of feature level 6 or 7 a translator lacks is reported unsupported.  Each engine
    #: device restates it, so that what it speaks is read where it is defined.
    hal_version = HalVersion.FL8
    #: Declared speed relative to the CPU, per operand type (measured: see the subclass).
    performance: ClassVar[dict[OperandType, PerformanceInfo]] = {}
    #: The figure for operand types the engine was not measured on.
    default_performance = PerformanceInfo(1.0, 1.0)

    def __init__(self) -> None:
        self._support_lock = threading.Lock()

    def get_type(self) -> DeviceType:
        return DeviceType.CPU

    def get_capabilities(self) -> Capabilities:
        return capabilities_table(self.performance, self.default_performance)

    def unsupported_reasons(self, model: Model) -> list[str | None]:
        """One entry per main-subgraph operation: None when supported, else why not."""
        view = ModelView(model)
        with self._support_lock:  # translators cache probes; the host may call from several threads
            return [_rule_broken(model, op) or self.translator.unsupported_reason(view, i)
                    for i, op in enumerate(model.main.operations)]

    def prepare_checked(self, model: Model, priority: Priority, deadline: int | None, model_cache: CacheFiles,
                        data_cache: CacheFiles, token: bytes) -> PreparedModel:
        """After the HAL preamble (``vts.hal.checked``): the pools mapped, the model compiled by the engine."""
        check_pools(model.pools, "model")
        try:
            program = self.translator.compile(ModelView(model))
        except EngineFailure as error:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"engine refused the model: {error}") from None
        return EnginePreparedModel(model.copy(), program)


class EnginePreparedModel(CheckedPreparedModel):
    """One compiled program; executions are serialised (an engine session is not re-entrant)."""

    def __init__(self, model: Model, program: Program) -> None:
        self.model = model
        self.program = program
        self._lock = threading.Lock()

    def check_request(self, request: Request, allow_unspecified_output: bool = True) -> None:
        """The HAL rules and no tokens (``vts.hal.checked``), then pools of a kind nnvts defines."""
        super().check_request(request, allow_unspecified_output)
        check_pools(request.pools, "request")

    def create_reusable_execution(self, request: Request, measure: MeasureTiming | int = MeasureTiming.NO,
                                  loop_timeout: int | None = None) -> Execution:
        """AIDL v4 ``createReusableExecution``: the request refused at creation if this model cannot take it
        (``check_request``: the HAL rules, pools, and a subclass's driver buffers), as IPreparedModel.aidl
        asks; each run of the ``Execution`` reads the pools anew, one run at a time."""
        self.check_request(request)
        return Execution(self, request, measure, loop_timeout)

    def _read_inputs(self, request: Request) -> list[np.ndarray]:
        graph = self.model.main
        inputs = []
        for position, argument in enumerate(request.inputs):
            operand = graph.operands[graph.input_indexes[position]]
            if argument.has_no_value:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"input {position}: omitted inputs are not supported")
            dims = list(argument.dimensions) or list(operand.dimensions)
            dtype = np.dtype(NUMPY_DTYPE[OperandType(operand.type)])
            count = int(np.prod(dims)) if dims else 1
            if argument.location.length < count * dtype.itemsize:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"input {position}: {argument.location.length} bytes given for dims {dims}")
            pool = request.pools[argument.location.pool_index]
            assert isinstance(pool, Memory)
            inputs.append(pool.array(argument.location.offset, dtype, count).copy().reshape(dims))
        return inputs

    def _write_outputs(self, request: Request, results: Sequence[np.ndarray]) -> tuple[OutputShape, ...]:
        """Every output or none: too small a range anywhere is OUTPUT_INSUFFICIENT_SIZE with all shapes."""
        graph = self.model.main
        data = []
        for position, value in enumerate(results):
            operand = graph.operands[graph.output_indexes[position]]
            data.append(np.ascontiguousarray(value, dtype=np.dtype(NUMPY_DTYPE[OperandType(operand.type)])))
        shapes = tuple(OutputShape(tuple(int(d) for d in array.shape), array.nbytes <= argument.location.length)
                       for array, argument in zip(data, request.outputs, strict=True))
        if not all(shape.is_sufficient for shape in shapes):
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "an output buffer is too small",
                              output_shapes=shapes)
        for array, argument in zip(data, request.outputs, strict=True):
            pool = request.pools[argument.location.pool_index]
            assert isinstance(pool, Memory)
            pool.write(argument.location.offset, array.tobytes())
        return shapes

    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> tuple[OutputShape, ...]:
        """Inputs from the pools, the engine (one run at a time), outputs back; a late finish is TRANSIENT."""
        inputs = self._read_inputs(request)
        with self._lock, timer:
            try:
                results = self.program.run(inputs)
            except EngineFailure as error:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"engine failed the execution: {error}") from None
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the engine finished after the deadline")
        return self._write_outputs(request, results)
