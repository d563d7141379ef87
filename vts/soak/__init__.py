"""``nnvts soak``: one long-lived driver, the same executions over and over, watched for leaks and drift.

``run.py`` is one soak (select, start a driver host, soak, report);
``loop.py`` repeats the workloads (``workloads.py``) and samples the
driver; ``sampler.py`` reads the driver process's memory, descriptors and
threads from ``/proc``; ``trend.py`` fits slopes and compares latency
windows; ``first_execution.py`` measures the first execution of each
prepared model against its steady state; ``release.py`` runs the release
phase; ``report.py`` prints the summary and writes the JSON report.

``__all__`` names what the CLI and the tests use; each name loads on first
use.  ``first_execution`` is reached through its module of that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.soak.loop import SoakConfig
    from vts.soak.run import SoakRequest, soak_session
    from vts.soak.sampler import ProcessGone, SampleSeries, sample_process
    from vts.soak.trend import latency_drift, least_squares_slope, second_half_growth

#: The public names, by the module that defines each.
_HOMES = {
    "vts.soak.loop": ("SoakConfig",),
    "vts.soak.run": ("SoakRequest", "soak_session"),
    "vts.soak.sampler": ("ProcessGone", "SampleSeries", "sample_process"),
    "vts.soak.trend": ("latency_drift", "least_squares_slope", "second_half_growth"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ProcessGone", "SampleSeries", "SoakConfig", "SoakRequest", "latency_drift", "least_squares_slope",
    "sample_process", "second_half_growth", "soak_session",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
