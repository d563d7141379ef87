"""The driver's own work against the harness's, unprofiled: issue 23's ratio as a run pays it.

Run standalone from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.driver_share \\
        --specs ../shared/corpus/V1_0 --families validation,generated --shard 1/4

For each family, ``nnvts run --family F --driver reference --quiet`` in process and out of process, no
report asked.  Every Python process of the run (harness, driver host, the host's init) loads
``bench.driver_time_probe`` through a ``sitecustomize`` placed first on ``PYTHONPATH``: it times the
outermost calls into the reference device and its prepared models with thread CPU, and writes that and
the process's own CPU (``getrusage``) when it exits.  So, per case:

* ``total``: CPU of every process of the run;
* ``driver``: thread CPU inside the driver's entry points, wherever they ran;
* ``harness``: the rest (harness, protocol on both sides, the host's loop), and its ratio to the driver;
  beyond the fixed cost, split in two: the harness's own process and the driver hosts' processes less
  their driver's work (decoding calls, encoding answers, the host's loop);
* ``fixed``: the CPU of the same command selecting no case (``-k`` of a name that matches nothing: the
  interpreters' start-up, imports, the check of the specs, naming the cases), and the ratio of the
  harness's CPU beyond it to the driver's: the marginal cost of a case, what a larger run converges to.

Why not the profiler's shares (``bench.case_buckets``): cProfile charges each Python call, so it inflates
code made of many small calls (the harness, the driver's validation) against system calls and numpy; its
shares put validation's harness at 3.3x the driver where this measures more (bench/README.md, fifteenth
pass).  The driver's work done on threads of its own after a call returned (the reference's asynchronous
executions) counts as the process's, not the driver's: for the families here (validation and generated)
nearly all driver work is inside a call.

Read ratios of one sitting; the machine's other work only slows the wall clock, never these CPU figures,
but a busy machine still moves them (caches, frequency).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
_SITECUSTOMIZE = "from bench import driver_time_probe\ndriver_time_probe.install()\n"
_NOTHING = "zzz-no-case-is-named-this"
_ENTRY = "import sys; from vts.cli.main import main; main(sys.argv[1:])"
#: ``--floor``: the family's cases judged at once (a pass, no call to the driver), everything around them as run;
#: with ``-j 1`` only (as ``measure`` runs), where this process judges the cases, not a worker of its own.
_STUBBED_ENTRY = ("import sys; from vts.families.base import passed; from vts.families.registry import families; "
                  "families()[sys.argv[1]].run = lambda self, case, device, options: passed('floor'); "
                  "from vts.cli.main import main; main(sys.argv[2:])")


def _run(args: list[str], tree: str) -> tuple[float, float, str]:
    """(driver seconds, CPU seconds of every process, the command's stdout) of one ``nnvts`` command."""
    driver, cpu, _, stdout = _run_split(args, tree)
    return driver, cpu, stdout


def _run_split(args: list[str], tree: str, stub: str | None = None) -> tuple[float, float, float, str]:
    """``_run``'s figures, and the CPU seconds of the driver hosts' processes among them (their driver's work
    included); ``stub``: a family whose cases pass at once (``--floor``)."""
    with tempfile.TemporaryDirectory(prefix="nnvts-driver-share-") as directory:
        site = os.path.join(directory, "site")
        times = os.path.join(directory, "times")
        os.mkdir(site)
        os.mkdir(times)
        with open(os.path.join(site, "sitecustomize.py"), "w", encoding="utf-8") as out:
            out.write(_SITECUSTOMIZE)
        # No sandbox: the hosts must see the probe's sitecustomize and write their times here (a sandbox costs
        # nothing per case: bench/README.md, driver sandbox).
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, tree]), NNVTS_DRIVER_TIME_DIR=times,
                   NNVTS_SANDBOX="none")
        entry = [_ENTRY] if stub is None else [_STUBBED_ENTRY, stub]
        done = subprocess.run([PYTHON, "-c", *entry, *args], cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode not in (0, 1, 5):  # 5: no case selected (the fixed-cost run)
            sys.exit(f"nnvts {' '.join(args)} ended with {done.returncode}: {done.stderr.strip()[-400:]}")
        driver = cpu = hosts = 0.0
        for name in os.listdir(times):
            with open(os.path.join(times, name), encoding="utf-8") as handle:
                spent, own, *role = handle.read().split()
            driver += float(spent)
            cpu += float(own)
            if "host.py" in role:  # the harness is "-c run" (bench's own entry), a host "host.py --driver"
                hosts += float(own)
        return driver, cpu, hosts, done.stdout


def measure(family: str, selection: list[str], isolation: list[str], tree: str, floor: bool = False
            ) -> dict[str, float]:
    """Cases; ms a case of the run's CPU, the driver's and the harness's; the fixed cost (s); both ratios;
    ``floor``: the harness process's CPU a case, beyond fixed, with every case passing at once."""
    base = ["run", "--driver", "reference", "--quiet", "-j", "1", "--family", family, *isolation, *selection]
    _, _, listed = _run(["list", "--count", "--family", family, *selection], tree)
    cases = int(listed.strip().splitlines()[-1])
    _, fixed, fixed_hosts, _ = _run_split([*base, "-k", _NOTHING], tree)
    driver, cpu, hosts, _ = _run_split(base, tree)
    per_case = 1000 / max(cases, 1)
    harness = cpu - driver
    return {"cases": cases, "total": cpu * per_case, "driver": driver * per_case, "harness": harness * per_case,
            "ratio": harness / driver if driver else float("nan"), "fixed": fixed,
            "marginal": (harness - fixed) / driver if driver else float("nan"),
            # beyond fixed, ms a case: the harness's own process(es), and the hosts' CPU less their driver's work
            "harness_process": (cpu - hosts - (fixed - fixed_hosts)) * per_case,
            "host_less_driver": (hosts - driver - fixed_hosts) * per_case,
            "floor": _floor(family, base, tree, fixed - fixed_hosts) * per_case if floor else float("nan")}


def _floor(family: str, base: list[str], tree: str, fixed_harness: float) -> float:
    """The harness process's CPU seconds beyond ``fixed_harness`` when the family's cases pass at once: what the
    runner costs around a case (selection, the case's attempt and deadline, its result, the summary)."""
    _, cpu, hosts, _ = _run_split(base, tree, stub=family)
    return cpu - hosts - fixed_harness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", action="append", help="spec paths (default ../shared/corpus/V1_0)")
    parser.add_argument("--families", default="validation,generated", help="families, comma-separated")
    parser.add_argument("--shard", help="--shard I/N narrowing the runs")
    parser.add_argument("--tree", action="append",
                        help="the checkout to measure (default: this one); give it twice (a 'before' tree and this "
                             "one) for an A/B in one sitting, each family's rows of the trees interleaved")
    parser.add_argument("--floor", action="store_true",
                        help="also run each family with its cases passing at once: the runner's own cost a case")
    parser.add_argument("--isolation", choices=("both", "in", "out"), default="both",
                        help="in process, out of process, or both (default)")
    options = parser.parse_args()
    trees = options.tree or [ROOT]
    isolations = [(label, flag) for label, flag in (("in process", ["--in-process"]), ("out of process", []))
                  if options.isolation == "both" or label.startswith(options.isolation)]
    selection = [a for s in (options.specs or ["../shared/corpus/V1_0"]) for a in ("--specs", s)]
    if options.shard:
        selection += ["--shard", options.shard]
    for index, tree in enumerate(trees):
        print(f"tree {chr(65 + index)}: {tree}")
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs")
    print(f"{'family':<22} {'isolation':<15} {'tree':<4} {'cases':>7} {'total':>8} {'driver':>8} {'harness':>8} "
          f"{'harness/driver':>15} {'fixed (s)':>10} {'beyond fixed':>13} {'harness proc':>13} {'host - driver':>14}"
          f"{' runner floor' if options.floor else ''}")
    for family in options.families.split(","):
        for label, isolation in isolations:
            for index, tree in enumerate(trees):
                row = measure(family, selection, isolation, tree, options.floor)
                floor = f" {row['floor']:>13.3f}" if options.floor else ""
                print(f"{family:<22} {label:<15} {chr(65 + index):<4} {row['cases']:>7.0f} {row['total']:>8.3f} "
                      f"{row['driver']:>8.3f} {row['harness']:>8.3f} {row['ratio']:>14.2f}x {row['fixed']:>10.2f} "
                      f"{row['marginal']:>12.2f}x {row['harness_process']:>13.3f} {row['host_less_driver']:>14.3f}"
                      f"{floor}", flush=True)
    print("ms a case (everything included); beyond fixed: (harness CPU - the fixed cost) / driver CPU; "
          "harness proc and host - driver: ms a case beyond fixed, the harness's process and the driver hosts' "
          "(less the driver's own work), the two parts of 'harness' (in process: all in the first); runner floor: "
          "the harness process's ms a case beyond fixed with every case passing at once")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
