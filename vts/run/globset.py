"""Many whole-name globs against many names, at a cost per name that does not grow with the list.

An expected-failures list that ``nnvts expectations update`` writes for a
partial driver holds thousands of entries (3,072 for one vendor's first
corpus run; 40,000 is within reach), and every case of a run asks whether it
is listed.  Asking each entry in turn (``fnmatch`` per entry) made that
quadratic: the run's cost grew with the list, and past 32,768 distinct
patterns ``fnmatch``'s cache of compiled patterns thrashed, so every entry
was compiled again for every case (one spec file: 111.6 s without the list,
510.9 s with it).

Here the list is compiled once:

* an entry without wildcards is an exact name, kept in a dict (one lookup);
* a glob is filed under its literal start (the text before its first
  ``*``, ``?`` or ``[``), and the globs of one start are one compiled
  regular expression; a name looks up each distinct start length (a slice
  and a dict lookup each) and searches only the expressions filed under its
  own prefixes.

So a name costs one dict lookup, a slice per distinct literal-start length
and a search per matching start (``probes`` counts the searches, for the
tests that check the cost does not grow with the list; they count, they do
not time).  Globs that start with a wildcard share one expression, which is
searched for every name: such a list is as slow as its regular expression.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

_WILDCARDS = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` has a wildcard (``*``, ``?`` or ``[``); otherwise it names one case exactly."""
    return _WILDCARDS.search(pattern) is not None


def literal_start(pattern: str) -> str:
    """The text before the first wildcard: every name the glob matches starts with it."""
    match = _WILDCARDS.search(pattern)
    return pattern if match is None else pattern[:match.start()]


@dataclass
class _Bucket:
    """The globs of one literal start: their indices in the list and one expression for all of them."""

    indices: list[int]
    regex: re.Pattern[str]
    #: One expression per glob, compiled when first needed (to tell which glob of the bucket matched).
    singles: dict[int, re.Pattern[str]] = field(default_factory=dict)


class GlobSet:
    """Whole-name globs (``fnmatch`` syntax, case-sensitive) compiled once into one matcher."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns: list[str] = list(patterns)
        #: Searches of a bucket's expression so far (read by tests: the cost per name, counted).
        self.probes = 0
        self._exact: dict[str, list[int]] = {}
        grouped: dict[str, list[int]] = {}
        for index, pattern in enumerate(self.patterns):
            if is_glob(pattern):
                grouped.setdefault(literal_start(pattern), []).append(index)
            else:
                self._exact.setdefault(pattern, []).append(index)
        self._buckets = {start: _Bucket(indices, _combined(self.patterns[i] for i in indices))
                         for start, indices in grouped.items()}
        self._lengths = sorted({len(start) for start in grouped})

    def __len__(self) -> int:
        return len(self.patterns)

    def _candidates(self, name: str) -> Iterable[_Bucket]:
        """The buckets whose literal start is a prefix of ``name``."""
        for length in self._lengths:
            if length > len(name):
                return
            bucket = self._buckets.get(name[:length])
            if bucket is not None:
                yield bucket

    def __call__(self, name: str) -> bool:
        """Whether any pattern matches ``name`` whole."""
        if name in self._exact:
            return True
        for bucket in self._candidates(name):
            self.probes += 1
            if bucket.regex.match(name):
                return True
        return False

    def matching(self, name: str) -> list[int]:
        """The indices of every pattern that matches ``name`` (in list order)."""
        found = list(self._exact.get(name, ()))
        for bucket in self._candidates(name):
            self.probes += 1
            if bucket.regex.match(name):
                found.extend(i for i in bucket.indices if _single(bucket, i, self.patterns).match(name))
        return sorted(found)

    def unmatched_among(self, names: Iterable[str]) -> list[int]:
        """The indices of the patterns that match none of ``names``: one pass over the names.

        A glob is asked alone only about names its bucket matched, and no more once it has matched
        one, so the pass costs about what matching the names costs.
        """
        present = names if isinstance(names, set | frozenset | dict) else set(names)
        hit = {i for name, indices in self._exact.items() if name in present for i in indices}
        waiting = {start: list(bucket.indices) for start, bucket in self._buckets.items()}
        for name in present:
            if not waiting:
                break
            for length in self._lengths:
                if length > len(name):
                    break
                start = name[:length]
                left = waiting.get(start)
                if not left:
                    continue
                bucket = self._buckets[start]
                self.probes += 1
                if not bucket.regex.match(name):
                    continue
                matched = {i for i in left if _single(bucket, i, self.patterns).match(name)}
                hit |= matched
                still = [i for i in left if i not in matched]
                if still:
                    waiting[start] = still
                else:
                    del waiting[start]
        return [i for i in range(len(self.patterns)) if i not in hit]


def _combined(patterns: Iterable[str]) -> re.Pattern[str]:
    """One expression matching a name that any of ``patterns`` matches whole."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def _single(bucket: _Bucket, index: int, patterns: Sequence[str]) -> re.Pattern[str]:
    regex = bucket.singles.get(index)
    if regex is None:
        regex = bucket.singles[index] = re.compile(fnmatch.translate(patterns[index]))
    return regex
