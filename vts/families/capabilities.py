"""The capabilities family: the HAL 1.3 rules for ``getCapabilities`` (GetCapabilitiesTest, BasicTests.cpp).

The runtime picks a device per operation by comparing these figures
(execTime and powerUsage relative to the CPU, lower is better), so a
figure that is zero, negative or NaN breaks that choice, an unsorted table
breaks its binary search, and a SUBGRAPH entry is meaningless (control flow
has its own ``ifPerformance``/``whilePerformance``).

Beyond the suite: every fundamental operand type except SUBGRAPH must have
an entry (a missing type counts as FLT_MAX, "never use this device", which
is rarely what a driver means; Android's sample driver fills them all).  The
deprecated OEM types may be left out.  Whether the declared figures match
the device's real speed is the opt-in ``capabilities_bench`` family.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed
from vts.families.registry import register_family
from vts.hal.enums import OperandType, OperandTypeRange, enum_name
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.hal.types import Capabilities, PerformanceInfo

#: Fundamental operand types a 1.3 capabilities table must list (SUBGRAPH excluded; OEM optional).
REQUIRED_TYPES = tuple(t for t in OperandType if t <= OperandTypeRange.FUNDAMENTAL_MAX and t != OperandType.SUBGRAPH)


def _positive(info: object) -> bool:
    """The suite's "positive": execTime > 0 and powerUsage > 0 (NaN fails)."""
    if not isinstance(info, PerformanceInfo):
        return False
    return all(isinstance(v, int | float) and not math.isnan(v) and v > 0 for v in (info.exec_time, info.power_usage))


def _describe(info: object) -> str:
    if isinstance(info, PerformanceInfo):
        return f"execTime {info.exec_time!r}, powerUsage {info.power_usage!r}"
    return repr(info)


def figures_problems(caps: Capabilities) -> list[str]:
    named = [("relaxedFloat32toFloat16PerformanceScalar", caps.relaxed_float32_to_float16_performance_scalar),
             ("relaxedFloat32toFloat16PerformanceTensor", caps.relaxed_float32_to_float16_performance_tensor),
             ("ifPerformance", caps.if_performance), ("whilePerformance", caps.while_performance)]
    named += [(f"operandPerformance[{enum_name(OperandType, e.type)}]", e.info) for e in caps.operand_performance]
    return [f"{label} is not positive ({_describe(info)})" for label, info in named if not _positive(info)]


def order_problems(caps: Capabilities) -> list[str]:
    types = [e.type for e in caps.operand_performance]
    return [f"operandPerformance is not sorted by type: {enum_name(OperandType, a)} before {enum_name(OperandType, b)}"
            for a, b in itertools.pairwise(types) if b < a]


def subgraph_problems(caps: Capabilities) -> list[str]:
    if any(e.type == OperandType.SUBGRAPH for e in caps.operand_performance):
        return ["operandPerformance has an entry for SUBGRAPH (HAL 1.3 forbids it; use if/whilePerformance)"]
    return []


def coverage_problems(caps: Capabilities) -> list[str]:
    listed = {e.type for e in caps.operand_performance}
    missing = [t.name for t in REQUIRED_TYPES if t not in listed]
    if missing:
        return [f"operandPerformance has no entry for {', '.join(missing)} (a missing type counts as FLT_MAX)"]
    return []


RULES = {
    "figures_positive": figures_problems,
    "operand_performance_sorted": order_problems,
    "no_subgraph_entry": subgraph_problems,
    "every_operand_type_listed": coverage_problems,
}


@register_family
class CapabilitiesFamily(Family):
    name = "capabilities"
    description = "getCapabilities: positive figures, sorted table without SUBGRAPH, every operand type listed"

    def device_cases(self) -> Iterator[Case]:
        for rule in RULES:
            yield Case(f"{self.name}/{rule}", self.name, config={"rule": rule})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        try:
            caps = device.get_capabilities()
        except DriverError as error:
            return failed(f"get_capabilities returned {error.status.name}, expected NONE")
        if not isinstance(caps, Capabilities):
            return failed(f"get_capabilities returned {type(caps).__name__}, expected Capabilities")
        problems = RULES[case.config["rule"]](caps)
        if problems:  # the reason names every problem: a vendor fixes four bad figures at once, not one a run
            reason = problems[0] if len(problems) == 1 else f"{len(problems)} problems: {'; '.join(problems)}"
            return failed(reason, tuple(problems))
        return passed(f"{len(caps.operand_performance)} operand types")
