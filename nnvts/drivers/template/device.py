"""The template driver's device and prepared model: a partial AIDL v4 driver done right.

It speaks the stable AIDL interface ``android.hardware.neuralnetworks`` version 4 (NNAPI feature level 8,
Android 13 and later): ``hal_version = HalVersion.FL8``.  That is what a vendor writes today; the
``.aidl`` files (``../shared/aosp-nn/aidl/android/hardware/neuralnetworks/``) are the contract and
docs/driver-guide.md maps each call to the Python method here.  What a vendor copies:

* ``vts.hal.checked`` does the HAL's preamble (validation by the rules of ``hal_version``, preference,
  priority, deadlines, fences, timing, tokens refused): this file holds only what is the driver's own.
  AIDL's model rules differ from HIDL 1.3's, and the preamble applies them because of ``hal_version``:
  no OEM operand or operation types (INVALID_ARGUMENT), no ``numberOfConsumers`` (nothing to check),
  extension prefixes of 15 bits.
* ``unsupported_reasons`` claims exactly what ``ops.py`` computes; the rest (every operation of feature
  levels 6 and 7 among it: BATCH_MATMUL, PACK, MIRROR_PAD, REVERSE...) is refused at preparation with
  INVALID_ARGUMENT and the harness skips it, naming the operation.
* ``prepare_checked`` decodes every constant once: small ones travel in ``model.operand_values``
  (CONSTANT_COPY), large ones in ``model.pools`` (CONSTANT_REFERENCE, shared memory of a kind the driver
  must be able to map).
* ``run`` reads inputs from the request's pools (a ``DataLocation`` each; AIDL gives input memory
  read-only: read it, never write it), runs the operations in order, and writes every output or none,
  exactly ``location.length`` bytes at most from ``location.offset`` (nothing into the padding AIDL puts
  after an argument): a range too small is OUTPUT_INSUFFICIENT_SIZE with one shape per output.  That
  one ``run`` serves ``IPreparedModel.executeSynchronously`` (``execute``), ``executeFenced``
  (``execute_fenced``: waits for the fences, runs, returns no fence), the bursts and the reusable
  executions.
* ``create_reusable_execution`` (AIDL v4 ``createReusableExecution``) checks the request once, at
  creation, as IPreparedModel.aidl asks, and returns the interface's ``Execution``: each of its runs
  reads the request's memory as it is then, one run at a time.
* Bursts (``configureExecutionBurst``) are the base ``vts.hal.interfaces.Burst`` over ``execute``:
  ``IBurst.executeSynchronously`` with one memory identifier token per pool is ``Burst.execute``,
  ``releaseMemoryResource`` is ``free_memory``; correct for any correct ``execute``.  It follows AIDL's
  rules because the checked base gives every prepared model the device's ``hal_version``: token -1 (no
  identity) and driver-buffer pools taken, a memory given again under a held token used as the memory is
  now, token -2 and ``releaseMemoryResource(-2)`` INVALID_ARGUMENT (``vts.hal.aidl_burst``).  Override
  it only to keep a mapping per token until it is released (never the memory's contents; the ``burst``
  family rewrites a memory between executions) (docs/driver-guide.md, Bursts).

What an AIDL v4 driver may refuse, and the template does: compilation caching (``(0, 0)`` cache files,
``prepare_model_from_cache`` GENERAL_FAILURE), memory domains (``allocate`` GENERAL_FAILURE, a request
naming a driver buffer INVALID_ARGUMENT), extensions (none declared), and every operation it does not
claim.  What it may not refuse: a valid request for a model it prepared, on any path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nnvts.drivers.template.ops import CONSTANT, OPERATIONS, Constants, unsupported_reason
from vts.hal.checked import CheckedDevice, CheckedPreparedModel, DeviceTimer, deadline_passed
from vts.hal.enums import DeviceType, ErrorStatus, HalVersion, MeasureTiming, OperandLifeTime, OperandType, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import CacheFiles, Execution, PreparedModel
from vts.hal.memory import POOL_KINDS, Memory
from vts.hal.types import (
    Capabilities,
    Model,
    Operand,
    OperandPerformance,
    OutputShape,
    PerformanceInfo,
    Request,
    RequestArgument,
)

DEVICE_NAME = "nnvts-template"
_SCALARS = {OperandType.INT32: np.int32, OperandType.FLOAT32: np.float32, OperandType.BOOL: np.bool_}


def _constant_bytes(model: Model, operand: Operand) -> bytes:
    """The bytes of a constant: in the model (CONSTANT_COPY) or in one of its pools (CONSTANT_REFERENCE)."""
    where = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        return model.operand_values[where.offset: where.offset + where.length]
    pool = model.pools[where.pool_index]
    if pool.name not in POOL_KINDS:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, f"model pool {where.pool_index}: cannot map {pool.name!r}")
    return pool.read(where.offset, where.length)


def _decode(operand: Operand, raw: bytes) -> object:
    if operand.type in _SCALARS:
        return np.frombuffer(raw, dtype=_SCALARS[OperandType(operand.type)], count=1)[0].item()
    if operand.type == OperandType.TENSOR_FLOAT32:
        return np.frombuffer(raw, dtype=np.float32).reshape(operand.dimensions).copy()
    return raw


def decode_constants(model: Model, only: set[int] | None = None) -> Constants:
    """Every constant operand of the main subgraph (or those in ``only``) by index, decoded."""
    return {index: _decode(operand, _constant_bytes(model, operand))
            for index, operand in enumerate(model.main.operands)
            if operand.lifetime in CONSTANT and (only is None or index in only)}


def _dims(argument: RequestArgument, operand: Operand) -> list[int]:
    """The request's dimensions where it gives them, else the model's."""
    return list(argument.dimensions) if argument.dimensions else list(operand.dimensions)


class TemplatePreparedModel(CheckedPreparedModel):
    """One model, its constants decoded (``IPreparedModel``); executions may run in parallel (no state shared
    between them).

    The AIDL v4 calls and what answers them: ``executeSynchronously`` is ``execute`` and ``executeFenced``
    is ``execute_fenced`` (both ``CheckedPreparedModel``'s, around ``run``); ``configureExecutionBurst`` is
    the inherited ``configure_execution_burst``; ``createReusableExecution`` is
    ``create_reusable_execution`` below.  ``execute_async`` is HIDL's ``execute_1_3``: AIDL has no
    asynchronous call, but the Python interface keeps it on every driver (some families still drive it) and
    the checked base answers it over ``run``: nothing to write for it.
    """

    def __init__(self, model: Model, constants: Constants) -> None:
        self.model = model
        self.constants = constants
        #: The kernel of each operation type (``ops.OPERATIONS``); a per-model table so a test can swap one.
        self.kernels = {op_type: op_def.kernel for op_type, op_def in OPERATIONS.items()}

    def _read_inputs(self, request: Request) -> dict[int, object]:
        graph = self.model.main
        values: dict[int, object] = {}
        for position, argument in enumerate(request.inputs):
            index = graph.input_indexes[position]
            if argument.has_no_value:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"input {position}: omitted inputs are not supported")
            dims = _dims(argument, graph.operands[index])
            count = int(np.prod(dims)) if dims else 1
            pool = request.pools[argument.location.pool_index]
            if not isinstance(pool, Memory) or pool.name not in POOL_KINDS:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"input {position}: cannot map its pool")
            values[index] = pool.array(argument.location.offset, np.float32, count).copy().reshape(dims)
        return values

    def _write_outputs(self, request: Request, values: dict[int, object]) -> tuple[OutputShape, ...]:
        graph = self.model.main
        arrays = [np.ascontiguousarray(values[index], dtype=np.float32) for index in graph.output_indexes]
        shapes = tuple(OutputShape(array.shape, array.nbytes <= argument.location.length)
                       for array, argument in zip(arrays, request.outputs, strict=True))
        if not all(shape.is_sufficient for shape in shapes):
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "an output buffer is too small",
                              output_shapes=shapes)
        for array, argument in zip(arrays, request.outputs, strict=True):
            pool = request.pools[argument.location.pool_index]
            if not isinstance(pool, Memory) or pool.name not in POOL_KINDS:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "an output's pool cannot be mapped")
            pool.write(argument.location.offset, array.tobytes())
        return shapes

    def create_reusable_execution(self, request: Request, measure: MeasureTiming | int = MeasureTiming.NO,
                                  loop_timeout: int | None = None) -> Execution:
        """AIDL v4 ``createReusableExecution``: the request checked now, then executed again and again.

        IPreparedModel.aidl: it "must verify the inputs to the function are correct" and refuse them at
        once (INVALID_ARGUMENT here, nothing created).  The ``Execution`` returned keeps the request and
        its settings and calls ``execute`` / ``execute_fenced`` for each run: ``run`` reads the pools anew
        each time (the client rewrites the inputs between runs; cache mappings if you like, never
        contents), and a second run while one is in flight is refused (IExecution: one at a time).
        """
        self.check_request(request)
        return Execution(self, request, measure, loop_timeout)

    def run(self, request: Request, deadline: int | None, loop_timeout: int | None,
            timer: DeviceTimer) -> tuple[OutputShape, ...]:
        values: dict[int, object] = dict(self.constants)
        values.update(self._read_inputs(request))
        with timer:
            for op in self.model.main.operations:
                kernel = self.kernels[op.type]
                values[op.outputs[0]] = kernel([values[i] for i in op.inputs])
        if deadline_passed(deadline):  # numpy cannot be interrupted: a late answer is dropped, not returned
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "finished after the deadline")
        return self._write_outputs(request, values)


class TemplateDevice(CheckedDevice):
    """A CPU device with four float32 operations (AIDL ``IDevice``); everything optional (caching, memory
    domains, extensions) left to the defaults, which answer "unsupported" the interface's way."""

    name = DEVICE_NAME
    #: The interface this driver speaks: AIDL v4 (feature level 8).  The harness judges it by AIDL v4's rules,
    #: runs its reusable executions, and sends it models of every feature level up to 8 (it reports the
    #: newer operations it lacks unsupported).  A driver for an Android 11 vendor image declares
    #: ``HalVersion.V1_3`` instead (HIDL 1.3): then HIDL's model rules apply (numberOfConsumers checked,
    #: OEM types valid), no operation newer than 1.3 is sent and reusable executions are not asked for.
    hal_version = HalVersion.FL8

    def get_type(self) -> DeviceType:
        return DeviceType.CPU

    def get_version_string(self) -> str:
        return "nnvts-template/1.0"

    def get_capabilities(self) -> Capabilities:
        """numpy on the CPU: parity (1.0) with the CPU the HAL's figures are relative to, for every type
        (AIDL's operand types: no OEM ones, no SUBGRAPH)."""
        parity = PerformanceInfo(1.0, 1.0)
        table = tuple(OperandPerformance(int(t), parity) for t in sorted(OperandType)
                      if t not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE))
        return Capabilities(parity, parity, table, parity, parity)

    def unsupported_reasons(self, model: Model) -> list[str | None]:
        graph = model.main
        bools = {i for i, o in enumerate(graph.operands) if o.type == OperandType.BOOL and o.lifetime in CONSTANT}
        try:
            constants = decode_constants(model, bools)
        except DriverError as error:  # a layout flag we cannot read: claim nothing that depends on it
            return [f"constants unreadable: {error.message}"] * len(graph.operations)
        return [unsupported_reason(op, graph.operands, constants) for op in graph.operations]

    def prepare_checked(self, model: Model, priority: Priority, deadline: int | None, model_cache: CacheFiles,
                        data_cache: CacheFiles, token: bytes) -> PreparedModel:
        return TemplatePreparedModel(model.copy(), decode_constants(model))


def create_device(argv: Sequence[str] = ()) -> TemplateDevice:
    """Entry point of the ``nnvts.drivers`` group (``--driver template``)."""
    return TemplateDevice()
