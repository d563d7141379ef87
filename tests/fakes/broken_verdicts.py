"""Reference drivers with faults the golden families alone cannot see (issue 11).

Each public factory is a ``module:attr`` usable as ``nnvts run --driver``;
its docstring names the family that must catch it (or, for the last one,
accept it).  The process-level fault of the same issue, a driver that dies
once and then passes when re-run, is ``tests.fakes.misbehaving:crash_once_device``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from nnvts.drivers.reference.buffer import ReferenceBuffer
from nnvts.drivers.reference.device import ReferenceDevice
from tests.fakes.broken import FaultyDevice, FaultyPreparedModel, rewrites_insufficient_size
from vts.hal.enums import ErrorStatus, MeasureTiming, OperandLifeTime, OperationType, is_extension_type, is_scalar_type
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.memory import Memory
from vts.hal.types import ExecutionResult, Model, Request, Timing

# -- helpers ---------------------------------------------------------------------------


def _plain_pools(request: Request) -> bool:
    """Every pool is shared memory (no driver-allocated buffer named by token)."""
    return all(isinstance(pool, Memory) for pool in request.pools)


def _input_bytes(request: Request) -> tuple[bytes | None, ...]:
    values: list[bytes | None] = []
    for argument in request.inputs:
        if argument.has_no_value:
            values.append(None)
            continue
        pool = request.pools[argument.location.pool_index]
        values.append(pool.read(argument.location.offset, argument.location.length))  # type: ignore[union-attr]
    return tuple(values)


def _output_bytes(request: Request) -> list[bytes]:
    return [request.pools[a.location.pool_index].read(a.location.offset, a.location.length)  # type: ignore[union-attr]
            for a in request.outputs]


def _write_outputs(request: Request, values: Sequence[bytes]) -> None:
    for argument, data in zip(request.outputs, values, strict=True):
        request.pools[argument.location.pool_index].write(argument.location.offset, data)  # type: ignore[union-attr]


# -- (1) outputs served by input shape -------------------------------------------------


class _ShapeCachePreparedModel(FaultyPreparedModel):
    """Computes the first request of each input shape, then re-serves its outputs for that shape.

    The synchronous and asynchronous paths share the cache (``execute_async``
    goes through ``execute``); the fenced path computes.
    """

    def __init__(self, inner: PreparedModel, model: Model) -> None:
        super().__init__(inner, model, None, None)
        self._cache: dict[tuple[tuple[int, ...], ...], tuple[list[bytes], ExecutionResult]] = {}

    def _key(self, request: Request) -> tuple[tuple[int, ...], ...]:
        """Input shapes (and output buffer sizes): never the input values."""
        return (*(tuple(a.dimensions) for a in request.inputs), tuple(a.location.length for a in request.outputs))

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        key = self._key(request)
        if _plain_pools(request) and key in self._cache:
            outputs, result = self._cache[key]
            _write_outputs(request, outputs)
            return ExecutionResult(result.output_shapes, result.timing if measure == MeasureTiming.YES else Timing())
        result = self.inner.execute(request, measure, deadline, loop_timeout)
        if _plain_pools(request):
            self._cache[key] = (_output_bytes(request), result)
        return result

class _ShapeCacheDevice(FaultyDevice):
    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return _ShapeCachePreparedModel(self.inner.prepare_model(model, *args, **kwargs), model)


def caches_outputs_by_input_shape() -> Device:
    """Re-serves the outputs of an earlier execution whenever the input shapes repeat.

    Every golden family builds one request per prepared model (or repeats
    the same inputs), so only the ``differential`` family catches it.
    """
    return _ShapeCacheDevice("broken-shape-cache")


# -- (2) right on the golden inputs only ----------------------------------------------


def known_inputs_of(documents: Iterable[dict] = (), spec_paths: Sequence[str] = ()) -> set[tuple[bytes | None, ...]]:
    """The input bytes of every example in ``documents`` and ``spec_paths``: the driver's lookup table."""
    from vts.model.casemodel import parse_spec
    from vts.run.runner import iter_models

    models = [m for document in documents for m in parse_spec(document)]
    models += [m for _, m in iter_models(list(spec_paths))] if spec_paths else []
    known = set()
    for model in models:
        for example in model.examples:
            known.add(tuple(
                example.inputs[position].value.astype(example.inputs[position].value.dtype.newbyteorder("<"),
                                                      copy=False).tobytes() if position in example.inputs else None
                for position in range(len(model.main.inputs))))
    return known


