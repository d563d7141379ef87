"""The ``nnvts soak`` command: parsing and exit codes only (the work is in ``vts.soak.loop``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from vts.cli.duration import Duration
from vts.cli.params import (
    DriverParam,
    FiniteFloat,
    NnvtsCommand,
    OutputFile,
    bounded_int,
    configured_driver,
    driver_option,
)

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef

#: Upper bounds of the numeric options: beyond them a value is a typo, refused as a usage error.
MAX_MB = float(1 << 20)
MAX_RATIO = 1e9
MAX_COUNT = 1 << 20
DEFAULTS = {"max_rss_growth": 16.0, "max_fd_growth": 4, "max_thread_growth": 4, "max_latency_drift": 3.0,
            "release_models": 32, "release_slack": 16.0}


def _fail_usage(message: str) -> None:
    click.echo(f"nnvts: error: {message}", err=True)
    sys.exit(2)


@click.command(cls=NnvtsCommand)
@click.option("--driver", type=DriverParam(), default="reference", show_default=True,
              help="Driver: an installed name, module:attr, or exec:COMMAND (runs in one driver host process).")
@driver_option
@click.option("--specs", "specs", multiple=True, metavar="PATH", help="Spec file or directory (repeatable). "
              "Default: generated_tests/.")
@click.option("-k", "keyword", metavar="EXPR", help="Select cases by name (as run -k).")
@click.option("--family", "families", multiple=True, metavar="NAME",
              help="Family whose cases are repeated (repeatable). Default: generated (golden executions of "
                   "models prepared once).")
@click.option("--duration", type=Duration(), metavar="DURATION", help="Soak this long (90s, 10m, 1h).")
@click.option("--iterations", type=bounded_int(1, 2**31 - 1), help="Soak this many rounds over the selection.")
@click.option("--max-rss-growth", type=FiniteFloat(0, MAX_MB), default=DEFAULTS["max_rss_growth"],
              show_default=True, metavar="MB",
              help="Fail when the driver's RSS grows more than this over the second half of the run "
                   "(least-squares slope per execution times the executions of that half).")
@click.option("--max-fd-growth", type=bounded_int(0, MAX_COUNT), default=DEFAULTS["max_fd_growth"], show_default=True,
              help="Fail when open descriptors grow more than this over the second half (and after release).")
@click.option("--max-thread-growth", type=bounded_int(0, MAX_COUNT), default=DEFAULTS["max_thread_growth"],
              show_default=True, help="Fail when threads grow more than this over the second half.")
@click.option("--max-latency-drift", type=FiniteFloat(0, MAX_RATIO), default=DEFAULTS["max_latency_drift"],
              show_default=True, metavar="FACTOR",
              help="Fail when the median latency of the last tenths exceeds the first tenths' by this factor "
                   "(0: report only).")
@click.option("--max-first-execution-ratio", type=FiniteFloat(0, MAX_RATIO), metavar="RATIO",
              help="Fail when a model's first execution takes more than RATIO times the median of its next "
                   "executions (always reported; no bound by default).")
@click.option("--release-models", type=bounded_int(0, MAX_COUNT), default=DEFAULTS["release_models"],
              show_default=True, help="Models (and buffers) the release phase prepares and releases (0: skip).")
@click.option("--release-slack", type=FiniteFloat(0, MAX_MB), default=DEFAULTS["release_slack"],
              show_default=True, metavar="MB", help="RSS the driver may keep after the release phase.")
@click.option("--sample-interval", type=FiniteFloat(0, 3600), default=0.05, show_default=True,
              metavar="SECONDS", help="Sample the driver process at most this often (doubled whenever the "
                                      "series is thinned to --max-samples).")
@click.option("--max-samples", type=bounded_int(10, 1 << 20), default=1000, show_default=True,
              help="Samples kept in the report (the series is thinned evenly past this).")
@click.option("--timeout", "call_timeout", type=FiniteFloat(0, 3600, low_open=True), default=60.0, show_default=True,
              help="Seconds a driver call may take before the soak fails as hung.")
@click.option("--memory-limit", "memory_limit", type=bounded_int(0, 1 << 30), default=4096, show_default=True,
              metavar="MIB", help="Address-space limit of the driver process in MiB (0: none).")
@click.option("--json", "json_path", type=OutputFile(),
              help="Write the JSON report (with the sampled time series) here.")
def soak(driver: DriverRef, driver_options: tuple[tuple[str, str], ...], specs: tuple[str, ...], keyword: str | None,
         families: tuple[str, ...],
         duration: float | None, iterations: int | None, max_rss_growth: float, max_fd_growth: int,
         max_thread_growth: int, max_latency_drift: float, max_first_execution_ratio: float | None,
         release_models: int, release_slack: float, sample_interval: float, max_samples: int,
         call_timeout: float, memory_limit: int, json_path: str | None) -> None:
    """Repeat a selection against one long-lived driver process; fail on leaks, drift or changed results.

    Tracks the driver process's RSS/PSS, open descriptors and threads, and
    each execution's latency.  Exit 0 when every check held, 1 otherwise, 5
    when nothing was selected.  Without --duration or --iterations, runs 60 s.
    """
    from vts.cli.arguments import selection_problem
    from vts.soak.loop import SoakConfig
    from vts.soak.run import SoakRequest, soak_session

    driver = configured_driver(driver, driver_options, _fail_usage)
    from vts.spec.bundled import default_spec_paths

    spec_paths = list(specs) or default_spec_paths()
    problem = selection_problem(spec_paths, keyword, families)
    if problem is not None:
        _fail_usage(problem)

    if duration is None and iterations is None:
        duration = 60.0
    config = SoakConfig(
        duration=duration, iterations=iterations, sample_interval=sample_interval, max_samples=max_samples,
        max_rss_growth_mb=max_rss_growth, max_fd_growth=max_fd_growth, max_thread_growth=max_thread_growth,
        max_latency_drift=max_latency_drift or None, max_first_execution_ratio=max_first_execution_ratio,
        release_models=release_models, release_slack_mb=release_slack, call_timeout=call_timeout)
    sys.exit(soak_session(SoakRequest(
        driver=driver, spec_paths=spec_paths, config=config, keyword=keyword,
        families=families, json_path=json_path, memory_limit_mib=memory_limit, argv=sys.argv[1:]),
        usage_error=_fail_usage))
