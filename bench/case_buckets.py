"""Where a case's CPU goes, by family: the driver's own work against the harness's parts.

Run standalone from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.case_buckets \\
        --specs ../shared/corpus/V1_0 --families validation,generated
    ... --tree /tmp/before            # the same for another checkout (a "before" worktree)

For each family, two runs of ``nnvts run --family F`` out of process, no report asked:

1. unprofiled, for the CPU time per case of the whole process tree (``RUSAGE_CHILDREN``: harness and
   driver host; a shared machine's other work does not count);
2. profiled, the harness under cProfile and the driver host too (``NNVTS_HOST_PROFILE``), both on CPU
   time, for the *shares*: cProfile inflates code with many small calls more than numpy, so its
   absolute figures are not the run's.  Each bucket's share of the profiled time is applied to run 1's
   CPU per case.

Buckets, by the module of the code that spent the time (the time of builtins, the standard library and
other packages goes to the code of ours that called them, shared by what each caller spent in them):

* ``driver``: ``nnvts/drivers/``, ``vts/hal/validation*``, ``vts/hal/operations``, ``vts/hal/checked.py``,
  numpy, on the host side (the reference driver's own work; on the harness side numpy is judging);
* ``ipc``: ``vts/ipc/`` on either side (encoding, decoding, framing, socket calls, the host's loop);
* ``pools``: ``vts/hal/memory.py`` (shared-memory pools: memfd, mmap, pread/pwrite);
* ``judging``: ``vts/families/``, ``vts/model/compare.py``, numpy on the harness side;
* ``cases``: ``vts/spec/``, ``vts/model/`` (spec parsing, model and request building);
* ``results``: ``vts/run/``, ``vts/report/``, ``vts/results.py``, the CLI;
* ``start-up``: imports (the interpreter's loaders); ``other``: the rest of ours (``vts/hal`` types,
  ``vts/bounds.py``), and library time no caller of ours could be found for.

The interpreter start-up of both processes is in the figures: give each family enough cases (a few
thousand) for it not to matter.  Read ratios of one sitting, never figures of another day.
"""

from __future__ import annotations

import argparse
import glob
import os
import pstats
import subprocess
import tempfile
from collections import defaultdict

from bench import harness_cost

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
BUCKETS = ("driver", "ipc", "pools", "judging", "cases", "results", "start-up", "other")

#: The harness under cProfile (CPU time), statistics to argv[1]; the rest of argv is nnvts's.
_PROFILED_HARNESS = """
import cProfile, sys, time
out = sys.argv.pop(1)
from vts.cli.main import main
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(main, sys.argv[1:])
finally:
    profile.dump_stats(out)
"""


def bucket_of(filename: str, host: bool) -> str | None:
    """The bucket of code in ``filename``; None for builtins and the standard library or other packages,
    whose time is charged to the code that called them."""
    if filename.startswith("~") or filename.startswith("<built-in"):
        return None
    path = filename.replace(os.sep, "/")
    if "<frozen importlib" in path or "importlib/" in path:
        return "start-up"
    if "/numpy/" in path:
        return "driver" if host else "judging"
    if "/drivers/" in path or "/vts/hal/validation" in path or "/vts/hal/operations" in path \
            or path.endswith("/vts/hal/checked.py"):
        return "driver"
    if "/vts/ipc/" in path:
        return "ipc"
    if path.endswith("/vts/hal/memory.py"):
        return "pools"
    if "/vts/families/" in path or path.endswith("/vts/model/compare.py"):
        return "judging"
    if "/vts/spec/" in path or "/vts/model/" in path:
        return "cases"
    if "/vts/run/" in path or "/vts/report/" in path or "/vts/cli/" in path or path.endswith("/vts/results.py"):
        return "results"
    if "/vts/" in path or "/bench/" in path:
        return "other"
    return None


#: How many callers up the time of library code is followed to code of ours (then it is "other").
_HOPS = 12


