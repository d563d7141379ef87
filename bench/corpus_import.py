"""How long ``nnvts corpus import aosp`` takes on Android's V1_0..V1_2 tree: cold, then incremental.

Run standalone from the repository root::

    .venv/bin/python -m bench.corpus_import                  # ../shared/aosp-nn/nn, -j 2
    .venv/bin/python -m bench.corpus_import --jobs 1 --src PATH/TO/nn

The cold import writes into a fresh temporary DIR; the incremental one runs
the same command again on that DIR (nothing may be rewritten); a third run
touches one ``.mod.py`` of a copy of the tree (only it may be re-imported).
Each prints the wall time, the CPU time of the whole process tree
(``RUSAGE_CHILDREN``: the importer, its workers and the generator children)
and the case count per version folder.  The load average (``uptime``) is
printed before and after: the budget (60 s on 2 cores with -j 2) is for a
machine nnvts has to itself, and a busy one measures the other work too.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = ROOT.parent / "shared" / "aosp-nn" / "nn"
BUDGET_S = 60.0


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "load: " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _import(src: Path, out: Path, jobs: int) -> tuple[float, float, str]:
    cpu, wall = _cpu_children(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cli", "corpus", "import", "aosp", str(src), "--out", str(out),
                           "-j", str(jobs), "-q"], cwd=ROOT, capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wall, cpu = time.perf_counter() - wall, _cpu_children() - cpu
    if done.returncode != 0:
        sys.exit(f"import failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return wall, cpu, done.stdout.strip()


def _cases(out: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in sorted(out.glob("*/*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            counts[path.parent.name] = counts.get(path.parent.name, 0) + len(json.load(f)["models"])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help="the nn/ folder of a frameworks/ml tree")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    print(f"before: {_uptime()} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory(prefix="nnvts-bench-import-") as tmp:
        out = Path(tmp) / "corpus"
        wall, cpu, line = _import(args.src, out, args.jobs)
        verdict = "within" if wall <= BUDGET_S else "OVER"
        print(f"cold import     -j {args.jobs}: {wall:6.1f} s wall, {cpu:6.1f} s CPU "
              f"({verdict} the {BUDGET_S:g} s budget)")
        print(f"  {line}")
        print(f"  cases per folder: {_cases(out)}")
        wall, cpu, line = _import(args.src, out, args.jobs)
        print(f"incremental     -j {args.jobs}: {wall:6.1f} s wall, {cpu:6.1f} s CPU")
        print(f"  {line}")
        tree = Path(tmp) / "nn"
        shutil.copytree(args.src, tree)
        spec = next(iter(sorted((tree / "runtime" / "test" / "specs").glob("*/*.mod.py"))))
        spec.write_text(spec.read_text() + "\n# touched by the bench\n")
        wall, cpu, line = _import(tree, out, args.jobs)
        print(f"one spec edited -j {args.jobs}: {wall:6.1f} s wall, {cpu:6.1f} s CPU ({spec.parent.name}/{spec.name})")
        print(f"  {line}")
    print(f"after:  {_uptime()}")


if __name__ == "__main__":
    main()
