"""CPU time per case of ``nnvts run``, by family, in and out of process, and what a shard or a listing costs.

Run standalone from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.harness_cost
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.harness_cost --specs ../shared/corpus/V1_0

CPU time, not wall time: each variant is one ``nnvts`` process tree, and its
CPU time (user + system of the harness, its workers and its driver hosts) is
read from ``RUSAGE_CHILDREN`` after it ends, so the other work of a shared
machine does not count (it only slows the wall clock).  Rows:

* ``run FAMILY isolation``: ``nnvts run --family FAMILY`` on the specs, no
  report asked, ``--quiet``; CPU time per case, interpreter start-up and
  enumeration included (divide by enough cases for them not to matter);
* ``list --count [--shard 1/N]``: what naming the cases costs, and what a
  shard of them costs; a shard should cost its share of what running it
  costs, not the whole corpus's enumeration.

* ``run FAMILY shard 1/N`` (``--run-shards``): what running a shard of a
  family costs, to set against the whole family's row.

``--tree DIR`` runs the nnvts of another checkout of the repository (its
``vts`` and ``drivers`` first on ``PYTHONPATH``, this virtual environment's
packages), so a "before" tree (``git worktree add /tmp/before REV``) and
this one are measured in one sitting.

The load average is printed before and after.  Compare rows of one run
(before and after a change: two runs back to back), never figures of
another day.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NNVTS = os.path.join(ROOT, ".venv", "bin", "nnvts")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: Environment of the measured commands (``--tree`` puts another checkout first on the path).
ENV = dict(os.environ)
#: Where the measured commands run: ``--tree``'s checkout, so that a driver host started with ``python -m``
#: by an older harness (whose working directory comes first on its path) imports that checkout too.
CWD = [ROOT]


def measure(command: list[str], cwd: str | None = None, env: dict[str, str] | None = None) -> tuple[float, str]:
    """(CPU seconds of the whole process tree, stdout) of one command; a harness error stops the bench."""
    before = _children_cpu()
    done = subprocess.run(command, cwd=cwd or CWD[0], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env or ENV)
    cpu = _children_cpu() - before
    if done.returncode not in (0, 1):
        sys.exit(f"bench: {' '.join(command)} ended with exit status {done.returncode}:\n{done.stderr[-2000:]}")
    return cpu, done.stdout


def count(specs: list[str], family: str, extra: list[str]) -> int:
    _, out = measure([NNVTS, "list", "--count", *_spec_args(specs), "--family", family, *extra])
    return int(out.strip().splitlines()[-1])


def _spec_args(specs: list[str]) -> list[str]:
    return [a for s in specs for a in ("--specs", s)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", action="append", help="spec paths (default ../shared/corpus/V1_0)")
    parser.add_argument("--families", default="validation,generated", help="families to time, comma-separated")
    parser.add_argument("-k", dest="keyword", help="-k expression narrowing the timed runs")
    parser.add_argument("--shards", default="1,10,80", help="N of the list --count --shard 1/N rows ('' for none)")
    parser.add_argument("--jsonl", action="store_true", help="also keep a --jsonl stream in the timed runs")
    parser.add_argument("--run-shards", default="", help="N of run --family F --shard 1/N rows, comma-separated")
    parser.add_argument("--shards-only", action="store_true",
                        help="skip the whole-family run rows (keep --run-shards and the listings)")
    parser.add_argument("--tree", help="measure the nnvts of this other checkout (e.g. a 'before' worktree)")
    args = parser.parse_args()
    if args.tree:
        tree = os.path.abspath(args.tree)
        ENV["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [os.environ.get("PYTHONPATH")])])
        CWD[0] = tree
        print(f"tree: {tree}", flush=True)
    specs = [os.path.abspath(s) for s in args.specs or [os.path.join(ROOT, "..", "shared", "corpus", "V1_0")]]
    extra = ["-k", args.keyword] if args.keyword else []
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs; specs {specs}", flush=True)
    with tempfile.TemporaryDirectory(prefix="nnvts-cost-") as directory:
        for family in filter(None, args.families.split(",")):
            cases = count(specs, family, extra)
            for isolation in () if args.shards_only else ("process", "in_process"):
                command = [NNVTS, "run", "--driver", "reference", *_spec_args(specs), "--family", family,
                           "--quiet", "-j", "1", *extra]
                if isolation == "in_process":
                    command.append("--in-process")
                if args.jsonl:
                    command += ["--jsonl", os.path.join(directory, f"{family}-{isolation}.jsonl")]
                cpu, _ = measure(command)
                print(f"run {family:<10} {isolation:<10} {cases:>7} cases  CPU {cpu:7.2f} s  "
                      f"{1000 * cpu / max(cases, 1):6.3f} ms/case", flush=True)
            for n in [int(s) for s in args.run_shards.split(",") if s]:
                shard = ["--shard", f"1/{n}"]
                shard_cases = count(specs, family, [*extra, *shard])
                cpu, _ = measure([NNVTS, "run", "--driver", "reference", *_spec_args(specs), "--family", family,
                                  "--quiet", "-j", "1", *extra, *shard])
                print(f"run {family:<10} shard 1/{n:<4} {shard_cases:>7} cases  CPU {cpu:7.2f} s  "
                      f"(the whole family's {cases} cases / {n}: {cases / n:.0f})", flush=True)
    for n in [int(s) for s in args.shards.split(",") if s]:
        shard = ["--shard", f"1/{n}"] if n > 1 else []
        cpu, out = measure([NNVTS, "list", "--count", *_spec_args(specs), *shard])
        label = f"1/{n}" if n > 1 else "all"
        print(f"list --count shard {label:<5} {int(out.strip().splitlines()[-1]):>8} cases  CPU {cpu:6.2f} s",
              flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
