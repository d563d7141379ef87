"""The XLA device: NNAPI models compiled by XLA (through JAX) for the CPU, or a GPU where there is one.

The HAL plumbing shared by engine drivers (validation, support, request
pools, deadlines) is ``nnvts.drivers.engine.device``; this module adds what a
real accelerator has and the CPU engines do not:

- **Device memory.** Request inputs are transferred to the device
  (``jax.device_put``) and outputs back (``np.asarray``); memory-domain
  buffers (``allocate``) are device arrays that executions read and write
  in place (``nnvts.drivers.xla.buffers``).
- **Asynchronous dispatch.** ``execute_async`` and ``execute_fenced`` start
  the computation on the device and return; a completion thread waits with
  ``block_until_ready``, writes the outputs, then completes the future or
  signals the fence.  Executions run concurrently from several threads (an
  XLA executable is re-entrant; no per-model lock).
- **Timing.** ``timeOnDevice`` is measured from dispatch to
  ``block_until_ready`` (the device computation and its transfers);
  ``timeInDriver`` around the whole call (validation, reading the pools,
  writing the outputs).
- **Compilation caching** of the compiled executable, authenticated before
  it is loaded (``nnvts.drivers.xla.caching``).

Identity: ``name`` is ``xla-{device kind}`` (``xla-cpu``, ``xla-nvidia-h100-80gb-hbm3``...), the
type CPU or GPU from the backend, the version string names the backend,
the precision option and the JAX version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from nnvts.drivers.engine.device import (
    EngineDevice,
    EngineFailure,
    EnginePreparedModel,
    capabilities_table,
    check_pools,
)
from nnvts.drivers.engine.nnapi import ModelView
from nnvts.drivers.xla.backend import Backend, jax_module, jax_version, select_backend
from nnvts.drivers.xla.buffers import DeviceBuffer, DeviceMemory
from nnvts.drivers.xla.caching import CompilationCache
from nnvts.drivers.xla.translator import XlaProgram, XlaTranslator, input_specs
from vts.hal.checked import check_model, deadline_passed
from vts.hal.enums import (
    NUMPY_DTYPE,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    MeasureTiming,
    OperandType,
    Priority,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import (
    Buffer,
    CacheFiles,
    CompletedFencedCallback,
    FencedExecutionCallback,
    PreparedModel,
    SyncFence,
    wait_for_fences,
)
from vts.hal.memory import Memory
from vts.hal.types import (
    NO_TIMING_INFO,
    BufferDesc,
    BufferRole,
    Capabilities,
    ExecutionResult,
    MemoryToken,
    Model,
    OutputShape,
    PerformanceInfo,
    Request,
    Timing,
)
from vts.hal.validation import ValidationError, validate_request

DRIVER_VERSION = "1"

#: Declared performance per backend platform, measured with ``nnvts bench --driver xla`` (MobileNet v1 224,
#: execTime relative to the reference CPU; lower is faster). On the CPU backend of a 2-core machine float32
#: took 148.7 ms against the reference's 29.3 ms (5.07x, 2026-11-28, idle); the quantized MobileNet is not
#: supported. A backend not measured here (a GPU) declares the HAL's neutral 1.0 until someone measures it.
MEASURED_PERFORMANCE: dict[str, dict[OperandType, PerformanceInfo]] = {
    "cpu": {OperandType.TENSOR_FLOAT32: PerformanceInfo(5.0, 5.0)},
}


class XlaDevice(EngineDevice):
    #: AIDL v4 (feature level 8): the engine plumbing's rules, and reusable executions checked at creation
    #: (driver buffers too) over this device's own asynchronous paths.
    hal_version = HalVersion.FL8

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        self.backend = backend
        self.translator = XlaTranslator(backend)
        self.name = f"xla-{backend.kind}"
        self.memory = DeviceMemory(self._to_device)
        self.cache = CompilationCache(self.get_version_string())

    def _to_device(self, host: np.ndarray) -> Any:
        return jax_module().device_put(host, self.backend.device)

    def get_capabilities(self) -> Capabilities:
        return capabilities_table(MEASURED_PERFORMANCE.get(self.backend.platform, {}), self.default_performance)

    def get_type(self) -> DeviceType:
        return DeviceType.GPU if self.backend.is_gpu else DeviceType.CPU

    def get_version_string(self) -> str:
        return (f"xla-driver/{DRIVER_VERSION} ({self.backend.platform} backend, {self.backend.device.device_kind}, "
                f"precision {self.backend.precision}; {jax_version()})")

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return self.cache.counts()

    def prepare_model(self, model: Model,
                      preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority | int = Priority.MEDIUM, deadline: int | None = None,
                      model_cache: CacheFiles = (), data_cache: CacheFiles = (),
                      token: bytes = bytes(32)) -> PreparedModel:
        prepared = super().prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
        assert isinstance(prepared, EnginePreparedModel)
        program = prepared.program
        assert isinstance(program, XlaProgram)
        result = XlaPreparedModel(prepared.model, program, self)
        result.hal_version = prepared.hal_version  # its bursts follow the device's version (vts.hal.checked)
        if model_cache or data_cache:
            try:
                executable = serialize_executable(program)
            except Exception as error:  # best effort: caching never changes preparation
                result.cache_note = f"not cached: the executable cannot be serialized ({error!r})"
            else:
                result.cache_note = self.cache.save(result.model, executable, model_cache, data_cache, token)
        return result

    def prepare_model_from_cache(self, deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                                 token: bytes) -> PreparedModel:
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation")
        model, executable = self.cache.load(model_cache, data_cache, token)  # authenticated, or GENERAL_FAILURE
        try:
            check_model(model, self.hal_version)
        except DriverError as error:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"cached model refused: {error.message}") from None
        view = ModelView(model)
        graph = model.main
        try:
            specs = input_specs(view, graph.input_indexes)
            compiled = load_executable(executable, len(graph.input_indexes), len(graph.output_indexes), self.backend)
            program = XlaProgram(compiled, specs, self.backend, b"")
        except Exception:  # the verified model is recompiled if this XLA cannot load its executable
            try:
                program = self.translator.compile(view)
            except EngineFailure as error:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"cached model refused: {error}") from None
        restored = XlaPreparedModel(model, program, self)
        restored.hal_version = self.hal_version  # its bursts follow the device's version (vts.hal.checked)
        return restored

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[Buffer, int]:
        return self.memory.allocate(desc, prepared_models, input_roles, output_roles)


def serialize_executable(program: XlaProgram) -> bytes:
    from jax.experimental import serialize_executable as se

    payload, _in_tree, _out_tree = se.serialize(program.compiled)
    return bytes(payload)


def load_executable(payload: bytes, inputs: int, outputs: int, backend: Backend) -> Any:
    """A compiled executable from authenticated bytes (the trees are rebuilt: positional in, a list out)."""
    jax = jax_module()
    from jax.experimental import serialize_executable as se

    in_tree = jax.tree_util.tree_structure((tuple(range(inputs)), {}))
    out_tree = jax.tree_util.tree_structure(list(range(outputs)))
    return se.deserialize_and_load(payload, in_tree, out_tree, backend=backend.device.client,
                                   execution_devices=[backend.device])


class _Pending:
    """An execution dispatched to the device: its output arrays and what finishing it needs."""

    def __init__(self, outputs: list[Any], started: int, device_start: int) -> None:
        self.outputs = outputs
        self.started = started
        self.device_start = device_start


class XlaPreparedModel(EnginePreparedModel):
    """A compiled XLA executable; executions run concurrently (no lock) and asynchronously."""

    def __init__(self, model: Model, program: XlaProgram, device: XlaDevice) -> None:
        super().__init__(model, program)
        self.xla: XlaProgram = program
        self.device = device
        self.cache_note = ""
        device.memory.register(self, model)

    # -- requests -------------------------------------------------------------

    def _buffers(self, request: Request) -> dict[int, DeviceBuffer]:
        found = {}
        for index, pool in enumerate(request.pools):
            if isinstance(pool, MemoryToken):
                buffer = self.device.memory.get(pool.token)
                if buffer is None:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"request pool {index}: unknown token {pool.token}")
                found[index] = buffer
        return found

    def _validate(self, request: Request, allow_unspecified_output: bool = True) -> None:
        try:
            validate_request(request, self.model, allow_unspecified_output=allow_unspecified_output)
        except ValidationError as error:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, str(error)) from None
        for index, buffer in self._buffers(request).items():
            buffer.validate_request(index, request, self)
        check_pools([p for p in request.pools if isinstance(p, Memory)], "request")

    def _read_inputs(self, request: Request) -> list[Any]:
        graph = self.model.main
        buffers = self._buffers(request)
        inputs: list[Any] = []
        for position, argument in enumerate(request.inputs):
            if argument.has_no_value:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"input {position}: omitted inputs are not supported")
            shape, dtype = self.xla.specs[position]
            buffer = buffers.get(argument.location.pool_index)
            if buffer is not None:
                inputs.append(buffer.read())
                continue
            operand = graph.operands[graph.input_indexes[position]]
            dims = list(argument.dimensions) or list(operand.dimensions)
            if tuple(dims) != shape:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"input {position}: dims {dims}, the model was compiled for {list(shape)}")
            count = int(np.prod(dims)) if dims else 1
            if argument.location.length < count * dtype.itemsize:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                  f"input {position}: {argument.location.length} bytes given for dims {dims}")
            pool = request.pools[argument.location.pool_index]
            assert isinstance(pool, Memory)
            inputs.append(pool.array(argument.location.offset, dtype, count).copy().reshape(dims))
        return inputs

    def _dispatch(self, request: Request) -> _Pending:
        started = time.perf_counter_ns()
        inputs = self._read_inputs(request)
        device_start = time.perf_counter_ns()
        try:
            outputs = self.xla.dispatch(inputs)
        except EngineFailure as error:
            self._invalidate_outputs(request)
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"XLA failed the execution: {error}") from None
        return _Pending(outputs, started, device_start)

    def _invalidate_outputs(self, request: Request) -> None:
        buffers = self._buffers(request)
        for argument in request.outputs:
            buffer = buffers.get(argument.location.pool_index)
            if buffer is not None:
                buffer.invalidate()

    def _finish(self, request: Request, pending: _Pending, measure: MeasureTiming,
                deadline: int | None) -> ExecutionResult:
        """Wait for the device, then write the outputs (device buffers keep device arrays)."""
        try:
            try:
                self.xla.wait(pending.outputs)
            except EngineFailure as error:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"XLA failed the execution: {error}") from None
            device_end = time.perf_counter_ns()
            if deadline_passed(deadline):
                raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the device finished after the deadline")
            shapes = self._write(request, pending.outputs)
        except DriverError:
            self._invalidate_outputs(request)
            raise
        if measure != MeasureTiming.YES:
            return ExecutionResult(shapes, NO_TIMING_INFO)
        end = time.perf_counter_ns()
        return ExecutionResult(shapes, Timing((device_end - pending.device_start) // 1000,
                                              (end - pending.started) // 1000))

    def _write(self, request: Request, outputs: Sequence[Any]) -> tuple[OutputShape, ...]:
        graph = self.model.main
        buffers = self._buffers(request)
        host: list[np.ndarray | None] = []
        shapes = []
        for position, (value, argument) in enumerate(zip(outputs, request.outputs, strict=True)):
            dims = tuple(int(d) for d in value.shape)
            buffer = buffers.get(argument.location.pool_index)
            if buffer is not None:
                host.append(None)
                shapes.append(OutputShape(dims, dims == buffer.dims))
                continue
            operand = graph.operands[graph.output_indexes[position]]
            array = np.ascontiguousarray(np.asarray(value), dtype=np.dtype(NUMPY_DTYPE[OperandType(operand.type)]))
            host.append(array)
            shapes.append(OutputShape(dims, array.nbytes <= argument.location.length))
        if not all(shape.is_sufficient for shape in shapes):
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "an output buffer is too small",
                              output_shapes=tuple(shapes))
        for value, array, argument in zip(outputs, host, request.outputs, strict=True):
            if array is None:
                buffers[argument.location.pool_index].store(value)
                continue
            pool = request.pools[argument.location.pool_index]
            assert isinstance(pool, Memory)
            pool.write(argument.location.offset, array.tobytes())
        return tuple(shapes)

    def _run(self, request: Request, measure: MeasureTiming, deadline: int | None) -> ExecutionResult:
        return self._finish(request, self._dispatch(request), measure, deadline)

    def check_request(self, request: Request, allow_unspecified_output: bool = True) -> None:
        """The HAL rules, then the device buffers' own (memory domains) and mappable pools."""
        self._validate(request, allow_unspecified_output)

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout: int | None = None) -> ExecutionResult:
        """Validate, dispatch to the device, wait for it: timing is measured around the device's work."""
        self._validate(request)
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        return self._run(request, measure, deadline)

    # -- asynchronous paths -----------------------------------------------------

    def execute_async(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                      deadline: int | None = None, loop_timeout: int | None = None) -> Future[ExecutionResult]:
        """Validate and dispatch now; a completion thread waits for the device and completes the future."""
        self._validate(request)
        future: Future[ExecutionResult] = Future()
        try:
            if deadline_passed(deadline):
                raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
            pending = self._dispatch(request)
        except DriverError as error:
            future.set_exception(error)
            return future

        def complete() -> None:
            try:
                future.set_result(self._finish(request, pending, measure, deadline))
            except DriverError as error:
                future.set_exception(error)
            except Exception as error:
                future.set_exception(DriverError(ErrorStatus.GENERAL_FAILURE, f"internal error: {error!r}"))

        threading.Thread(target=complete, daemon=True, name="xla-execute-async").start()
        return future

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        """Wait for the fences, dispatch, return a fence the completion thread signals when the device is done."""
        launched = time.perf_counter_ns()
        self._validate(request, allow_unspecified_output=False)
        if deadline_passed(deadline):
            raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before execution")
        deadline, fenced = wait_for_fences(wait_for, deadline, timeout_after_fence)
        pending = self._dispatch(request)
        done = SyncFence()
        callback = _DeferredCallback(done)

        def complete() -> None:
            try:
                self._finish(request, pending, MeasureTiming.NO, deadline)
            except DriverError as error:
                callback.info = (error.status, NO_TIMING_INFO, NO_TIMING_INFO)
                done.signal(False)
                return
            except Exception:
                callback.info = (ErrorStatus.GENERAL_FAILURE, NO_TIMING_INFO, NO_TIMING_INFO)
                done.signal(False)
                return
            if measure == MeasureTiming.YES:
                end = time.perf_counter_ns()
                callback.info = (ErrorStatus.NONE, Timing((end - fenced) // 1000, (end - launched) // 1000),
                                 Timing((end - fenced) // 1000, (end - fenced) // 1000))
            done.signal(True)

        threading.Thread(target=complete, daemon=True, name="xla-execute-fenced").start()
        return done, callback


class _DeferredCallback(CompletedFencedCallback):
    """The execution's status and timing, known once its fence is signalled."""

    def __init__(self, fence: SyncFence) -> None:
        super().__init__(NO_TIMING_INFO, NO_TIMING_INFO)
        self._fence = fence
        self.info: tuple[ErrorStatus, Timing, Timing] = (ErrorStatus.NONE, NO_TIMING_INFO, NO_TIMING_INFO)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        self._fence.wait()
        return self.info


def create_device(argv: Sequence[str] = (), backend: str | None = None, precision: str | None = None) -> XlaDevice:
    """Entry point of the ``nnvts.drivers`` group (``xla``); ``--driver-option`` sets its backend and precision.

    Driver options:
        backend: the JAX platform to run on (cpu, gpu, cuda, rocm...); unset: $NNVTS_XLA_BACKEND, else cpu
        precision: float32 matmul/convolution precision (highest, default); unset: $NNVTS_XLA_PRECISION,
            else highest
    """
    import importlib.util

    if importlib.util.find_spec("jax") is None or importlib.util.find_spec("jaxlib") is None:
        raise ImportError("the jax package is not installed: pip install 'nnvts[xla]'")
    return XlaDevice(select_backend(backend, precision))
