"""Declared versus measured speed: does a driver's ``getCapabilities`` tell the truth?

``PerformanceInfo.execTime`` is the device's time relative to the CPU (1.0 =
parity, lower is faster; NN HAL 1.0 types.hal ``PerformanceInfo``), and the NNAPI runtime picks a
device per operation from it.  A driver that claims to be ten times faster
than it is steals work it then runs slowly.  The suite only checks that the
figures are positive; nnvts measures them: it runs reference workloads --
MobileNet v1 in float32 and in uint8 (``vts.model.builtin.mobilenet``) -- on the
driver and on the bundled reference driver (nnvts's CPU), and compares the
measured time ratio with the declared float32 / quant8 ``execTime``.

The comparison is deliberately coarse: the reference is a numpy interpreter,
not the vendor's CPU path, so only a figure off by more than ``factor``
(default 5) in either direction is flagged.

The two drivers run alternately, one synchronous execution each, after a
warm-up round, for at least ``runs`` pairs and ``min_seconds``; the measured ratio is the median over those pairs of
``driver time / reference time``.  Two executions taken back to back see
the same machine load, so their ratio stays put on a busy machine where
separate means, medians or minima drift by 2x or more (measured on a
2-core host at load 10: per-pair median 0.85..1.13 for the reference
against itself, best-of-10 0.37..1.85).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vts.families._kit.executions import Executor, create_prepared_model, execute
from vts.hal.enums import OperandType
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel
from vts.model.builtin.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8
from vts.model.casemodel import BuiltRequest, CaseModel, build_request, close_model, to_hal_model

DEFAULT_FACTOR = 5.0
DEFAULT_SIZE = 224
DEFAULT_RUNS = 10
#: Keep taking pairs until this much time has passed: small models get many pairs, big ones ``runs``.
DEFAULT_MIN_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Workload:
    """A model and the operand type whose declared performance it measures."""

    label: str
    operand_type: OperandType
    build: Callable[[], CaseModel]


def workloads(size: int = DEFAULT_SIZE, alpha: float = 1.0) -> tuple[Workload, ...]:
    return (
        Workload("mobilenet_v1_float32", OperandType.TENSOR_FLOAT32,
                 lambda: build_mobilenet_v1_float(size, alpha=alpha)),
        Workload("mobilenet_v1_quant8", OperandType.TENSOR_QUANT8_ASYMM,
                 lambda: build_mobilenet_v1_quant8(size, alpha=alpha)),
    )


@dataclass(frozen=True, slots=True)
class Measurement:
    workload: str
    operand_type: str
    declared: float  # execTime the driver declares for the operand type
    driver_ms: float | None = None  # median; None when the driver could not run the workload
    reference_ms: float | None = None
    measured: float | None = None  # median of per-pair time ratios: what ``declared`` claims to be
    note: str = ""

    @property
    def off_by(self) -> float | None:
        """How far the declared figure is from the measured one, as a factor >= 1."""
        measured = self.measured
        if measured is None or not self.declared > 0 or not measured > 0:
            return None
        return max(measured / self.declared, self.declared / measured)

    def flagged(self, factor: float) -> bool:
        off = self.off_by
        return off is not None and off > factor

    def describe(self) -> str:
        if self.measured is None:
            return f"{self.workload}: not measured ({self.note})"
        return (f"{self.workload}: measured {self.measured:.3g}x the reference CPU ({self.driver_ms:.1f} ms vs "
                f"{self.reference_ms:.1f} ms), declared execTime {self.declared:g}: off by {self.off_by:.2f}x")


class _Prepared:
    """One model prepared on one device, with its request, released by ``close``."""

    def __init__(self, device: Device, model: CaseModel) -> None:
        hal_model = to_hal_model(model)
        try:
            preparation = create_prepared_model(device, hal_model)
        finally:
            close_model(hal_model)
        if preparation.prepared is None:
            raise DriverError(preparation.error.status if preparation.error else 2, "model not supported")
        self.prepared: PreparedModel = preparation.prepared
        self.built: BuiltRequest = build_request(model, model.examples[0])

    def run_once(self) -> float:
        start = time.perf_counter()
        answer = execute(self.prepared, self.built.request, Executor.SYNC)
        elapsed = time.perf_counter() - start
        if not answer.ok:
            raise DriverError(answer.status, answer.message or "execution failed")
        return elapsed

    def close(self) -> None:
        self.built.close()


def measure(device: Device, reference: Device, workload: Workload, runs: int = DEFAULT_RUNS,
            min_seconds: float = DEFAULT_MIN_SECONDS) -> Measurement:
    """Time ``workload`` on ``device`` and on ``reference`` in alternating pairs (see the module docstring)."""
    declared = device.get_capabilities().performance_of(workload.operand_type).exec_time
    model = workload.build()
    name = workload.operand_type.name
    try:
        ours = _Prepared(reference, model)
    except DriverError as error:
        return Measurement(workload.label, name, declared, note=f"the reference cannot run it: {error}")
    try:
        try:
            theirs = _Prepared(device, model)
        except DriverError as error:
            return Measurement(workload.label, name, declared, note=f"driver: {error.status.name} ({error.message})")
        try:
            driver_times, reference_times = [], []
            stop = time.perf_counter() + min_seconds
            index = -1
            while index < runs or time.perf_counter() < stop:  # round 0 warms both up and is discarded
                index += 1
                if index % 2:  # alternate which side goes first, so neither always inherits the other's caches
                    t_reference, t_driver = ours.run_once(), theirs.run_once()
                else:
                    t_driver, t_reference = theirs.run_once(), ours.run_once()
                if index:
                    driver_times.append(t_driver)
                    reference_times.append(t_reference)
        except DriverError as error:
            return Measurement(workload.label, name, declared, note=f"execution failed: {error.status.name}")
        finally:
            theirs.close()
    finally:
        ours.close()
    ratios = [d / r for d, r in zip(driver_times, reference_times, strict=True) if r > 0]
    return Measurement(workload.label, name, declared, 1000 * statistics.median(driver_times),
                       1000 * statistics.median(reference_times), statistics.median(ratios) if ratios else None)


def run_bench(device: Device, reference: Device, size: int = DEFAULT_SIZE, alpha: float = 1.0,
              runs: int = DEFAULT_RUNS, only: Sequence[OperandType] = (),
              min_seconds: float = DEFAULT_MIN_SECONDS) -> list[Measurement]:
    return [measure(device, reference, w, runs, min_seconds) for w in workloads(size, alpha)
            if not only or w.operand_type in only]


def print_report(measurements: Sequence[Measurement], factor: float, driver: str, size: int = DEFAULT_SIZE) -> None:
    from rich.table import Table

    from vts.report.logconsole import LogConsole

    table = Table(title=f"nnvts bench: {driver} vs the reference CPU, MobileNet v1 {size}x{size}\n"
                        f"(flagged: declared execTime off from the measured ratio by more than {factor:g}x)")
    for column in ("model", "driver ms", "reference ms", "measured", "declared", "off by", ""):
        table.add_column(column)
    for m in measurements:
        label = m.workload.removeprefix("mobilenet_v1_")
        if m.measured is None:
            table.add_row(label, "-", "-", "-", f"{m.declared:g}", "-", f"[yellow]{m.note}[/]")
            continue
        verdict = "[red]FLAGGED[/]" if m.flagged(factor) else "[green]ok[/]"
        table.add_row(label, f"{m.driver_ms:.1f}", f"{m.reference_ms:.1f}", f"{m.measured:.3g}",
                      f"{m.declared:g}", f"{m.off_by:.2f}x", verdict)
    LogConsole().print(table)  # off a terminal, at its own width