def _wrong(operand_type: int, values: np.ndarray) -> None:
    if values.dtype.kind == "f":
        values += np.asarray(0.5, dtype=values.dtype)
    elif values.dtype == np.bool_:
        values[...] = ~values
    elif values.dtype.kind in "iu":
        values[...] = (values.astype(np.int64) + 3).astype(values.dtype)


class _GoldenLookupPreparedModel(FaultyPreparedModel):
    """Correct when the inputs are byte for byte those of a known example, wrong otherwise."""

    def __init__(self, inner: PreparedModel, model: Model, known: set[tuple[bytes | None, ...]]) -> None:
        super().__init__(inner, model, _wrong, None)
        self.known = known

    def _corrupt(self, request: Request) -> None:
        main = self.model.main
        if any(is_extension_type(main.operands[i].type) for i in (*main.input_indexes, *main.output_indexes)):
            return  # vendor types: its lookup table cannot tell them apart, so it leaves them alone
        if _plain_pools(request) and _input_bytes(request) not in self.known:
            super()._corrupt(request)


class GoldenLookupDevice(FaultyDevice):
    def __init__(self, known: set[tuple[bytes | None, ...]]) -> None:
        super().__init__("broken-golden-lookup")
        self.known = known

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return _GoldenLookupPreparedModel(self.inner.prepare_model(model, *args, **kwargs), model, self.known)


def right_on_golden_inputs_only() -> Device:
    """Knows the goldens (the specs named by ``NNVTS_TEST_GOLDEN_SPECS``, default generated_tests/).

    Passes every golden family; the ``differential`` family's random inputs
    expose it.
    """
    paths = os.environ.get("NNVTS_TEST_GOLDEN_SPECS", "generated_tests").split(os.pathsep)
    return GoldenLookupDevice(known_inputs_of(spec_paths=paths))


# -- (3) the requested loop timeout ignored ---------------------------------------------


class _LoopTimeoutBlindPreparedModel(FaultyPreparedModel):
    """Drops the requested loop timeout: the reference then stops loops at the HAL default (2 s)."""

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        return self.inner.execute(request, measure, deadline, None)

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        return self.inner.execute_async(request, measure, deadline, None)

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        return self.inner.execute_fenced(request, wait_for, measure, deadline, None, timeout_after_fence)


class _LoopTimeoutBlindDevice(FaultyDevice):
    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return _LoopTimeoutBlindPreparedModel(self.inner.prepare_model(model, *args, **kwargs), model, None, None)


def ignores_loop_timeout() -> Device:
    """Runs an endless WHILE for its own 2 s default, whatever timeout is asked: ``infinite_loop_timeout``."""
    return _LoopTimeoutBlindDevice("broken-loop-timeout")


# -- (4) timing reported on async when not asked -----------------------------------------


class _AsyncTimingPreparedModel(FaultyPreparedModel):
    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        future: Future[ExecutionResult] = Future()
        try:
            result = self.inner.execute(request, MeasureTiming.YES, deadline, loop_timeout)
            future.set_result(result)
        except DriverError as error:
            future.set_exception(error)
        return future


class _AsyncTimingDevice(FaultyDevice):
    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return _AsyncTimingPreparedModel(self.inner.prepare_model(model, *args, **kwargs), model, None, None)


def async_timing_unasked() -> Device:
    """Always measures on the asynchronous path, even with MeasureTiming.NO: ``generated``."""
    return _AsyncTimingDevice("broken-async-timing")


# -- (5) a failed copy_from leaves the buffer initialised -----------------------------------


class _StickyInitialisedBuffer(ReferenceBuffer):
    def copy_from(self, source: Memory, dimensions: Sequence[int]) -> None:
        was = self.initialized
        try:
            super().copy_from(source, dimensions)
        except DriverError:
            with self._lock:
                self._initialized = was
            raise


def failed_copy_from_keeps_initialised() -> ReferenceDevice:
    """A failed copy_from keeps the old contents usable (IBuffer.hal: it must uninitialise): ``memory_domain``."""
    device = ReferenceDevice()
    device.name = "broken-sticky-copy-from"  # type: ignore[misc]
    device.memory.buffer_class = _StickyInitialisedBuffer
    return device


# -- (6) GENERAL_FAILURE for a too-small buffer after supporting dynamic shapes ----------------


