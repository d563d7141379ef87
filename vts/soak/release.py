"""The release phase: prepare many models (and buffers), release them all, and see the memory come back.

The driver guide promises that "model-specific resources can be reclaimed"
when a prepared model is released.  The phase measures the driver
process's RSS and descriptors before, at the peak (every model prepared,
executed once, with a driver-allocated buffer where the device supports
memory domains), and after everything was dropped; the release messages
reach the driver with the next call, so the phase makes one and lets the
driver settle before measuring.  Slack is allowed for allocator arenas that
a process keeps after freeing.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vts.families import Executor, execute, prepare_for_case
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.hal.types import BufferDesc, BufferRole
from vts.model.casemodel import build_request
from vts.soak.sampler import ProcessSample, sample_process
from vts.soak.workloads import GoldenWorkload

#: Seconds the driver gets to act on the releases before the "after" sample.
SETTLE_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class ReleaseResult:
    models: int
    buffers: int
    before: ProcessSample
    peak: ProcessSample
    after: ProcessSample

    @property
    def retained_mb(self) -> float:
        return (self.after.rss_kb - self.before.rss_kb) / 1024

    @property
    def peak_mb(self) -> float:
        return (self.peak.rss_kb - self.before.rss_kb) / 1024

    @property
    def retained_fds(self) -> int:
        return self.after.fds - self.before.fds

    def problems(self, slack_mb: float, fd_slack: int) -> list[str]:
        found = []
        if self.retained_mb > slack_mb:
            found.append(f"after releasing {self.models} prepared models and {self.buffers} buffers the driver "
                         f"still holds {self.retained_mb:.1f} MB more than before (peak +{self.peak_mb:.1f} MB; "
                         f"slack {slack_mb:g} MB)")
        if self.retained_fds > fd_slack:
            found.append(f"after releasing {self.models} prepared models and {self.buffers} buffers the driver "
                         f"still has {self.retained_fds} more descriptors open than before (slack {fd_slack})")
        return found

    def as_dict(self) -> dict[str, Any]:
        return {"models": self.models, "buffers": self.buffers, "before": self.before.as_dict(),
                "peak": self.peak.as_dict(), "after": self.after.as_dict(),
                "peak_mb": round(self.peak_mb, 3), "retained_mb": round(self.retained_mb, 3),
                "retained_fds": self.retained_fds}


def _settle(device: Device) -> None:
    gc.collect()
    device.get_status()  # carries the queued releases to an out-of-process driver
    time.sleep(SETTLE_SECONDS)
    device.get_status()


def release_phase(device: Device, pid: int, workloads: Sequence[GoldenWorkload], count: int) -> ReleaseResult | None:
    """Prepare ``count`` models (cycling through the workloads' models), then release them all."""
    sources = [w for w in workloads if not w.skipped]
    if not sources or count <= 0:
        return None
    _settle(device)
    before = sample_process(pid)
    held: list[Any] = []
    for i in range(count):
        _prepare_one(device, sources[i % len(sources)], held)
    buffers = sum(1 for h in held if isinstance(h, _HeldBuffer))
    models = len(held) - buffers
    device.get_status()
    peak = sample_process(pid)
    held.clear()
    _settle(device)
    after = sample_process(pid)
    return ReleaseResult(models, buffers, before, peak, after)


class _HeldBuffer:
    """A driver-allocated buffer kept alive by the phase (told apart from prepared models when counting)."""

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer


def _prepare_one(device: Device, workload: GoldenWorkload, held: list[Any]) -> None:
    """Prepare, execute once and allocate a buffer; a function of its own so no local outlives the phase."""
    model = workload.case.model
    assert model is not None and workload.case.example is not None
    prepared, _why = prepare_for_case(device, model, workload.options)
    if prepared is None:
        return
    built = build_request(model, model.examples[workload.case.example], workload.options.pool_kind,
                          extensions=workload.options.extensions)
    try:
        execute(prepared, built.request, Executor.SYNC)
    finally:
        built.close()
    held.append(prepared)
    try:
        buffer, _token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0, 1.0)], [])
    except DriverError:
        return  # no memory domains, or not for this input: the model alone is released
    held.append(_HeldBuffer(buffer))
