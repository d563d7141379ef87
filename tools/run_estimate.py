"""Before ``make run``: how long it will take on this machine, said before it starts.

    .venv/bin/python tools/run_estimate.py [--last reports/run.json] [--sample 50] [nnvts run options...]

The full run of the bundled cases is about ten minutes on two cores, and
an ETA from its first cases misled by hours.  So ``make run`` asks first:

* when a previous run of the same command left its JSON report here
  (``--last``), its duration (a run on this machine, of these cases);
* else a sample: one stable shard, ``--shard 1/N`` of the same selection
  (every family, whole models picked by hash), timed: its cases' seconds
  times N, plus what does not grow with the cases (starting Python and the
  driver host) once.  The sample costs 1/N of the run.

It prints one line and exits 0 whatever happens: an estimate never stops
the run it is about.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from vts.report.terminal import format_duration


def last_duration(path: str, argv: Sequence[str]) -> float | None:
    """The duration of the complete run whose JSON report is ``path``, if it ran ``argv`` (else None)."""
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        return None
    header_argv = report.get("argv") if isinstance(report, dict) else None
    same = isinstance(header_argv, list) and [a for a in header_argv if a in argv] == list(argv)
    duration = report.get("duration") if isinstance(report, dict) else None
    if not same or report.get("interrupted") or not isinstance(duration, int | float):
        return None
    return float(duration)


def sample_estimate(nnvts: str, run_options: Sequence[str], shards: int) -> tuple[float, float]:
    """(estimate, sample seconds): one shard of ``shards`` run and timed; its cases' time times ``shards``.

    What does not grow with the cases (starting Python, the driver host) is counted once: the sample's
    wall time less the seconds of its cases.  A sample whose report cannot be read is scaled whole.
    """
    with tempfile.TemporaryDirectory(prefix="nnvts-estimate-") as folder:
        report_path = os.path.join(folder, "sample.json")
        started = time.monotonic()
        subprocess.run([nnvts, "run", *run_options, "--shard", f"1/{shards}", "-q", "--json", report_path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        took = time.monotonic() - started
        try:
            with open(report_path, encoding="utf-8") as handle:
                cases = sum(float(case.get("duration", 0.0)) for case in json.load(handle)["cases"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return took * shards, took
    cases = min(cases, took)
    return (took - cases) + cases * shards, took


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--last", default="reports/run.json", help="the JSON report of the previous run")
    parser.add_argument("--sample", type=int, default=50, metavar="N", help="time one shard of N")
    parser.add_argument("run_options", nargs="*", help="the selection and driver options of the run")
    args = parser.parse_args(argv)
    options = args.run_options or ["--driver", "reference"]
    previous = last_duration(args.last, options)
    if previous is not None:
        print(f"nnvts: this run took {format_duration(previous)} here last time ({args.last}); starting", flush=True)
        return 0
    nnvts = os.path.join(os.path.dirname(sys.executable), "nnvts")
    print(f"nnvts: timing a 1/{args.sample} sample of the cases to say how long the run will take here…", flush=True)
    estimate, took = sample_estimate(nnvts, options, args.sample)
    print(f"nnvts: the run will take about {format_duration(estimate)} on this machine (the sample took "
          f"{format_duration(took)}); starting", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
