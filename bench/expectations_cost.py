"""What an expected-failures list costs each case of a run, by the size of the list.

Every case of a run asks whether it is listed (``ExpectationList.expects_failure``).
The list ``nnvts expectations update`` writes for a partial driver is mostly
exact names (one per failing case) plus a few globs; this measures, for lists
of 400, 4,000 and 40,000 entries of that shape, the cost per case of

* ``linear``: each entry asked in turn with ``fnmatch`` (what nnvts did
  before ``vts/run/globset.py``; past 32,768 entries ``fnmatch``'s cache of
  compiled patterns thrashes as well);
* ``globset``: the list compiled once (exact names in a dict, globs in one
  expression per literal start).

Names are asked in a realistic mix: listed and unlisted cases of the same
specs.  Run from the repository root (``uptime`` first)::

    .venv/bin/python -m bench.expectations_cost
    .venv/bin/python -m bench.expectations_cost --sizes 40000 --names 2000
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import random
import time
from collections.abc import Callable, Sequence

from vts.run.selection import ExpectationList, glob_escape

OPERATIONS = ("add", "conv_2d", "depthwise_conv_2d", "softmax", "fully_connected", "reshape", "average_pool_2d",
              "concatenation", "mul", "resize_bilinear")
FAMILIES = ("generated", "validation", "deadline", "burst", "fenced", "caching")


def case_names(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct case names shaped like nnvts's (``family/spec.model[_variation]/detail``)."""
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < count:
        op, family = rng.choice(OPERATIONS), rng.choice(FAMILIES)
        model = f"{op}_v1_{rng.randrange(4)}.{op}_{rng.randrange(400)}"
        detail = rng.choice(("", "_quant8", "_float16", "_relaxed", "_nchw_quant8_signed"))
        names.add(f"{family}/{model}{detail}/{rng.choice(('sync', 'async', 'fenced', 'operand_3_type'))}")
    return sorted(names)


def expectation_entries(names: Sequence[str], size: int, seed: int = 1) -> list[str]:
    """A list of ``size`` entries: 98% exact names, 2% globs by family and operation (update's shape)."""
    rng = random.Random(seed)
    globs = max(1, size // 50)
    exact = [glob_escape(n) for n in rng.sample(list(names), size - globs)]
    patterns = [f"{rng.choice(FAMILIES)}/{rng.choice(OPERATIONS)}_v1_{i % 4}.*_{i}*" for i in range(globs)]
    return exact + patterns


def linear(entries: Sequence[str]) -> Callable[[str], bool]:
    """The old matcher: every entry asked in turn."""
    return lambda name: any(fnmatch.fnmatchcase(name, pattern) for pattern in entries)


def per_case(matcher: Callable[[str], bool], names: Sequence[str]) -> float:
    """Seconds per name asked (best of three passes)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for name in names:
            matcher(name)
        best = min(best, (time.perf_counter() - start) / len(names))
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[400, 4000, 40000])
    parser.add_argument("--names", type=int, default=1000, help="names asked per measurement")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}; cost per case asked, best of 3")
    universe = case_names(max(args.sizes) * 2)
    asked = random.Random(2).sample(universe, args.names)
    print(f"{'entries':>8} {'linear':>12} {'globset':>12} {'ratio':>8} {'compile':>10}")
    for size in args.sizes:
        entries = expectation_entries(universe, size)
        start = time.perf_counter()
        compiled = ExpectationList(entries)
        built = time.perf_counter() - start
        # The linear matcher at 40,000 entries costs tens of ms a name: ask it fewer names.
        old = per_case(linear(entries), asked[:max(20, args.names * 400 // size)])
        new = per_case(compiled.expects_failure, asked)
        print(f"{size:>8} {old * 1e3:>9.3f} ms {new * 1e6:>9.2f} µs {old / new:>7.0f}x {built:>8.2f} s")


if __name__ == "__main__":
    main()
