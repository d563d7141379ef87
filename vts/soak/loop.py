"""The soak loop: repeat the workloads on one driver process, sample it, then judge the trends.

One iteration steps every workload once (round robin, so every latency
window holds the same mix).  The driver process is sampled between steps
at most every ``sample_interval`` seconds, and once at the start and end.
Nothing restarts a lost driver: a soak is about one long-lived process, so
a crash or hang ends the loop and fails the soak.  The checks, each with
its bound in ``SoakConfig`` (defaults in ``nnvts soak --help``):

* memory (RSS) and descriptors and threads must not grow over the second
  half of the run by more than the bound (``trend.second_half_growth``);
* the latency of the last windows must not exceed that of the first by more
  than a factor (``trend.latency_drift``);
* every repeat must give the answer of the first, which must match the golden;
* the first execution of each prepared model, over its steady state, is
  reported, and fails only past ``max_first_execution_ratio``;
* releasing many prepared models and buffers gives their memory back
  (``release.release_phase``).
"""

from __future__ import annotations

import array
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vts.families.base import CaseFailure
from vts.hal.interfaces import Device
from vts.soak.first_execution import DEFAULT_STEADY_EXECUTIONS, FirstExecution, first_execution
from vts.soak.release import ReleaseResult, release_phase
from vts.soak.sampler import ProcessGone, SampleSeries
from vts.soak.trend import Drift, Growth, latency_drift, second_half_growth
from vts.soak.workloads import GoldenWorkload, StepResult


@dataclass
class SoakConfig:
    duration: float | None = None  # seconds; with iterations None, one of them must be set
    iterations: int | None = None
    sample_interval: float = 0.05  # the minimum: doubles each time the bounded series is thinned
    max_samples: int = 1000
    max_rss_growth_mb: float = 16.0
    max_fd_growth: int = 4
    max_thread_growth: int = 4
    max_latency_drift: float | None = 3.0
    max_first_execution_ratio: float | None = None
    first_execution_k: int = DEFAULT_STEADY_EXECUTIONS
    release_models: int = 32
    release_slack_mb: float = 16.0
    call_timeout: float = 60.0


@dataclass
class SoakReport:
    config: SoakConfig
    workloads: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    iterations: int = 0
    executions: int = 0
    seconds: float = 0.0
    series: SampleSeries | None = None
    latencies: array.array[float] = field(default_factory=lambda: array.array("d"))
    rss: Growth | None = None
    pss: Growth | None = None
    fds: Growth | None = None
    threads: Growth | None = None
    drift: Drift | None = None
    first_executions: list[FirstExecution] = field(default_factory=list)
    release: ReleaseResult | None = None
    result_changes: list[tuple[str, str]] = field(default_factory=list)
    lost: str | None = None
    interrupted: bool = False
    #: Executions of the first iteration; samples before its end are not fitted.
    warm_up_executions: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def run_soak(device_of: Callable[[], Device], pid: int, workloads: Sequence[Any], config: SoakConfig,
             call_deadline: Callable[[float | None], None] = lambda _t: None) -> SoakReport:
    """Soak ``workloads`` on the driver process ``pid``; ``call_deadline`` bounds each driver call."""
    from vts.ipc.errors import DriverLost

    if config.duration is None and config.iterations is None:
        raise ValueError("a soak needs a duration or a number of iterations")
    report = SoakReport(config)
    series = SampleSeries(pid, config.sample_interval, config.max_samples)
    report.series = series
    keep_first = 1 + config.first_execution_k
    device = device_of()
    active = []
    try:
        for workload in workloads:
            call_deadline(config.call_timeout)
            try:
                if workload.prepare(device):
                    active.append(workload)
                else:
                    report.skipped.append((workload.name, workload.skipped))
            except CaseFailure as failure:
                report.failures.append(f"{workload.name}: {failure.reason}")
            except DriverLost:
                raise
            except Exception as error:  # a driver's non-HAL exception is a verdict, not a harness crash
                report.failures.append(f"{workload.name}: preparation raised {type(error).__name__}: {error}")
        report.workloads = len(active)
        series.take(0)
        started = time.monotonic()
        end = None if config.duration is None else started + config.duration
        out_of_time = False
        while active and not out_of_time and (config.iterations is None or report.iterations < config.iterations):
            for workload in active:
                call_deadline(config.call_timeout)
                try:
                    step = workload.step(keep_first)
                except DriverLost:
                    raise
                except Exception as error:
                    step = StepResult(math.nan, f"execution raised {type(error).__name__}: {error}")
                else:
                    report.latencies.append(step.latency)
                report.executions += 1
                if step.problem is not None and len(report.result_changes) < 50:
                    report.result_changes.append((workload.name, step.problem))
                series.maybe_take(report.executions)
                if end is not None and time.monotonic() >= end:
                    out_of_time = True
                    break
            else:  # a whole iteration: every workload stepped once
                report.iterations += 1
                if report.iterations == 1:  # first use maps pools, loads code: warm-up, left out of the trends
                    report.warm_up_executions = report.executions
                    series.take(report.executions)
        report.seconds = time.monotonic() - started
        series.take(report.executions)
        if config.release_models > 0:
            call_deadline(config.call_timeout)
            report.release = release_phase(device, pid, [w for w in active if isinstance(w, GoldenWorkload)],
                                           config.release_models)
    except DriverLost as lost:
        report.lost = f"the driver process was lost: {lost.reason}"
    except ProcessGone as gone:
        report.lost = f"the driver process ended: {gone}"
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        call_deadline(None)
        for workload in workloads:
            workload.close()
    _judge(report, active, config)
    return report


