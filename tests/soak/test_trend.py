"""The soak's decisions on synthetic series: slopes, growth over the second half, drift, first execution."""

from __future__ import annotations

import os

import pytest

from vts.soak.first_execution import first_execution
from vts.soak.sampler import ProcessGone, SampleSeries, sample_process
from vts.soak.trend import latency_drift, least_squares_slope, second_half_growth


def test_slope_of_a_line_and_of_a_constant():
    assert least_squares_slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2.0)
    assert least_squares_slope([0, 1, 2], [5, 5, 5]) == 0.0
    assert least_squares_slope([4], [1]) == 0.0


def test_warm_up_growth_in_the_first_half_is_not_a_leak():
    executions = list(range(0, 1000, 10))
    rss = [40 + min(x, 300) * 0.1 for x in executions]  # grows 30 MB while warming up, then flat
    growth = second_half_growth(executions, rss)
    assert growth.growth == pytest.approx(0.0, abs=1e-9)
    assert growth.start == 40 and growth.end == 70


def test_steady_leak_is_measured_over_the_whole_second_half():
    executions = [0, 100, 200, 600, 990, 1000]  # sparse samples: growth is still slope x 500 executions
    fds = [4 + x for x in executions]
    growth = second_half_growth(executions, fds)
    assert growth.slope == pytest.approx(1.0)
    assert growth.growth == pytest.approx(500.0)


def test_noise_around_a_flat_level_stays_small():
    executions = list(range(200))
    rss = [50 + (0.3 if i % 2 else -0.3) for i in executions]
    assert abs(second_half_growth(executions, rss).growth) < 0.5


def test_drift_compares_late_medians_with_early_ones():
    flat = latency_drift([0.001] * 1000)
    assert flat is not None and flat.ratio == pytest.approx(1.0)
    slowing = latency_drift([0.001] * 500 + [0.004] * 500)
    assert slowing is not None and slowing.ratio == pytest.approx(4.0)
    assert len(slowing.windows) == 10
    spiky = latency_drift([0.5 if i % 50 == 0 else 0.001 for i in range(1000)])  # rare slow executions
    assert spiky is not None and spiky.ratio == pytest.approx(1.0)
    assert latency_drift([0.001] * 10) is None


def test_first_execution_ratio_and_threshold():
    stutter = first_execution("m", [2.0, 0.001, 0.002, 0.001, 0.003, 0.001, 0.5], k=5)
    assert stutter is not None
    assert stutter.first_ms == pytest.approx(2000.0) and stutter.steady_median_ms == pytest.approx(1.0)
    assert stutter.steady_executions == 5 and stutter.ratio == pytest.approx(2000.0)
    assert stutter.exceeds(10.0) and not stutter.exceeds(5000.0) and not stutter.exceeds(None)
    assert first_execution("m", [0.1]) is None


def test_sampler_reads_a_live_process_and_refuses_a_dead_one():
    sample = sample_process(os.getpid(), 1.0, 7)
    assert sample.rss_kb > 0 and sample.fds > 0 and sample.threads >= 1 and sample.executions == 7
    with pytest.raises(ProcessGone):
        sample_process(2**22 + 12345)


def test_series_stays_bounded_and_keeps_the_last_sample():
    series = SampleSeries(os.getpid(), interval=0.0, capacity=16)
    for executions in range(100):
        series.take(executions)
    assert len(series.samples) <= 16
    assert series.samples[-1].executions == 99 and series.samples[0].executions == 0
    assert series.interval > 0