def buckets(profile_path: str, host: bool) -> dict[str, float]:
    """Seconds of profiled CPU per bucket of one profile.

    Library code (builtins, the standard library, click) is charged up the call graph to our code that
    called it, split by what each caller spent in it.
    """
    stats = pstats.Stats(profile_path).stats  # type: ignore[attr-defined]
    out: dict[str, float] = defaultdict(float)
    pending: dict[tuple[str, int, str], float] = defaultdict(float)
    for function, (_, _, own, _, _) in stats.items():
        where = bucket_of(function[0], host)
        if where is None:
            pending[function] += own
        else:
            out[where] += own
    for _ in range(_HOPS):
        moving, pending = pending, defaultdict(float)
        for function, seconds in moving.items():
            callers = stats.get(function, (0, 0, 0, 0, {}))[4]
            spent = {caller: entry[3] for caller, entry in callers.items()}
            total = sum(spent.values())
            if total <= 0:
                out["other"] += seconds
                continue
            for caller, share in spent.items():
                where = bucket_of(caller[0], host)
                if where is None:
                    pending[caller] += seconds * share / total
                else:
                    out[where] += seconds * share / total
    out["other"] += sum(pending.values())
    return out


def measure(family: str, specs: list[str], tree: str, extra: list[str]) -> tuple[int, float, dict[str, float]]:
    """(cases, CPU ms per case unprofiled, ms per case per bucket with the profiled shares)."""
    env = dict(os.environ, PYTHONPATH=tree)
    selection = ["--family", family, *[a for s in specs for a in ("--specs", s)], *extra]
    args = ["run", "--driver", "reference", "--quiet", "-j", "1", *selection]
    nnvts = [PYTHON, "-c", "import sys; from vts.cli.main import main; main(sys.argv[1:])"]
    listed = subprocess.run([*nnvts, "list", "--count", *selection], cwd=tree, env=env, capture_output=True,
                            text=True)
    cases = int(listed.stdout.strip().splitlines()[-1])
    cpu, _ = harness_cost.measure([*nnvts, *args], tree, env)
    with tempfile.TemporaryDirectory(prefix="nnvts-buckets-") as directory:
        harness = os.path.join(directory, "harness.prof")
        harness_cost.measure([PYTHON, "-c", _PROFILED_HARNESS, harness, *args], tree,
                             dict(env, NNVTS_HOST_PROFILE=os.path.join(directory, "host")))
        sides = [buckets(harness, host=False)] + [buckets(p, host=True)
                                                  for p in glob.glob(os.path.join(directory, "host.*.prof"))]
    profiled: dict[str, float] = defaultdict(float)
    for side in sides:
        for name, seconds in side.items():
            profiled[name] += seconds
    total = sum(profiled.values()) or 1.0
    per_case = 1000 * cpu / max(cases, 1)
    return cases, per_case, {name: per_case * profiled.get(name, 0.0) / total for name in BUCKETS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", action="append", help="spec paths (default ../shared/corpus/V1_0)")
    parser.add_argument("--families", default="validation,generated", help="families, comma-separated")
    parser.add_argument("-k", dest="keyword", help="-k expression narrowing the runs")
    parser.add_argument("--shard", help="--shard I/N narrowing the runs")
    parser.add_argument("--tree", default=ROOT, help="the checkout to measure (default: this one)")
    args = parser.parse_args()
    tree = os.path.abspath(args.tree)
    specs = [os.path.abspath(s) for s in args.specs or [os.path.join(ROOT, "..", "shared", "corpus", "V1_0")]]
    extra = [*(["-k", args.keyword] if args.keyword else []), *(["--shard", args.shard] if args.shard else [])]
    print(f"tree {tree}; load average before: {os.getloadavg()}; {os.cpu_count()} CPUs", flush=True)
    print(f"{'family':<22} {'cases':>7} {'ms/case':>8} " + " ".join(f"{b:>8}" for b in BUCKETS), flush=True)
    for family in filter(None, args.families.split(",")):
        cases, per_case, shares = measure(family, specs, tree, extra)
        print(f"{family:<22} {cases:>7} {per_case:>8.3f} " + " ".join(f"{shares[b]:>8.3f}" for b in BUCKETS),
              flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
