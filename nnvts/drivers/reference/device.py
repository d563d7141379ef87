"""The nnvts reference accelerator: a CPU device that runs models with numpy.

It is the yardstick vendor drivers are compared with, so its answers follow
Android's sample driver (frameworks/ml/nn/driver/sample/SampleDriver.cpp) unless a comment says why
not: full HAL validation on every call, INVALID_ARGUMENT for malformed
models and arguments, MISSED_DEADLINE_PERSISTENT for a deadline that passed
before the work started.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from nnvts.drivers.reference.caching import CompilationCache
from nnvts.drivers.reference.extensions import ModelExtensions, supported_extensions
from nnvts.drivers.reference.memory_domain import DeviceMemory
from nnvts.drivers.reference.ops.registry import operations
from nnvts.drivers.reference.prepared_model import ReferencePreparedModel
from nnvts.drivers.reference.scheduler import PriorityScheduler
from vts import __version__
from vts.hal.checked import CheckedDevice
from vts.hal.enums import (
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    OperandLifeTime,
    OperandType,
    Priority,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import Buffer, CacheFiles, PreparedModel
from vts.hal.operations import beyond_hal_rule_broken, operation_name
from vts.hal.types import (
    BufferDesc,
    BufferRole,
    Capabilities,
    Extension,
    Model,
    OperandPerformance,
    Operation,
    PerformanceInfo,
    Subgraph,
)

DEVICE_NAME = "nnvts-reference"


def _capabilities() -> Capabilities:
    """Parity with the CPU everywhere: this *is* the CPU reference.

    The HAL expresses performance relative to the CPU (1.0 = same), so an
    honest CPU reference declares 1.0; ``nnvts bench`` checks it.
    """
    parity = PerformanceInfo(1.0, 1.0)
    table = tuple(
        OperandPerformance(int(t), parity)
        for t in sorted(OperandType)
        if t not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
    )
    return Capabilities(parity, parity, table, parity, parity)


class ReferenceDevice(CheckedDevice):
    """The reference device.

    ``memory_budget`` (bytes; default from ``NNVTS_REFERENCE_MEMORY_BUDGET``,
    else unlimited) makes the device answer RESOURCE_EXHAUSTED_PERSISTENT to
    a model whose constants exceed it, and RESOURCE_EXHAUSTED_TRANSIENT to a
    request whose pools do, so vendors can see those statuses handled.
    """

    name = DEVICE_NAME
    #: It implements every operation up to AIDL v4 (feature level 8) and speaks AIDL v4 unless told otherwise
    #: (``create_device(hal=...)``).
    hal_version = HalVersion.FL8
    #: nnvts extension: asynchronous executions are queued by priority (the priority family measures it).
    priority_scheduling = True

    def __init__(self, memory_budget: int | None = None, pool_kinds: Iterable[str] | None = None) -> None:
        if memory_budget is None and os.environ.get("NNVTS_REFERENCE_MEMORY_BUDGET"):
            memory_budget = int(os.environ["NNVTS_REFERENCE_MEMORY_BUDGET"])
        self.memory_budget = memory_budget
        self.memory = DeviceMemory(pool_kinds)
        self._scheduler: PriorityScheduler | None = None
        self.cache = CompilationCache(self.get_version_string())

    @property
    def scheduler(self) -> PriorityScheduler:
        if self._scheduler is None:
            self._scheduler = PriorityScheduler()
        return self._scheduler

    def get_type(self) -> DeviceType:
        return DeviceType.CPU

    def get_version_string(self) -> str:
        return f"nnvts-reference/{__version__}"

    def get_capabilities(self) -> Capabilities:
        return _capabilities()

    def get_supported_extensions(self) -> list[Extension]:
        return supported_extensions()

    def check_model(self, model: Model) -> None:
        """ValidateHal's driver-mode rules (``vts.hal.checked``), then the extensions' own.

        NeuralNetworks.h rules that ValidateHal leaves to the executor (a
        CONV_2D input of rank 3) do not make a model invalid: ``_supported``
        reports such an operation unsupported, and preparation refuses it.
        """
        super().check_model(model)
        ModelExtensions(model).validate(model)

    def unsupported_reasons(self, model: Model) -> list[str | None]:
        return [None if supported else f"{operation_name(op.type)}: not supported by this device"
                for op, supported in zip(model.main.operations, self._supported(model), strict=True)]

    def _supported(self, model: Model) -> list[bool]:
        """One flag per main-subgraph operation, for a model already validated.

        IF and WHILE count as supported only when every operation of the
        subgraphs they reference (recursively) is: the HAL's rule for
        ``getSupportedOperations_1_3``.
        """
        registry = operations()
        extensions = ModelExtensions(model)
        graphs = [model.main, *model.referenced]
        memo: dict[int, bool] = {}

        def operation_supported(graph: Subgraph, op: Operation) -> bool:
            op_def = registry.get(op.type)
            if op_def is None:
                return extensions.supports(op)
            inputs = [graph.operands[i] for i in op.inputs]
            outputs = [graph.operands[i] for i in op.outputs]
            if not op_def.supports(inputs, outputs) or \
                    beyond_hal_rule_broken(op.type, inputs, outputs, model.referenced) is not None:
                return False
            return all(subgraph_supported(o.location.offset) for o in inputs
                       if o.lifetime == OperandLifeTime.SUBGRAPH)

        def subgraph_supported(index: int) -> bool:
            if index not in memo:
                memo[index] = False  # validation already refused reference cycles
                graph = graphs[index + 1]
                memo[index] = all(operation_supported(graph, op) for op in graph.operations)
            return memo[index]

        return [operation_supported(model.main, op) for op in model.main.operations]

    def prepare_checked(self, model: Model, priority: Priority, deadline: int | None, model_cache: CacheFiles,
                        data_cache: CacheFiles, token: bytes) -> PreparedModel:
        """After the HAL preamble (``vts.hal.checked``): the memory budget, then compile and cache."""
        if self.memory_budget is not None:
            constants = len(model.operand_values) + sum(p.size for p in model.pools)
            if constants > self.memory_budget:
                raise DriverError(ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
                                  f"model constants of {constants} bytes exceed the memory budget "
                                  f"of {self.memory_budget}")
        prepared = ReferencePreparedModel(model.copy(), priority, self.scheduler, self.memory_budget, self.memory)
        self.cache.save(model, model_cache, data_cache, token)  # best effort: never changes the result
        return prepared

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return self.cache.counts()

    def prepare_model_from_cache(self, deadline: int | None, model_cache: CacheFiles, data_cache: CacheFiles,
                                 token: bytes) -> PreparedModel:
        """Restore a model saved by ``prepare_model`` (nnvts/drivers/reference/caching.py has the rules)."""
        model, _ = self.cache.load(model_cache, data_cache, token)
        try:
            return self.prepare_model(model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, deadline)
        except DriverError as error:
            if error.status == ErrorStatus.INVALID_ARGUMENT:  # a verified cache of ours is valid: treat as corrupt
                raise DriverError(ErrorStatus.GENERAL_FAILURE, f"cached model refused: {error.message}") from None
            raise
        finally:
            for pool in model.pools:  # the prepared model decoded its constants; the pools are no longer needed
                pool.close()

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[PreparedModel],
                 input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]) -> tuple[Buffer, int]:
        """Memory domains as the sample driver has them, plus dynamic shapes (``memory_domain``)."""
        return self.memory.allocate(desc, prepared_models, input_roles, output_roles)


def create_device(argv: Sequence[str] = (), hal: str = "aidl-v4") -> ReferenceDevice:
    """Entry point of the ``nnvts.drivers`` group.

    ``hal`` (``--driver-option hal=1.3``): the interface the reference speaks, AIDL v4 unless told: ``1.0`` to
    ``1.3`` (HIDL), ``aidl-v1`` to ``aidl-v4``, or ``FL5`` to ``FL8``.  Under an older version it refuses what
    that version lacks (newer operations, and the version's validation rules), so both rule sets are checked.
    """
    try:
        version = HalVersion.from_text(hal)
    except ValueError:
        raise ValueError(f"hal={hal!r}: not an interface version (1.0 to 1.3, aidl-v1 to aidl-v4, FL5 to FL8)") \
            from None
    device = ReferenceDevice()
    device.hal_version = version
    return device
