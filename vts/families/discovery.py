"""The discovery family: what a device says about itself (the suite's basic tests, VTS BasicTests.cpp).

One device-level case per question the NNAPI runtime asks before it uses a
device: its name, type, status, version string, extensions and cache file
counts, plus the CycleTest (a model whose operations depend on each other in
a loop must be refused by ``getSupportedOperations`` and ``prepareModel``).

Beyond the suite: ``version_string_is_versioned`` requires the version string
to name a version (at least one digit).  The NNAPI runtime folds the device
name and version string into every compilation-cache token, so a string that
does not change with the driver (the sample driver's "JUST_AN_EXAMPLE") lets a
cache written by an old driver be handed to the new one.  ``nnvts info
--expect-version`` pins the exact version in CI.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed
from vts.families.registry import register_family
from vts.hal.enums import (
    MAX_NUMBER_OF_CACHE_FILES,
    DeviceStatus,
    DeviceType,
    ErrorStatus,
    HalVersion,
    OperandLifeTime,
    OperandType,
    OperationType,
    enum_name,
)
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.hal.types import Extension
from vts.model.casemodel import CaseModel, CaseOperand, CaseOperation, CaseSubgraph, close_model, to_hal_model

EXTENSION_NAME = re.compile(r"[a-z0-9_.]+")
VERSION_LIKE = re.compile(r"\d")


class _Refused(Exception):
    """A device query answered with an error status (the suite asserts NONE)."""


def ask(what: str, call: Callable[[], Any]) -> Any:
    """Call a device query; a DriverError becomes a readable failure (every query must answer NONE)."""
    try:
        return call()
    except DriverError as error:
        raise _Refused(f"{what} returned {error.status.name}" + (f": {error.message}" if error.message else "")) \
            from None


def name_problems(name: object) -> list[str]:
    """GetDeviceNameTest: ``{vendor}-{device}``, exactly one '-', neither first nor last."""
    if not isinstance(name, str) or not name:
        return [f"device name {name!r} is not a non-empty string"]
    if name.count("-") != 1 or name.startswith("-") or name.endswith("-"):
        return [f"device name {name!r} must be {{vendor}}-{{device}}: exactly one '-', not first or last"]
    return []


def extension_problems(extensions: object) -> list[str]:
    """GetDeviceSupportedExtensionsTest, plus sane operand type information (nnvts)."""
    if not isinstance(extensions, list | tuple):
        return [f"get_supported_extensions returned {type(extensions).__name__}, expected a list"]
    problems: list[str] = []
    names: set[str] = set()
    for i, ext in enumerate(extensions):
        if not isinstance(ext, Extension):
            problems.append(f"extension {i} is {type(ext).__name__}, expected an Extension")
            continue
        name = ext.name
        if not isinstance(name, str) or not name or not EXTENSION_NAME.fullmatch(name) or "." not in name:
            problems.append(f"extension name {name!r} must be non-empty, use only [a-z0-9_.] and contain a '.' "
                            "(reverse domain name)")
        if name in names:
            problems.append(f"extension {name!r} declared twice")
        names.add(name)
        ids: set[int] = set()
        for j, info in enumerate(ext.operand_types):
            where = f"extension {name!r} operand type {j}"
            type_id = getattr(info, "type", None)
            if not isinstance(type_id, int) or isinstance(type_id, bool) or not 0 <= type_id <= 0xFFFF:
                problems.append(f"{where}: type {type_id!r} is not a uint16")
            elif type_id in ids:
                problems.append(f"{where}: type {type_id} declared twice")
            else:
                ids.add(type_id)
            if not isinstance(getattr(info, "is_tensor", None), bool):
                problems.append(f"{where}: is_tensor {getattr(info, 'is_tensor', None)!r} is not a bool")
            size = getattr(info, "byte_size", None)
            if not isinstance(size, int) or isinstance(size, bool) or not 0 < size < 1 << 32:
                problems.append(f"{where}: byte_size {size!r} must be a positive uint32")
    return problems


def cycle_model() -> CaseModel:
    """The suite's CycleTest graph: t3 = ADD(in0, t4), t4 = ADD(in1, t3), out = ADD(t4, in0)."""
    f32, life = int(OperandType.TENSOR_FLOAT32), OperandLifeTime
    operands = (
        CaseOperand("in0", f32, (1,), life.SUBGRAPH_INPUT),
        CaseOperand("in1", f32, (1,), life.SUBGRAPH_INPUT),
        CaseOperand("act", int(OperandType.INT32), (), life.CONSTANT_COPY, value=np.array([0], np.int32)),
        CaseOperand("t3", f32, (1,), life.TEMPORARY_VARIABLE),
        CaseOperand("t4", f32, (1,), life.TEMPORARY_VARIABLE),
        CaseOperand("out", f32, (1,), life.SUBGRAPH_OUTPUT),
    )
    add = int(OperationType.ADD)
    operations = (CaseOperation(add, (0, 4, 2), (3,)), CaseOperation(add, (1, 3, 2), (4,)),
                  CaseOperation(add, (4, 0, 2), (5,)))
    main = CaseSubgraph(operands, operations, (0, 1), (5,))
    return CaseModel("synthetic", "cycle", HalVersion.V1_0, main, (), ())