def _judge(report: SoakReport, workloads: Sequence[Any], config: SoakConfig) -> None:
    series = report.series
    samples = [s for s in (series.samples if series is not None else []) if s.executions >= report.warm_up_executions]
    failures = report.failures
    if report.lost:
        failures.append(report.lost)
    if report.iterations == 0 and report.executions and not (report.lost or report.interrupted):
        failures.append(f"the soak ended before its first iteration over {report.workloads} workloads finished: "
                        "nothing left after warm-up to judge (give a longer --duration or a smaller selection)")
        samples, too_short = [], True
    else:
        too_short = False
    if samples:
        executions = [s.executions for s in samples]
        report.rss = second_half_growth(executions, [s.rss_kb / 1024 for s in samples])
        if all(s.pss_kb is not None for s in samples):
            report.pss = second_half_growth(executions, [(s.pss_kb or 0) / 1024 for s in samples])
        report.fds = second_half_growth(executions, [s.fds for s in samples])
        report.threads = second_half_growth(executions, [s.threads for s in samples])
        if report.rss.growth > config.max_rss_growth_mb:
            failures.append(f"memory grows: RSS +{report.rss.growth:.1f} MB over the second half "
                            f"({report.rss.slope * 1024:.2f} KB per execution; bound {config.max_rss_growth_mb:g} MB)")
        if report.fds.growth > config.max_fd_growth:
            failures.append(f"descriptors grow: +{report.fds.growth:.1f} open files over the second half "
                            f"(bound {config.max_fd_growth})")
        if report.threads.growth > config.max_thread_growth:
            failures.append(f"threads grow: +{report.threads.growth:.1f} over the second half "
                            f"(bound {config.max_thread_growth})")
    report.drift = None if too_short else latency_drift(report.latencies)
    if (report.drift is not None and config.max_latency_drift is not None
            and report.drift.ratio > config.max_latency_drift):
        failures.append(f"latency drifts: median {report.drift.late_median * 1e3:.3f} ms at the end vs "
                        f"{report.drift.early_median * 1e3:.3f} ms early ({report.drift.ratio:.2f}x; "
                        f"bound {config.max_latency_drift:g}x)")
    for workload in workloads:
        measured = first_execution(workload.name, workload.first_latencies, config.first_execution_k)
        if measured is None:
            continue
        report.first_executions.append(measured)
        if measured.exceeds(config.max_first_execution_ratio):
            failures.append(f"{workload.name}: first execution {measured.first_ms:.1f} ms is {measured.ratio:.1f}x "
                            f"the steady {measured.steady_median_ms:.3f} ms (bound "
                            f"{config.max_first_execution_ratio:g}x)")
    for name, problem in report.result_changes[:10]:
        failures.append(f"{name}: {problem}")
    if report.release is not None:
        failures.extend(report.release.problems(config.release_slack_mb, config.max_fd_growth))
