"""Shards balanced by stored case durations (``--durations-from``, ``--store-durations``).

A hash split gives every shard the same *number* of cases, but a farm
waits for its slowest board: one validation sweep of a big model takes as
long as a thousand small cases.  Balancing by durations is the greedy
longest-processing-time rule (the one pytest-split and OpenVINO's runner
use): cases sorted by stored duration, longest first, each given to the
shard with the least total so far.  It is deterministic (ties broken by
name, then by shard number), so every shard job computes the same plan
from the same inputs without talking to the others, and each case lands in
exactly one shard.  Cases without a stored duration weigh the mean of the
known ones (or 1 s when none are known).

Durations files are small JSON documents
(``{"nnvts_durations": 1, "durations": {name: seconds}}``); any results
file (stream or JSON report) serves as well.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterable, Mapping

from vts.report.resultsfile import ResultsFileError, iter_results, load_document

DURATIONS_FORMAT = 1
UNKNOWN_WEIGHT = 1.0


def load_durations(path: str) -> dict[str, float]:
    """Per-case seconds from a durations file or a results file (stream or JSON report)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError as error:
        raise ResultsFileError(path, None, error.strerror or str(error)) from None
    if b'"nnvts_durations"' in head:
        return _read_durations_file(path)
    return {result.name: result.duration for result in iter_results(path)}


def _read_durations_file(path: str) -> dict[str, float]:
    document = load_document(path, "durations file")
    durations = document.get("durations") if isinstance(document, dict) else None
    if not isinstance(durations, dict) or not all(
            isinstance(v, int | float) and v >= 0 for v in durations.values()):
        raise ResultsFileError(path, None, 'expected {"durations": {case name: seconds >= 0}}')
    return {str(k): float(v) for k, v in durations.items()}


def store_durations(path: str, measured: Mapping[str, float]) -> None:
    """Update ``path`` with ``measured`` (cases that did not run keep their stored value)."""
    stored = _read_durations_file(path) if os.path.exists(path) else {}
    stored.update(measured)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump({"nnvts_durations": DURATIONS_FORMAT,
                   "durations": {k: round(stored[k], 6) for k in sorted(stored)}}, out, indent=0)
        out.write("\n")
    os.replace(tmp, path)


def plan_shards(names: Iterable[str], durations: Mapping[str, float], count: int) -> dict[str, int]:
    """Case name -> shard number (0-based) by greedy longest-first packing on the stored durations."""
    unique = sorted(set(names))
    known = [durations[n] for n in unique if n in durations]
    fallback = sum(known) / len(known) if known else UNKNOWN_WEIGHT
    weighted = sorted(((durations.get(n, fallback), n) for n in unique), key=lambda item: (-item[0], item[1]))
    loads = [(0.0, shard) for shard in range(count)]  # a heap of (total seconds, shard number)
    plan: dict[str, int] = {}
    for weight, name in weighted:
        total, shard = heapq.heappop(loads)
        plan[name] = shard
        heapq.heappush(loads, (total + weight, shard))
    return plan


def shard_loads(plan: Mapping[str, int], durations: Mapping[str, float], count: int) -> list[float]:
    """Stored seconds per shard of a plan (cases without a duration count as the mean)."""
    known = [durations[n] for n in plan if n in durations]
    fallback = sum(known) / len(known) if known else UNKNOWN_WEIGHT
    loads = [0.0] * count
    for name, shard in plan.items():
        loads[shard] += durations.get(name, fallback)
    return loads