def insufficient_as_general_failure() -> Device:
    """Reports dynamic shapes, but answers a too-small buffer with GENERAL_FAILURE: ``dynamic_output_shape``."""
    return rewrites_insufficient_size("broken-insufficient-gf", lambda error: DriverError(
        ErrorStatus.GENERAL_FAILURE, "output buffer too small"))


# -- (7) runtime-only control-flow models refused (valid behaviour) ----------------------------


def _unknown_size(operand: Any) -> bool:
    return not is_scalar_type(operand.type) and (not operand.dimensions or 0 in operand.dimensions)


def _runtime_only(model: Model) -> bool:
    """A WHILE whose outer operands or cond/body inputs and outputs have unknown size (its own check).

    A malformed model (the validation family's mutations) is left to the reference's validation.
    """
    try:
        return _while_with_unknown_size(model)
    except (IndexError, AttributeError, TypeError):
        return False


def _while_with_unknown_size(model: Model) -> bool:
    graphs = [model.main, *model.referenced]
    for graph in graphs:
        for op in graph.operations:
            if op.type != OperationType.WHILE or len(op.inputs) < 3:
                continue
            operands = [graph.operands[i] for i in (*op.inputs[2:], *op.outputs)]
            for reference in op.inputs[:2]:
                location = graph.operands[reference].location
                if graph.operands[reference].lifetime == OperandLifeTime.SUBGRAPH and \
                        0 <= location.offset < len(model.referenced):
                    inner = model.referenced[location.offset]
                    operands += [inner.operands[i] for i in (*inner.input_indexes, *inner.output_indexes)]
            if any(_unknown_size(o) for o in operands):
                return True
    return False


class _StrictControlFlowDevice(FaultyDevice):
    def get_supported_operations(self, model: Model) -> list[bool]:
        if _runtime_only(model):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "control flow with operands of unknown size")
        return self.inner.get_supported_operations(model)

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        if _runtime_only(model):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "control flow with operands of unknown size")
        return super().prepare_model(model, *args, **kwargs)


class RuntimeModeReference(ReferenceDevice):
    """The reference validating in the runtime's mode: it accepts WHILE operands of unknown size."""

    name = "runtime-mode-reference"

    def check_model(self, model: Model) -> None:
        from vts.hal.validation import ValidationError, validate_model

        try:
            validate_model(model, hal_rules_only=True, allow_unknown_control_flow_sizes=True)
        except ValidationError as error:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None


def accepts_runtime_only_control_flow() -> Device:
    """Supports the runtime-only models (right by the HAL too): ``generated`` must judge its outputs."""
    return RuntimeModeReference()


def accepts_runtime_only_control_flow_wrongly() -> Device:
    """Supports the runtime-only models and gets every float output 1e-4 wrong: ``generated`` catches it."""
    from tests.fakes.broken import _float_offset

    device = FaultyDevice("runtime-mode-float1e4", fault=_float_offset(1e-4))
    device.inner = RuntimeModeReference()
    return device


class StrictValidationReference(ReferenceDevice):
    """Refuses with INVALID_ARGUMENT every model breaking a NeuralNetworks.h rule, ValidateHal's or not."""

    name = "strict-validation-reference"

    def check_model(self, model: Model) -> None:
        from vts.hal.validation import ValidationError, validate_model

        try:
            validate_model(model)
        except ValidationError as error:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None


def refuses_hal_valid_models_as_invalid() -> Device:
    """Answers INVALID_ARGUMENT to a CONV_2D of rank 3, which ValidateHal accepts: ``generated`` catches it."""
    return StrictValidationReference()


def refuses_runtime_only_control_flow() -> Device:
    """Refuses (INVALID_ARGUMENT) control flow with operands of unknown size, as ValidateHal's driver mode does.

    Right by the HAL: every family must accept it.
    """
    return _StrictControlFlowDevice("strict-control-flow")


__all__ = [
    "GoldenLookupDevice",
    "accepts_runtime_only_control_flow",
    "accepts_runtime_only_control_flow_wrongly",
    "async_timing_unasked",
    "caches_outputs_by_input_shape",
    "failed_copy_from_keeps_initialised",
    "ignores_loop_timeout",
    "insufficient_as_general_failure",
    "known_inputs_of",
    "refuses_hal_valid_models_as_invalid",
    "refuses_runtime_only_control_flow",
    "right_on_golden_inputs_only",
]
