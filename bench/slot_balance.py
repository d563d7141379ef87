"""How evenly ``nnvts run -j N`` splits a selection's case time between its workers, from measured durations.

Run standalone from the repository root::

    .venv/bin/python -m bench.slot_balance run.json --specs ../shared/corpus --shard 1/20 --jobs 1,2,4,8,16

``run.json`` is any JSON report (or ``.jsonl`` stream) with the durations of the selection's cases, e.g. a
``-j 2`` run of the whole corpus.  For each ``N`` the cases are assigned to slots as ``-j N`` workers take
them, and each slot's summed case time is printed:

* ``hash`` (``--job-split hash``): exactly, through ``iter_cases`` with ``vts.run.selection.WorkerSlot`` (by
  model, a heavy model's validation cases by name);
* ``claim`` (the default of ``nnvts run -j``): the workers claim models as they reach them, simulated on
  a clock made of the durations (``claimed_slot_times``).

The slowest slot bounds the run: the speed-up of ``-j N`` over ``-j 1`` can be at most ``total / slowest``
whatever the cores, before any cost of more processes.  ``--no-heavy`` assigns as before heavy models were
shared (every model whole), for comparison.

A model, not a measurement of many cores: it shows the share each worker gets, from durations taken on
another machine, under another ``-j``.  What it cannot show is how those durations change with more
processes on more cores.
"""

from __future__ import annotations

import argparse
import heapq
import os

from vts.run import runner
from vts.run.claims import ClaimingSlot, ModelClaims
from vts.run.durations import load_durations
from vts.run.runner import Selection, iter_cases
from vts.run.selection import Shard, WorkerSlot


def slot_times(specs: list[str], shard: Shard | None, jobs: int, known: dict[str, float]) -> list[float]:
    """The summed case time of each of ``jobs`` slots (cases absent from ``known`` weigh nothing)."""
    return [sum(known.get(case.name, 0.0)
                for _, case in iter_cases(Selection(specs, shard=shard, partition=WorkerSlot(slot, jobs))))
            for slot in range(jobs)]


def claimed_slot_times(specs: list[str], shard: Shard | None, jobs: int, known: dict[str, float]) -> list[float]:
    """The summed case time of each slot when workers claim models (``--job-split claim``), simulated.

    The workers' own generators run over one shared claim table, each advanced when it is the first free
    on a clock made of the measured durations: a model goes to the worker that reaches it first, as it
    would in the run.
    """
    claims = ModelClaims()
    workers = [iter_cases(Selection(specs, shard=shard, partition=ClaimingSlot(slot, jobs, claims)))
               for slot in range(jobs)]
    clocks = [0.0] * jobs
    free = [(0.0, slot) for slot in range(jobs)]
    while free:
        _, slot = heapq.heappop(free)
        step = next(workers[slot], None)
        if step is None:
            continue
        clocks[slot] += known.get(step[1].name, 0.0)
        heapq.heappush(free, (clocks[slot], slot))
    return clocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a JSON report or .jsonl stream with the cases' durations")
    parser.add_argument("--specs", action="append", help="spec paths (default ../shared/corpus)")
    parser.add_argument("--shard", help="--shard I/N of the selection")
    parser.add_argument("--jobs", default="1,2,4,8,16", help="the N of -j N, comma-separated")
    parser.add_argument("--no-heavy", action="store_true", help="every model whole on one slot (as before)")
    parser.add_argument("--split", choices=["claim", "hash", "both"], default="both",
                        help="the -j split to model: models claimed as workers reach them, or the hash")
    args = parser.parse_args()
    if args.no_heavy:
        runner.HEAVY_MODEL_SIZE = 1 << 62
    specs = args.specs or [os.path.join("..", "shared", "corpus")]
    shard = Shard.parse(args.shard) if args.shard else None
    known = load_durations(args.results)
    print(f"{len(known)} durations from {args.results}; specs {' '.join(specs)}; shard {args.shard or 'none'}; "
          f"heavy models {'whole' if args.no_heavy else 'shared'}")
    splits = ["hash", "claim"] if args.split == "both" else [args.split]
    for jobs in (int(j) for j in args.jobs.split(",")):
        for split in splits:
            times = (slot_times if split == "hash" else claimed_slot_times)(specs, shard, jobs, known)
            total, slowest = sum(times), max(times)
            print(f"-j {jobs:2d} {split:5}: case time {total:8.1f} s; slots {min(times):7.1f} to {slowest:7.1f} s; "
                  f"at most {total / slowest:5.2f}x -j 1 (ideal {jobs})", flush=True)


if __name__ == "__main__":
    main()
