"""The NN HAL 1.3 contract in Python: enums, structures, interfaces, errors, validation.

This package is the one place the HAL contract lives; drivers, families and
the runner import it, never the other way round.  ``__all__`` names what
the other packages (drivers included) use of it; each name loads from its
module on first use, since the enums pull in numpy and ``nnvts --help``
must not pay for that.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vts.hal.cache_files import CacheRejected, ModelCache
    from vts.hal.checked import CheckedDevice, CheckedPreparedModel, DeviceTimer, check_model, deadline_passed
    from vts.hal.enums import (
        BYTE_SIZE_OF_CACHE_TOKEN,
        ELEMENT_SIZE,
        EXTENSION_TYPE_HIGH_BITS_PREFIX,
        EXTENSION_TYPE_LOW_BITS_TYPE,
        LOOP_TIMEOUT_DEFAULT_NS,
        MAX_NUMBER_OF_CACHE_FILES,
        MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES,
        NO_TIMING,
        NUMPY_DTYPE,
        OPERAND_TYPE_HAL_VERSION,
        SCALAR_TYPES,
        DeviceStatus,
        DeviceType,
        ErrorStatus,
        ExecutionPreference,
        FusedActivationFunc,
        HalVersion,
        MeasureTiming,
        OperandLifeTime,
        OperandType,
        OperandTypeRange,
        OperationType,
        OperationTypeRange,
        PaddingScheme,
        Priority,
        enum_name,
        is_extension_type,
        is_scalar_type,
    )
    from vts.hal.errors import DriverError
    from vts.hal.fixedpoint import (
        INT32_MAX,
        INT32_MIN,
        quantize_multiplier,
        rounding_divide_by_pot,
        saturating_rounding_doubling_high_mul,
    )
    from vts.hal.interfaces import (
        MAX_BURST_SLOT,
        Buffer,
        Burst,
        CacheFiles,
        CompletedFencedCallback,
        Device,
        FencedExecutionCallback,
        PreparedModel,
        SyncFence,
        wait_for_fences,
    )
    from vts.hal.memory import (
        ASHMEM,
        HARDWARE_BUFFER_BLOB,
        MMAP_FD,
        POOL_KINDS,
        Memory,
        PoolTruncated,
        allocate,
        from_fd,
        unmapped,
    )
    from vts.hal.memory_desc import BufferOperand, Dims, Role, combine_dims, fully_specified, validate_memory_desc
    from vts.hal.operations import (
        SPECS,
        OpContext,
        OpSpec,
        Signature,
        beyond_hal_rule_broken,
        operation_min_hal_version,
        operation_name,
        run_spec,
        validate_operation,
    )
    from vts.hal.types import (
        NO_TIMING_INFO,
        BufferDesc,
        BufferRole,
        Capabilities,
        DataLocation,
        ExecutionResult,
        Extension,
        ExtensionNameAndPrefix,
        MemoryToken,
        Model,
        Operand,
        OperandPerformance,
        OperandTypeInformation,
        Operation,
        OutputShape,
        PerformanceInfo,
        Request,
        RequestArgument,
        Subgraph,
        SymmPerChannelQuantParams,
        Timing,
    )
    from vts.hal.validation import (
        count_consumers,
        operand_byte_size,
        validate_memory_pool_names,
        validate_model,
        validate_operand,
        validate_request,
    )
    from vts.hal.validation_error import BeyondHalRule, ValidationError

#: The public names, by the module that defines each.
_HOMES = {
    "vts.hal.cache_files": ("CacheRejected", "ModelCache"),
    "vts.hal.checked": ("CheckedDevice", "CheckedPreparedModel", "DeviceTimer", "check_model", "deadline_passed"),
    "vts.hal.enums": (
        "BYTE_SIZE_OF_CACHE_TOKEN", "DeviceStatus", "DeviceType", "ELEMENT_SIZE", "EXTENSION_TYPE_HIGH_BITS_PREFIX",
        "EXTENSION_TYPE_LOW_BITS_TYPE", "ErrorStatus", "ExecutionPreference", "FusedActivationFunc", "HalVersion",
        "LOOP_TIMEOUT_DEFAULT_NS", "MAX_NUMBER_OF_CACHE_FILES", "MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES",
        "MeasureTiming", "NO_TIMING", "NUMPY_DTYPE", "OPERAND_TYPE_HAL_VERSION", "OperandLifeTime", "OperandType",
        "OperandTypeRange", "OperationType", "OperationTypeRange", "PaddingScheme", "Priority", "SCALAR_TYPES",
        "enum_name", "is_extension_type", "is_scalar_type",
    ),
    "vts.hal.errors": ("DriverError",),
    "vts.hal.fixedpoint": (
        "INT32_MAX", "INT32_MIN", "quantize_multiplier", "rounding_divide_by_pot",
        "saturating_rounding_doubling_high_mul",
    ),
    "vts.hal.interfaces": (
        "Buffer", "Burst", "CacheFiles", "CompletedFencedCallback", "Device", "FencedExecutionCallback",
        "MAX_BURST_SLOT", "PreparedModel", "SyncFence", "wait_for_fences",
    ),
    "vts.hal.memory": (
        "ASHMEM", "HARDWARE_BUFFER_BLOB", "MMAP_FD", "Memory", "POOL_KINDS", "PoolTruncated", "allocate", "from_fd",
        "unmapped",
    ),
    "vts.hal.memory_desc": ("BufferOperand", "Dims", "Role", "combine_dims", "fully_specified", "validate_memory_desc"),
    "vts.hal.operations": (
        "OpContext", "OpSpec", "SPECS", "Signature", "beyond_hal_rule_broken", "operation_min_hal_version",
        "operation_name", "run_spec", "validate_operation",
    ),
    "vts.hal.types": (
        "BufferDesc", "BufferRole", "Capabilities", "DataLocation", "ExecutionResult", "Extension",
        "ExtensionNameAndPrefix", "MemoryToken", "Model", "NO_TIMING_INFO", "Operand", "OperandPerformance",
        "OperandTypeInformation", "Operation", "OutputShape", "PerformanceInfo", "Request", "RequestArgument",
        "Subgraph", "SymmPerChannelQuantParams", "Timing",
    ),
    "vts.hal.validation": (
        "count_consumers", "operand_byte_size", "validate_memory_pool_names", "validate_model", "validate_operand",
        "validate_request",
    ),
    "vts.hal.validation_error": ("BeyondHalRule", "ValidationError"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ASHMEM",
    "BYTE_SIZE_OF_CACHE_TOKEN",
    "ELEMENT_SIZE",
    "EXTENSION_TYPE_HIGH_BITS_PREFIX",
    "EXTENSION_TYPE_LOW_BITS_TYPE",
    "HARDWARE_BUFFER_BLOB",
    "INT32_MAX",
    "INT32_MIN",
    "LOOP_TIMEOUT_DEFAULT_NS",
    "MAX_BURST_SLOT",
    "MAX_NUMBER_OF_CACHE_FILES",
    "MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES",
    "MMAP_FD",
    "NO_TIMING",
    "NO_TIMING_INFO",
    "NUMPY_DTYPE",
    "OPERAND_TYPE_HAL_VERSION",
    "POOL_KINDS",
    "SCALAR_TYPES",
    "SPECS",
    "BeyondHalRule",
    "Buffer",
    "BufferDesc",
    "BufferOperand",
    "BufferRole",
    "Burst",
    "CacheFiles",
    "CacheRejected",
    "Capabilities",
    "CheckedDevice",
    "CheckedPreparedModel",
    "CompletedFencedCallback",
    "DataLocation",
    "Device",
    "DeviceStatus",
    "DeviceTimer",
    "DeviceType",
    "Dims",
    "DriverError",
    "ErrorStatus",
    "ExecutionPreference",
    "ExecutionResult",
    "Extension",
    "ExtensionNameAndPrefix",
    "FencedExecutionCallback",
    "FusedActivationFunc",
    "HalVersion",
    "MeasureTiming",
    "Memory",
    "MemoryToken",
    "Model",
    "ModelCache",
    "OpContext",
    "OpSpec",
    "Operand",
    "OperandLifeTime",
    "OperandPerformance",
    "OperandType",
    "OperandTypeInformation",
    "OperandTypeRange",
    "Operation",
    "OperationType",
    "OperationTypeRange",
    "OutputShape",
    "PaddingScheme",
    "PerformanceInfo",
    "PoolTruncated",
    "PreparedModel",
    "Priority",
    "Request",
    "RequestArgument",
    "Role",
    "Signature",
    "Subgraph",
    "SymmPerChannelQuantParams",
    "SyncFence",
    "Timing",
    "ValidationError",
    "allocate",
    "beyond_hal_rule_broken",
    "check_model",
    "combine_dims",
    "count_consumers",
    "deadline_passed",
    "enum_name",
    "from_fd",
    "fully_specified",
    "is_extension_type",
    "is_scalar_type",
    "operand_byte_size",
    "operation_min_hal_version",
    "operation_name",
    "quantize_multiplier",
    "rounding_divide_by_pot",
    "run_spec",
    "saturating_rounding_doubling_high_mul",
    "unmapped",
    "validate_memory_desc",
    "validate_memory_pool_names",
    "validate_model",
    "validate_operand",
    "validate_operation",
    "validate_request",
    "wait_for_fences",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
