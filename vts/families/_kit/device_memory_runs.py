"""Model cases of the memory_domain family: VTS MemoryDomainTest (GeneratedTestHarness.cpp).

In the kit because two families run them: ``memory_domain``, and ``with_config``, which reruns them
through AIDL v4's config calls (``with_config=True``: the model prepared through ``prepareModelWithConfig``,
every execution through ``executeSynchronouslyWithConfig``, a burst's ``executeSynchronouslyWithConfig``
and ``executeFencedWithConfig``, as Android 13's VTS reruns its MEMORY_DOMAIN kind with ``useConfig``).

Every example of every model (not ``expect_failure``) runs six times, with
outputs as the model declares them and timing off: on three paths, in two
memory configurations.  The paths are the VTS's of the driver's interface:
HIDL's async, sync and fenced; AIDL's sync, burst and fenced (AIDL VTS has
no async call).  The burst path is AIDL VTS's BURST executor
(GeneratedTestHarness.cpp): a fresh burst, a memory identifier token 0,
1, 2... for each shared-memory pool and -1 for each driver-buffer (token)
pool, then each token released (which must succeed): the check that an
AIDL driver takes driver buffers in a burst, as IBurst.aidl allows.

* BLOB_AHWB: the request's input and output pools are
  ``hardware_buffer_blob`` memory.  A driver must map them (the HAL accepts
  the kind from 1.2 on); refusing them fails the case, as any non-NONE status
  fails a FULLY_SPECIFIED execution in VTS (GeneratedTestHarness.cpp
  EvaluatePreparedModel lets only dynamic-shape modes skip on GENERAL_FAILURE).
* DEVICE: one ``allocate`` per non-omitted input and per output
  (descriptor without dimensions, one role of frequency 1.0).  Each must
  give a buffer and a positive token, or GENERAL_FAILURE (that argument then
  stays in shared memory); INVALID_ARGUMENT fails the case.  Inputs are filled
  with ``copy_from`` (must succeed), outputs read back with ``copy_to`` (must
  succeed) into the shared output pool, where the generated family's judge
  reads them.  If no buffer at all was allocated the configuration is skipped,
  as VTS does silently.

Two choices VTS does not have to make: an input whose model dimensions are
not fully known gets its example dims in ``copy_from`` and in the request
(a buffer of unknown shape cannot be filled without them); an output whose
expected size is zero stays in shared memory (a client may never pre-declare
a zero-sized output, and VTS's sample driver refuses such buffers anyway).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vts.families._kit.burst_path import execute_on_fresh_burst
from vts.families._kit.executions import (
    Answer,
    Executor,
    execute,
    prepare_for_case,
)
from vts.families._kit.fenced_path import execute_fenced_twice, judge_golden
from vts.families._kit.with_config import WithConfigPath, execute_with_config
from vts.families.base import Case, CaseFailure, Outcome, RunOptions, failed, passed, skipped
from vts.hal import memory as hal_memory
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer, Device, PreparedModel, spoken_version
from vts.hal.types import BufferDesc, BufferRole, DataLocation, MemoryToken, RequestArgument
from vts.model.casemodel import (
    BuiltRequest,
    CaseExample,
    CaseModel,
    build_request,
    dtype_of,
    element_count,
)

#: The burst path (AIDL VTS's Executor::BURST); the others are the kit's executors.
BURST = "burst"
Path = Executor | WithConfigPath | str
#: The config calls of the ``with_config`` rerun, in AIDL VTS's order (sync, burst, fenced).
CONFIG_PATHS = (WithConfigPath.SYNC, WithConfigPath.BURST, WithConfigPath.FENCED)
#: The paths of each interface's VTS, in its order (HIDL 1.3 MemoryDomainTests, AIDL MemoryDomainTests).
HIDL_EXECUTORS: tuple[Path, ...] = (Executor.ASYNC, Executor.SYNC, Executor.FENCED)
AIDL_EXECUTORS: tuple[Path, ...] = (Executor.SYNC, BURST, Executor.FENCED)


def executors_for(device: object) -> tuple[Path, ...]:
    """The execution paths the memory_domain cases take for ``device``, by the interface it speaks."""
    return AIDL_EXECUTORS if spoken_version(device).is_aidl else HIDL_EXECUTORS


def _name(executor: Path) -> str:
    return executor.value if isinstance(executor, (Executor, WithConfigPath)) else executor


@dataclass(slots=True)
class DeviceArgument:
    """One request argument moved into a driver-allocated buffer."""

    is_input: bool
    position: int
    buffer: Buffer
    token: int
    dims: list[int]
    size: int


def run_model_case(case: Case, device: Device, options: RunOptions, with_config: bool = False) -> Outcome:
    """Both memory configurations of the case's example on every path; ``with_config``: through AIDL v4's
    config calls, on the model prepared through ``prepareModelWithConfig`` (the caller checked the version)."""
    model = case.model
    assert model is not None and case.example is not None
    if with_config:
        prepared, why = prepare_for_case(device, model, options, with_config=PrepareModelConfig())
    else:
        prepared, why = prepare_for_case(device, model, options)
    if prepared is None:
        return skipped(why)
    example = model.examples[case.example]
    problems: list[str] = []
    notes: list[str] = []
    executors: tuple[Path, ...] = tuple(CONFIG_PATHS) if with_config else executors_for(device)
    for executor in executors:
        problems += _run_blob(model, example, case.example, prepared, executor, options)
    for executor in executors:
        outcome = _run_device(model, example, case.example, prepared, device, executor, options)
        if outcome is None:
            notes.append("device-memory configuration skipped: no buffer could be allocated")
            break
        problems += outcome
    if problems:
        return failed(problems[0], tuple(problems))
    return passed("; ".join(notes))


def _execute(prepared: PreparedModel, built: BuiltRequest, executor: Path, options: RunOptions) -> Answer:
    if isinstance(executor, WithConfigPath):
        return execute_with_config(prepared, built.request, executor, ExecutionConfig(), timeout=options.case_timeout)
    if executor == BURST:
        return execute_on_fresh_burst(prepared, built.request, MeasureTiming.NO)
    if executor is Executor.FENCED:
        return execute_fenced_twice(prepared, built.request, MeasureTiming.NO, options.case_timeout)
    assert isinstance(executor, Executor)
    return execute(prepared, built.request, executor, MeasureTiming.NO, timeout=options.case_timeout)


def _judge(model: CaseModel, example: CaseExample, example_index: int, built: BuiltRequest, answer: Answer,
           executor: Path, where: str) -> list[str]:
    # A burst is judged as a synchronous execution (its outputs are described as the sync path's are).
    if isinstance(executor, WithConfigPath):
        path = Executor.FENCED if executor is WithConfigPath.FENCED else Executor.SYNC
    else:
        path = executor if isinstance(executor, Executor) else Executor.SYNC
    return judge_golden(model, example_index, built, answer, path, MeasureTiming.NO, where)


def _run_blob(model: CaseModel, example: CaseExample, example_index: int, prepared: PreparedModel,
              executor: Path, options: RunOptions) -> list[str]:
    built = build_request(model, example, hal_memory.HARDWARE_BUFFER_BLOB, extensions=options.extensions)
    try:
        answer = _execute(prepared, built, executor, options)
        return _judge(model, example, example_index, built, answer, executor,
                      f"{_name(executor)} execution with hardware_buffer_blob pools")
    finally:
        built.close()


def _run_device(model: CaseModel, example: CaseExample, example_index: int, prepared: PreparedModel,
                device: Device, executor: Path, options: RunOptions) -> list[str] | None:
    """Problems of the device-memory configuration on ``executor``; None if nothing could be allocated."""
    built = build_request(model, example, options.pool_kind, extensions=options.extensions)
    try:
        arguments = _allocate_all(model, example, prepared, device, options)
        if not arguments:
            return None
        where = f"{_name(executor)} execution with device memory"
        _move_into_buffers(built, arguments, options)
        answer = _execute(prepared, built, executor, options)
        if answer.ok:
            _read_back(built, arguments, options)
        return _judge(model, example, example_index, built, answer, executor, where)
    except CaseFailure as failure:
        return [failure.reason]
    finally:
        built.close()


def _allocate(device: Device, prepared: PreparedModel, is_input: bool, position: int) -> tuple[Buffer, int] | None:
    side = "input" if is_input else "output"
    roles = [BufferRole(0, position, 1.0)]
    try:
        answer = device.allocate(BufferDesc([]), [prepared], roles if is_input else [], [] if is_input else roles)
    except DriverError as error:
        if error.status == ErrorStatus.GENERAL_FAILURE:
            return None  # this argument stays in shared memory
        raise CaseFailure(f"allocate for {side} {position} returned {error.status.name}; only NONE or "
                          "GENERAL_FAILURE are allowed", (error.message,)) from None
    try:
        buffer, token = answer  # type: ignore[misc]
    except (TypeError, ValueError):
        raise CaseFailure(f"allocate for {side} {position} returned {answer!r}, not (buffer, token)") from None
    if buffer is None or not isinstance(token, int) or isinstance(token, bool) or not 0 < token < 1 << 32:
        raise CaseFailure(f"allocate for {side} {position} returned buffer {buffer!r} with token {token!r}; NONE "
                          "needs a buffer and a positive uint32 token")
    return buffer, token


def _allocate_all(model: CaseModel, example: CaseExample, prepared: PreparedModel, device: Device,
                  options: RunOptions) -> list[DeviceArgument]:
    main = model.main
    arguments = []
    for position, index in enumerate(main.inputs):
        data = example.inputs.get(position)
        if data is None or data.value.size == 0:
            continue  # omitted (or empty) input: no value to place anywhere
        operand = main.operands[index]
        dims = list(data.dims) if (0 in operand.dims or (not operand.dims and data.dims)) else []
        size = data.value.size * data.value.dtype.itemsize
        allocated = _allocate(device, prepared, True, position)
        if allocated is not None:
            arguments.append(DeviceArgument(True, position, *allocated, dims, size))
    for position, index in enumerate(main.outputs):
        operand = main.operands[index]
        golden = example.outputs.get(position)
        dims = golden.dims if golden is not None else operand.dims
        size = element_count(dims) * dtype_of(operand.type, options.extensions).itemsize
        if size == 0:
            continue  # a client may not pre-declare a zero-sized output
        allocated = _allocate(device, prepared, False, position)
        if allocated is not None:
            arguments.append(DeviceArgument(False, position, *allocated, [], size))
    return arguments


def _move_into_buffers(built: BuiltRequest, arguments: list[DeviceArgument], options: RunOptions) -> None:
    """Fill input buffers with copy_from and point the request at token pools (inputs first, then outputs)."""
    request = built.request
    for argument in arguments:
        pool_index = len(request.pools)
        request.pools.append(MemoryToken(argument.token))
        if argument.is_input:
            old = request.inputs[argument.position]
            staging = hal_memory.allocate(options.pool_kind, argument.size)
            try:
                staging.write(0, built.input_pool.read(old.location.offset, argument.size))
                try:
                    argument.buffer.copy_from(staging, argument.dims)
                except DriverError as error:
                    raise CaseFailure(f"copy_from into the buffer of input {argument.position} returned "
                                      f"{error.status.name}", (error.message,)) from None
            finally:
                staging.close()
            request.inputs[argument.position] = RequestArgument(False, DataLocation(pool_index, 0, 0),
                                                                list(argument.dims))
        else:
            request.outputs[argument.position] = RequestArgument(False, DataLocation(pool_index, 0, 0), [])


def _read_back(built: BuiltRequest, arguments: list[DeviceArgument], options: RunOptions) -> None:
    """copy_to every output buffer, then place the bytes where the judge reads the output."""
    for argument in arguments:
        if argument.is_input:
            continue
        staging = hal_memory.allocate(options.pool_kind, argument.size)
        try:
            try:
                argument.buffer.copy_to(staging)
            except DriverError as error:
                raise CaseFailure(f"copy_to from the buffer of output {argument.position} returned "
                                  f"{error.status.name} after a successful execution", (error.message,)) from None
            location = built.output_locations[argument.position]
            data = np.frombuffer(staging.read(0, argument.size), dtype=np.uint8)
            built.output_pool.write(location.offset, data[: location.length].tobytes())
        finally:
            staging.close()
