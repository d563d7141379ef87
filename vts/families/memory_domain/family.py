"""The memory_domain family: driver-allocated buffers and non-default shared memory (HAL 1.3).

Two kinds of cases (VTS GeneratedTestHarness.cpp MemoryDomainTest and MemoryDomainTests.cpp):

* device-level, named ``memory_domain/<Suite>.<Test>.<TYPE>[.<executor>]``:
  VTS's MemoryDomainAllocateTest (15 tests), MemoryDomainCopyTest (7) and
  MemoryDomainExecutionTest (7, on HIDL VTS's async, sync and fenced, or AIDL VTS's sync, burst
  (driver buffers at token -1) and fenced, the other interface's path skipped; InvalidDimensions
  not on fenced) for TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM and
  TENSOR_QUANT8_ASYMM_SIGNED, on the suite's conv and add models built by
  ``vts.model.builtin.memory_models``.  ConflictScale and ConflictZeroPoint exist
  for the quantized types only (VTS runs them as empty tests on floats, so
  nnvts does not list them).  nnvts adds Execution.ReleasedToken;
* model-driven, named ``memory_domain/SPEC.MODEL[.EXAMPLE]``: every example
  of every model that is not ``expect_failure``, executed with request pools
  in ``hardware_buffer_blob`` memory and with driver-allocated buffers for
  every input and output, on the paths of the driver's interface (HIDL:
  async, sync, fenced; AIDL: sync, burst with driver buffers among its
  pools, fenced; ``vts.families._kit.device_memory_runs``).

A driver without memory domains answers GENERAL_FAILURE to ``allocate``:
its buffer tests are skipped and its model cases run the blob configuration
only, as in VTS.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families._kit.device_memory_runs import BURST, run_model_case
from vts.families._kit.executions import Executor
from vts.families.base import Case, DeviceInfo, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.memory_domain.allocate_checks import ALLOCATE_TESTS, COPY_TESTS, MemoryTest
from vts.families.memory_domain.context import MemoryContext, Unsupported
from vts.families.memory_domain.execution_checks import EXECUTION_TESTS
from vts.families.registry import register_family
from vts.hal.enums import HalVersion, OperandType
from vts.hal.interfaces import Device, spoken_version
from vts.model.builtin.memory_models import TEST_TYPES, OperandSpec, is_quantized
from vts.model.casemodel import CaseModel

#: The execution tests' paths: HIDL 1.3 VTS's (async, sync, fenced), then AIDL VTS's burst (driver buffers at
#: token -1).  Each interface runs its own VTS's three (``path_lacking``); the other's is skipped, named.
EXECUTORS: tuple[Executor | str, ...] = (Executor.ASYNC, Executor.SYNC, Executor.FENCED, BURST)


def path_lacking(executor: Executor | str | None, device: object) -> str | None:
    """Why ``device``'s interface has no such execution-test path (the skip reason), or None when it has."""
    aidl = spoken_version(device).is_aidl
    if executor is Executor.ASYNC and aidl:
        return "not a path of AIDL's MemoryDomainExecutionTest: AIDL has no asynchronous execute"
    if executor == BURST and not aidl:
        return ("not a path of HIDL 1.3's MemoryDomainExecutionTest: a HIDL burst request is a HAL 1.0 request, "
                "without driver buffers")
    return None
_SUITES: dict[str, dict[str, MemoryTest]] = {
    "Allocate": {name: test for name, (test, _) in ALLOCATE_TESTS.items()},
    "Copy": COPY_TESTS,
    "Execution": {name: test for name, (test, _) in EXECUTION_TESTS.items()},
}


def device_case_names() -> Iterator[tuple[str, str, OperandType, Executor | str | None]]:
    """(suite, test, type, executor) of every device-level case, in a stable order."""
    for operand_type in TEST_TYPES:
        for test, (_, quant_only) in ALLOCATE_TESTS.items():
            if not quant_only or is_quantized(operand_type):
                yield "Allocate", test, operand_type, None
        for test in COPY_TESTS:
            yield "Copy", test, operand_type, None
        for test, (_, fenced) in EXECUTION_TESTS.items():
            for executor in EXECUTORS:
                if fenced or executor is not Executor.FENCED:
                    yield "Execution", test, operand_type, executor


@register_family
class MemoryDomainFamily(Family):
    name = "memory_domain"
    description = ("driver-allocated buffers (allocate, copy_to/copy_from, tokens in requests) and executions with "
                   "hardware_buffer_blob pools and with device memory for every input and output")

    def applicable(self, device: DeviceInfo) -> bool:
        return device.hal_version >= HalVersion.V1_3

    def device_cases(self) -> Iterator[Case]:
        for suite, test, operand_type, executor in device_case_names():
            name = f"{self.name}/{suite}.{test}.{operand_type.name}"
            if executor is not None:
                name += f".{executor.value if isinstance(executor, Executor) else executor}"
            yield Case(name, self.name, None, None, "",
                       {"suite": suite, "test": test, "type": operand_type, "executor": executor})

    def model_cases(self, model: CaseModel, spec_path: str) -> Iterator[Case]:
        if model.expect_failure:
            return
        for index, example in enumerate(model.examples):
            yield Case(f"{self.name}/{model.case_name(example)}", self.name, model, index, spec_path,
                       {"suite": "model"})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        if case.config["suite"] == "model":
            return run_model_case(case, device, options)
        lacking = path_lacking(case.config["executor"], device)
        if lacking is not None:
            return skipped(lacking)
        test = _SUITES[case.config["suite"]][case.config["test"]]
        context = MemoryContext(device, OperandSpec(case.config["type"]), case.config["executor"], options)
        try:
            test(context)
        except Unsupported as why:
            if not context.problems:
                return skipped(str(why))
        finally:
            context.close()
        if context.problems:
            return failed(context.problems[0], tuple(context.problems))
        return passed()
