"""What a driver process holds right now, read from ``/proc/PID``: memory, descriptors, threads.

RSS and thread count come from ``status`` (cheap); PSS from
``smaps_rollup`` (shares of pages mapped by several processes -- the shared
request pools -- counted fairly); descriptors by listing ``fd``.  A value
the kernel does not offer (no ``smaps_rollup`` before Linux 4.14) is None.
``SampleSeries`` keeps a bounded, evenly spread series however long the run:
when full, every other sample is dropped and the sampling interval doubles.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, slots=True)
class ProcessSample:
    seconds: float  # since the soak started
    executions: int  # executions completed when sampled
    rss_kb: int
    pss_kb: int | None
    fds: int
    threads: int

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data


class ProcessGone(RuntimeError):
    """The process ended (or its /proc entry cannot be read)."""


def _status_fields(pid: int) -> dict[str, str]:
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _kb(value: str | None) -> int:
    return int(value.split()[0]) if value else 0


def read_pss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return _kb(line[4:])
    except OSError:
        return None
    return None


def sample_process(pid: int, seconds: float = 0.0, executions: int = 0) -> ProcessSample:
    try:
        status = _status_fields(pid)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError as error:
        raise ProcessGone(f"cannot read /proc/{pid}: {error}") from None
    return ProcessSample(seconds, executions, _kb(status.get("VmRSS")), read_pss_kb(pid), fds,
                         int(status.get("Threads", "0") or 0))


@dataclass
class SampleSeries:
    """At most ``capacity`` samples, evenly spread over the run (decimated when full)."""

    pid: int
    interval: float = 1.0
    capacity: int = 1000
    samples: list[ProcessSample] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)
    _last: float = -1e18

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.interval

    def take(self, executions: int) -> ProcessSample:
        now = time.monotonic()
        sample = sample_process(self.pid, now - self._started, executions)
        self._last = now
        self.samples.append(sample)
        if len(self.samples) > self.capacity:
            kept = self.samples[::2]
            if kept[-1] is not sample:
                kept.append(sample)
            self.samples = kept
            self.interval = max(self.interval * 2, 1e-3)
        return sample

    def maybe_take(self, executions: int) -> ProcessSample | None:
        return self.take(executions) if self.due() else None