@register_family
class DiscoveryFamily(Family):
    name = "discovery"
    description = "device name, type, status, version, extensions, cache counts; cyclic models refused"

    TESTS = ("device_name", "device_type", "device_status", "version_string", "version_string_is_versioned",
             "supported_extensions", "cache_files_needed", "cycle_get_supported_operations",
             "cycle_prepare_model")

    def device_cases(self) -> Iterator[Case]:
        for test in self.TESTS:
            yield Case(f"{self.name}/{test}", self.name, config={"test": test})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        try:
            return getattr(self, "_" + case.config["test"])(device)
        except _Refused as refused:
            return failed(str(refused))

    def _device_name(self, device: Device) -> Outcome:
        name = getattr(device, "name", None)
        problems = name_problems(name)
        return failed(problems[0]) if problems else passed(name)

    def _device_type(self, device: Device) -> Outcome:
        value = ask("get_type", device.get_type)
        if not isinstance(value, int) or isinstance(value, bool) or value not in DeviceType._value2member_map_:
            return failed(f"get_type returned {value!r}; the HAL allows only OTHER (1), CPU (2), GPU (3) and "
                          "ACCELERATOR (4)")
        return passed(DeviceType(value).name)

    def _device_status(self, device: Device) -> Outcome:
        status = ask("get_status", device.get_status)
        if status != DeviceStatus.AVAILABLE:
            return failed(f"get_status returned {enum_name(DeviceStatus, status)}, expected AVAILABLE")
        return passed("AVAILABLE")

    def _version_string(self, device: Device) -> Outcome:
        version = ask("get_version_string", device.get_version_string)
        if not isinstance(version, str) or not version:
            return failed(f"get_version_string returned {version!r}, expected a non-empty string")
        return passed(version)

    def _version_string_is_versioned(self, device: Device) -> Outcome:
        version = ask("get_version_string", device.get_version_string)
        if not isinstance(version, str) or not VERSION_LIKE.search(version):
            return failed(f"version string {version!r} names no version (no digit): the runtime keys compilation "
                          "caches by device name and version string, so it must change with the driver")
        return passed(version)

    def _supported_extensions(self, device: Device) -> Outcome:
        extensions = ask("get_supported_extensions", device.get_supported_extensions)
        problems = extension_problems(extensions)
        if problems:
            return failed(problems[0], tuple(problems))
        return passed(", ".join(e.name for e in extensions) or "no extensions")

    def _cache_files_needed(self, device: Device) -> Outcome:
        counts = ask("get_number_of_cache_files_needed", device.get_number_of_cache_files_needed)
        if not isinstance(counts, tuple | list) or len(counts) != 2:
            return failed(f"get_number_of_cache_files_needed returned {counts!r}, expected (model, data)")
        for label, count in zip(("model", "data"), counts, strict=True):
            if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_NUMBER_OF_CACHE_FILES:
                return failed(f"{label} cache file count {count!r} must be an integer in [0, "
                              f"{MAX_NUMBER_OF_CACHE_FILES}]")
        return passed(f"model {counts[0]}, data {counts[1]}")

    def _cycle_get_supported_operations(self, device: Device) -> Outcome:
        """CycleTest: a cyclic graph is invalid, so the support query must answer INVALID_ARGUMENT."""
        model = to_hal_model(cycle_model())
        try:
            flags = device.get_supported_operations(model)
        except DriverError as error:
            if error.status == ErrorStatus.INVALID_ARGUMENT:
                return passed("INVALID_ARGUMENT")
            return failed(f"get_supported_operations on a cyclic model returned {error.status.name}, "
                          "expected INVALID_ARGUMENT")
        finally:
            close_model(model)
        return failed(f"get_supported_operations accepted a model whose operations form a cycle (flags {flags})")

    def _cycle_prepare_model(self, device: Device) -> Outcome:
        model = to_hal_model(cycle_model())
        try:
            prepared = device.prepare_model(model)
        except DriverError as error:
            return passed(error.status.name)
        finally:
            close_model(model)
        return failed(f"prepare_model prepared a model whose operations form a cycle ({type(prepared).__name__})")
