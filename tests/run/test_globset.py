"""The compiled expected-failures matcher: the answers of fnmatch, at a cost that does not grow with the list.

The cost is counted (expressions searched per name, ``GlobSet.probes``), never timed.
"""

from __future__ import annotations

import fnmatch
import random

from vts.run.globset import GlobSet, is_glob, literal_start
from vts.run.selection import ExpectationList, glob_escape

NAMES = [f"{family}/{op}_v1_{v}.{op}_{i}{tail}"
         for family in ("generated", "validation", "deadline")
         for op in ("add", "conv_2d", "softmax")
         for v in range(3) for i in range(12) for tail in ("", "_quant8", "/sync")]


def _patterns(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    exact = [glob_escape(n) for n in rng.sample(NAMES, min(count // 2, len(NAMES)))]
    shapes = ("{f}/{o}_v1_{v}.*", "{f}/{o}_v1_*_quant8", "{f}/*softmax_{i}", "*/{o}_v1_{v}.{o}_{i}?*",
              "{f}/{o}_v1_[01].{o}_{i}", "{f}/{o}_v1_[!0].*/sync", "never/{o}_{i}*")
    globs = []
    while len(exact) + len(globs) < count:
        globs.append(rng.choice(shapes).format(f=rng.choice(("generated", "validation", "deadline")),
                                               o=rng.choice(("add", "conv_2d", "softmax")),
                                               v=rng.randrange(3), i=rng.randrange(12)))
    return exact + globs


def test_answers_as_fnmatch_does():
    patterns = _patterns(300)
    matcher = GlobSet(patterns)
    for name in [*NAMES, "odd[1]*name?", "", "generated"]:
        expected = [i for i, p in enumerate(patterns) if fnmatch.fnmatchcase(name, p)]
        assert matcher.matching(name) == expected, name
        assert matcher(name) == bool(expected), name


def test_unmatched_among_names_what_matches_nothing():
    patterns = _patterns(200, seed=3)
    names = NAMES[::2]
    expected = [i for i, p in enumerate(patterns) if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    assert expected  # the "never/..." globs and the exact names of the other half
    assert GlobSet(patterns).unmatched_among(names) == expected


def test_special_characters_are_globs_or_exact_as_written():
    assert not is_glob("add.add") and is_glob("add.*") and is_glob("odd[[]1]")
    assert literal_start("conv.nhwc_*_quant8") == "conv.nhwc_"
    matcher = GlobSet([glob_escape("odd[1]*name?"), "conv.*_quant8", "add"])
    assert matcher("odd[1]*name?") and not matcher("odd1xname!")
    assert matcher("conv.nhwc_quant8") and not matcher("conv.nhwc_quant8_signed")
    assert matcher("add") and not matcher("add.add")  # an exact entry is a whole name, not a substring


def _probes_per_name(size: int) -> float:
    expectations = ExpectationList(_patterns(size, seed=size))
    for name in NAMES:
        expectations.expects_failure(name)
    return expectations.matcher.probes / len(NAMES)


def test_a_case_costs_the_same_with_a_hundred_or_ten_thousand_entries():
    """Searches per case, counted: a list 100 times longer must not search more than a handful more.

    The old matcher asked every entry for every case (10,000 searches a case at 10,000 entries); the
    compiled one searches only the expressions filed under the name's own prefixes.
    """
    small, large = _probes_per_name(100), _probes_per_name(10_000)
    assert large <= 8, large  # bounded by the distinct literal starts a name can have, not by the list
    assert large <= small + 4, (small, large)


def test_finding_unmatched_entries_is_one_pass_over_the_names():
    patterns = _patterns(5_000, seed=9)
    matcher = GlobSet(patterns)
    matcher.unmatched_among(NAMES)
    assert matcher.probes <= 8 * len(NAMES)  # not entries x names
