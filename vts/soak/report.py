"""The soak's summary table (terminal) and JSON report (time series sampled and bounded)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from vts.soak.loop import SoakReport
from vts.soak.trend import Growth


def _growth_row(label: str, growth: Growth | None, unit: str, bound: float | None) -> list[str]:
    if growth is None:
        return [label, "-", "-", "-", "-", "-"]
    per = growth.slope * (1024 if unit == "MB" else 1)
    per_unit = "KB" if unit == "MB" else unit
    return [label, f"{growth.start:.1f}", f"{growth.end:.1f}", f"{per:+.4f} {per_unit}",
            f"{growth.growth:+.2f} {unit}", "-" if bound is None else f"{bound:g} {unit}"]


def summary_lines(report: SoakReport, driver: str) -> list[str]:
    config = report.config
    lines = [f"soak of {driver}: {report.workloads} workloads, {report.iterations} iterations, "
             f"{report.executions} executions in {report.seconds:.1f} s"]
    rows = [["", "start", "end", "slope/exec", "2nd-half growth", "bound"],
            _growth_row("RSS", report.rss, "MB", config.max_rss_growth_mb),
            _growth_row("PSS", report.pss, "MB", None),
            _growth_row("open fds", report.fds, "fds", config.max_fd_growth),
            _growth_row("threads", report.threads, "threads", config.max_thread_growth)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in
                               enumerate(zip(row, widths, strict=True))) for row in rows]
    if report.drift is not None:
        bound = "off" if config.max_latency_drift is None else f"{config.max_latency_drift:g}x"
        lines.append(f"latency: median {report.drift.early_median * 1e3:.3f} ms early, "
                     f"{report.drift.late_median * 1e3:.3f} ms late ({report.drift.ratio:.2f}x; bound {bound})")
    if report.first_executions:
        worst = max(report.first_executions, key=lambda f: f.ratio)
        bound = "none" if config.max_first_execution_ratio is None else f"{config.max_first_execution_ratio:g}x"
        lines.append(f"first execution: worst {worst.name} {worst.first_ms:.2f} ms vs steady "
                     f"{worst.steady_median_ms:.3f} ms ({worst.ratio:.1f}x; bound {bound}); "
                     f"{len(report.first_executions)} models measured")
    if report.release is not None:
        r = report.release
        lines.append(f"release: {r.models} models + {r.buffers} buffers: RSS +{r.peak_mb:.1f} MB at peak, "
                     f"{r.retained_mb:+.1f} MB after release (slack {config.release_slack_mb:g} MB), "
                     f"fds {r.retained_fds:+d}")
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)} workloads (unsupported), e.g. {report.skipped[0][0]}: "
                     f"{report.skipped[0][1]}")
    if report.interrupted:
        lines.append("interrupted")
    lines += [f"FAILED {f}" for f in report.failures]
    lines.append("soak passed" if report.passed and not report.interrupted else "soak failed")
    return lines


def _growth_dict(growth: Growth | None) -> dict[str, Any] | None:
    return None if growth is None else growth.as_dict()


def report_dict(report: SoakReport, header: dict[str, Any]) -> dict[str, Any]:
    config = report.config
    samples = report.series.samples if report.series is not None else []
    drift = report.drift
    return {
        **header,
        "config": dict(vars(config)),
        "passed": report.passed and not report.interrupted,
        "failures": list(report.failures),
        "workloads": report.workloads,
        "skipped": [{"name": n, "why": w} for n, w in report.skipped],
        "iterations": report.iterations,
        "executions": report.executions,
        "warm_up_executions": report.warm_up_executions,
        "seconds": round(report.seconds, 3),
        "rss_mb": _growth_dict(report.rss),
        "pss_mb": _growth_dict(report.pss),
        "fds": _growth_dict(report.fds),
        "threads": _growth_dict(report.threads),
        "latency": None if drift is None else {
            "early_median_ms": round(drift.early_median * 1e3, 4), "late_median_ms": round(drift.late_median * 1e3, 4),
            "ratio": round(drift.ratio, 3), "window_medians_ms": [round(m * 1e3, 4) for m in drift.windows]},
        "first_execution": [f.as_dict() for f in report.first_executions],
        "release": None if report.release is None else report.release.as_dict(),
        "result_changes": [{"name": n, "problem": p} for n, p in report.result_changes],
        "lost": report.lost,
        "interrupted": report.interrupted,
        "samples": [s.as_dict() for s in samples],
    }


def write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def print_summary(report: SoakReport, driver: str, echo: Callable[[str], None] = print) -> None:
    for line in summary_lines(report, driver):
        echo(line)
