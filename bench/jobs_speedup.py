"""How much faster ``nnvts run -j N`` is than ``-j 1``: the same run, one after the other, in one go.

Run standalone from the repository root, on an otherwise idle machine::

    .venv/bin/python -m bench.jobs_speedup                      # make corpus: every family, ../shared/corpus
    .venv/bin/python -m bench.jobs_speedup --specs ../shared/corpus/V1_0 --jobs 2   # a quicker slice
    .venv/bin/python -m bench.jobs_speedup --jobs 1,2,4,8,16                         # scaling to many cores

Each variant runs the ``make corpus`` command (``nnvts run --driver
reference --specs SPECS --json ... --html ...``), reports included, as a
user would.  It prints, per variant, the wall time, the CPU time of the
whole process tree (harness, workers, driver hosts: ``RUSAGE_CHILDREN``
after each run, every process being waited for by its parent) and the
cases run, then the speed-up of each ``-j N`` over ``-j 1``.  The load
average is printed before and after: a run on a busy machine measures the
other work as much as nnvts.  A variant that does not end with exit status
0 or 1 (cases failing is a result; a harness error is not) stops the bench.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NNVTS = os.path.join(ROOT, ".venv", "bin", "nnvts")


@dataclass(frozen=True)
class Measured:
    jobs: int
    wall: float
    cpu: float
    cases: int


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_variant(jobs: int, specs: list[str], extra: list[str], directory: str) -> Measured:
    """One ``nnvts run -j jobs`` with the make-corpus reports; its wall time, tree CPU time and case count."""
    report = os.path.join(directory, f"j{jobs}.json")
    command = [NNVTS, "run", "--driver", "reference", *(a for s in specs for a in ("--specs", s)),
               "-j", str(jobs), "--json", report, "--html", os.path.join(directory, f"j{jobs}.html"),
               "--quiet", *extra]
    cpu_before = _children_cpu()
    started = time.monotonic()
    status = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL).returncode
    wall = time.monotonic() - started
    cpu = _children_cpu() - cpu_before
    if status not in (0, 1):
        sys.exit(f"bench: -j {jobs} ended with exit status {status}: not a measurement")
    with open(report, encoding="utf-8") as handle:
        cases = json.load(handle)["summary"]["total"]
    return Measured(jobs, wall, cpu, cases)


def _jobs_list(text: str) -> list[int]:
    """``--jobs 2`` or ``--jobs 1,2,4,8,16``."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs {text!r}: expected N or N,N,...") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--jobs {text!r}: every -j must be at least 1")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", action="append", help="spec paths (default ../shared/corpus, as make corpus)")
    parser.add_argument("--jobs", type=_jobs_list, action="append",
                        help="-j values to compare with -j 1: repeat, or a list such as 1,2,4,8,16 (default 2)")
    parser.add_argument("extra", nargs="*", help="more nnvts run options, after --")
    args = parser.parse_args()
    specs = args.specs or [os.path.join("..", "shared", "corpus")]
    asked = [j for group in (args.jobs or [[2]]) for j in group]
    variants = [1, *dict.fromkeys(j for j in asked if j != 1)]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs, {cores} usable cores; specs {specs}",
          flush=True)
    if any(j > (cores or 1) for j in variants):
        print(f"note: -j above {cores} runs more workers than cores: a speed-up beyond {cores}x is not possible "
              "here", flush=True)
    results: list[Measured] = []
    with tempfile.TemporaryDirectory(prefix="nnvts-jobs-") as directory:
        for jobs in variants:
            results.append(run_variant(jobs, specs, args.extra, directory))
            m = results[-1]
            print(f"-j {m.jobs}: {m.cases} cases, wall {m.wall:.1f} s, CPU {m.cpu:.1f} s "
                  f"({m.cases / m.wall:,.0f} cases/s)", flush=True)
    print(f"load average after: {os.getloadavg()}")
    base = results[0]
    for m in results[1:]:
        if m.cases != base.cases:
            sys.exit(f"bench: -j {m.jobs} ran {m.cases} cases, -j 1 ran {base.cases}: not comparable")
        print(f"-j {m.jobs} over -j 1: {base.wall / m.wall:.2f}x faster (wall), "
              f"{m.cpu / base.cpu:.2f}x the CPU time ({cores} cores)")


if __name__ == "__main__":
    main()
