"""The capabilities_bench family (opt-in): declared execTime must be near the measured speed.

Runs ``vts.families.capabilities_bench.measure`` at a small size (MobileNet v1 at 96x96) on
the driver and on the bundled reference driver -- the CPU the HAL's figures
are relative to -- and fails a driver whose declared float32 (or quant8)
``execTime`` is off from the measured ratio by more than ``factor``.
Timing-based, so it is not a default family: ``nnvts run --family
capabilities_bench``.  A driver that cannot run the workload is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.capabilities_bench.measure import DEFAULT_FACTOR, Workload, measure, workloads
from vts.families.registry import register_family
from vts.hal.interfaces import Device
from vts.ipc.drivers import DriverRef

SIZE = 96
RUNS = 10
TESTS = {"float32_exec_time": "mobilenet_v1_float32", "quant8_exec_time": "mobilenet_v1_quant8"}


def _workload(label: str) -> Workload:
    return next(w for w in workloads(SIZE) if w.label == label)


@register_family
class CapabilitiesBenchFamily(Family):
    name = "capabilities_bench"
    description = "declared float32/quant8 execTime within a factor of the speed measured against the CPU reference"
    default = False

    def __init__(self, factor: float = DEFAULT_FACTOR, runs: int = RUNS) -> None:
        self.factor = factor
        self.runs = runs

    def device_cases(self) -> Iterator[Case]:
        for test, label in TESTS.items():
            yield Case(f"{self.name}/{test}", self.name, config={"workload": label, "factor": self.factor})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        reference = DriverRef("reference").load()  # found like any driver: the families never import one
        result = measure(device, reference, _workload(case.config["workload"]), self.runs)
        extra = {"driver_ms": result.driver_ms, "reference_ms": result.reference_ms, "measured": result.measured,
                 "declared": result.declared}
        if result.measured is None:
            return skipped(result.describe())
        factor = case.config["factor"]
        if result.flagged(factor):
            return failed(f"declared execTime is off by more than {factor:g}x: {result.describe()}", **extra)
        return passed(result.describe(), **extra)
