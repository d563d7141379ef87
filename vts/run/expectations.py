"""``nnvts expectations update``: write the expected-failures file from a run.

The file a vendor keeps beside the driver (one whole-name glob per line,
``#`` comments) drifts: cases get fixed, new ones fail.  Updating it by
hand is where typos hide, and with strict matching a stale entry stops the
run.  The update keeps what still holds and says what changed:

* an entry is kept (with its comments) if it matches a case that failed
  or was an expected failure in the results, or matches no case of the
  results at all (it concerns cases this run did not select, a shard);
* an entry whose cases all ran and none failed is dropped (fixed);
* a glob that matches a case that passed is dropped (too broad: it would be
  an unexpected pass), and its failing cases are covered anew;
* the failing cases no kept entry covers are covered by new entries: one
  glob for a prefix of their names (up to a ``/``, ``.`` or ``_``), with
  or without a literal ending (``validation/*.async``), that at least
  ``MIN_GLOB_CASES`` cases share and no case that passed matches (the
  cases of one family and operation, or one check, that fail alike: a bug
  is one line, not hundreds), commented with how many cases it covers and
  the reason most of them give; an exact entry for the rest.

Globs are written only from the results of a whole selection: from a shard,
a ``-k`` or a ``--last-failed`` run a prefix could also cover cases that
run elsewhere and pass, so such results get exact entries (update from the
merged report instead).  Skipped cases may fall under a glob (a skipped
case is never an unexpected pass); when one later runs and passes, the
next update drops the glob as too broad.

Where a root cause (``vts.report.causes``: one operation, operand type,
decisive parameters and kind of failure) covers ``MIN_CAUSE_CASES`` failing
cases or more that no kept entry covers, they are written as one *cause
block*: a ``# cause: <summary>`` line, then the globs (or, from a shard, the
exact names) that cover that cause's failing cases and no passing case and
no failing case of another cause, then a blank line.  So a vendor's list
reads as its bugs, not as thousands of names.  The block is only comments
and blank lines around ordinary entries: any reader of the older format
reads it; an update keeps a block together (a blank line ends it) and drops
it once none of its entries is kept.

Comment lines directly above an entry travel with it; the comment block at
the top of the file stays at the top; the cause blocks follow it, then the
other entries, sorted.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from vts.report.causes import CauseTally
from vts.report.resultsfile import read_results
from vts.results import CaseResult, Verdict
from vts.run.globset import GlobSet, is_glob
from vts.run.selection import glob_escape


@dataclass
class Entry:
    pattern: str
    line: str  # the line as written (pattern and inline comment)
    comments: list[str] = field(default_factory=list)  # comment lines directly above
    #: The ``# cause: ...`` line of the cause block the entry is in ("" for none).
    block: str = ""


@dataclass
class ExpectationsUpdate:
    text: str
    added: list[str]
    dropped: list[str]
    kept: list[str]
    #: Whether new globs could be written (the results are of a whole selection).
    globs_allowed: bool = True
    #: The ``# cause: ...`` lines of the cause blocks written anew.
    causes: list[str] = field(default_factory=list)


#: The comment that starts a cause block (the block ends at the next blank line).
CAUSE_MARK = "# cause:"


def parse_file(text: str) -> tuple[list[str], list[Entry], list[str]]:
    """(header comment block, entries, trailing comments) of an expected-failures file.

    The header is the comment block the file starts with, if a blank line
    ends it; other comment lines belong to the entry below them.
    """
    lines = [line.strip() for line in text.splitlines()]
    header: list[str] = []
    position = 0
    while position < len(lines) and lines[position].startswith("#") and not lines[position].startswith(CAUSE_MARK):
        header.append(lines[position])
        position += 1
    pending: list[str] = []
    if position < len(lines) and lines[position]:
        pending, header = header, []  # no blank line after it: the block comments the first entry
    entries: list[Entry] = []
    block = ""
    for line in lines[position:]:
        pattern = line.split("#", 1)[0].strip()
        if pattern:
            entries.append(Entry(pattern, line, pending, block))
            pending = []
        elif line.startswith(CAUSE_MARK):
            block, pending = line, []
        elif line:
            pending.append(line)
        else:
            block = ""
    return header, entries, pending


def expected_to_fail(verdict: Verdict) -> bool:
    """Verdicts a listed case should keep: failing now, or an expected failure that failed."""
    return (verdict.is_failure and verdict is not Verdict.XPASS) or verdict is Verdict.XFAIL


#: Failing cases a prefix must cover before it is written as one glob instead of exact names.
MIN_GLOB_CASES = 8
#: Failing cases (not yet covered) a root cause must have to be written as a cause block.
MIN_CAUSE_CASES = 8
#: Within a cause block a glob over one model's checks (``family/model.variant.*``: no literal ending, a
#: ``.`` after the last ``/``) may cover this few cases, since the block's comment already says what they
#: share; any other glob still needs ``MIN_GLOB_CASES`` (it spans models, and so models added later).
MIN_CAUSE_GLOB_CASES = 4
_SEPARATORS = "/._"


@dataclass
class _Run:
    """What update needs of a results file: every name that ran, which failed, why, and the selection."""

    ran: list[str] = field(default_factory=list)  # sorted once read
    failing: dict[str, str] = field(default_factory=dict)  # name -> reason
    passing: set[str] = field(default_factory=set)  # ran and neither failed nor skipped
    labels: dict[str, str] = field(default_factory=dict)  # name -> "family: OPERATION TYPE"
    whole: bool = True  # the results are of a whole selection (no shard, -k or --last-failed)
    causes: CauseTally = field(default_factory=CauseTally)  # of the failing cases
    cause_of: dict[str, Hashable] = field(default_factory=dict)  # failing name -> its group in ``causes``


def _read_run(results_path: str) -> _Run:
    run = _Run()
    meta, results = read_results(results_path)
    for result in results:
        run.ran.append(result.name)
        if expected_to_fail(result.verdict):
            run.failing[result.name] = result.reason
            subject = " ".join([*result.operations[:1], *result.operand_types[:1]])
            run.labels[result.name] = f"{result.family}: {subject}" if subject else result.family
            run.cause_of[result.name] = run.causes.add(_as_failure(result))
        elif result.verdict is not Verdict.SKIPPED:
            run.passing.add(result.name)
    run.ran.sort()
    selection = meta.header.get("selection") or {}
    ci = meta.header.get("ci") or {}
    run.whole = not (isinstance(selection, dict) and (selection.get("shard") or selection.get("keyword"))) \
        and not (isinstance(ci, dict) and (ci.get("last_failed") or ci.get("shard_plan")))
    return run


def _as_failure(result: CaseResult) -> CaseResult:
    """An expected failure as the failure it was, for its cause (the reason without "expected failure: ")."""
    if result.verdict is not Verdict.XFAIL:
        return result
    return dataclasses.replace(result, verdict=Verdict.FAILED, reason=result.reason.removeprefix("expected failure: "))


def update_expectations(results_path: str, existing: str | None) -> ExpectationsUpdate:
    run = _read_run(results_path)
    header, entries, trailer = parse_file(existing or "")
    kept: list[Entry] = []
    dropped: list[str] = []
    covered: set[str] = set()
    for entry, matched in zip(entries, _matches(entries, run.ran), strict=True):
        matches_failing = [n for n in matched if n in run.failing]
        too_broad = is_glob(entry.pattern) and any(n in run.passing for n in matched)
        if (matches_failing or not matched) and not too_broad:
            kept.append(entry)
            covered.update(matches_failing)
        else:
            dropped.append(entry.pattern + (" (too broad: it matches cases that passed)" if too_broad else ""))
    uncovered = sorted(set(run.failing) - covered)
    passing = _Candidates(run.passing)
    blocks, rest = _cause_blocks(uncovered, run, passing)
    if run.whole:  # a loose glob takes in no case of a block
        loose = _new_entries(rest, run, passing, _Candidates(set(uncovered)) if len(rest) < len(uncovered) else None)
    else:
        loose = [Entry(glob_escape(n), glob_escape(n)) for n in rest]
    added = [entry for entries_of in blocks.values() for entry in entries_of] + loose
    lines = list(header)
    if header:
        lines.append("")
    grouped: dict[str, list[Entry]] = {}
    for entry in [*kept, *added]:
        grouped.setdefault(entry.block, []).append(entry)
    for mark, members in grouped.items():
        if not mark:
            continue
        lines.append(mark)
        for entry in sorted(members, key=lambda e: e.pattern):
            lines.extend(entry.comments)
            lines.append(entry.line)
        lines.append("")
    for entry in sorted(grouped.get("", []), key=lambda e: e.pattern):
        lines.extend(entry.comments)
        lines.append(entry.line)
    if set(grouped) - {""} and not grouped.get("") and not trailer:
        lines.pop()  # the blank line after the last block ends the file
    lines.extend(trailer)
    return ExpectationsUpdate("\n".join(lines) + "\n" if lines else "", [e.pattern for e in added], dropped,
                              [e.pattern for e in kept], run.whole, list(blocks))


def _cause_blocks(uncovered: list[str], run: _Run, passing: _Candidates) -> tuple[dict[str, list[Entry]], list[str]]:
    """The cause blocks for the uncovered failing cases (``# cause:`` line -> entries) and the cases left out.

    A cause with ``MIN_CAUSE_CASES`` uncovered cases or more gets a block, most cases first: globs that
    match its failing cases and no passing case nor a failing case of another cause (exact names where
    the results are not of a whole selection).
    """
    members: dict[Hashable, list[str]] = {}
    for name in uncovered:
        members.setdefault(run.cause_of.get(name), []).append(name)
    blocks: dict[str, list[Entry]] = {}
    placed: set[str] = set()
    everyone: _Candidates | None = None
    for cause, keys in run.causes.causes_with_keys():
        if cause.summary.startswith("(other causes"):
            continue  # pooled past the tally's cap: not one cause
        mine = sorted(name for key in keys for name in members.get(key, ()))
        if len(mine) < MIN_CAUSE_CASES:
            continue
        listed = "" if len(mine) == cause.cases else f"; {len(mine):,} listed here"
        mark = f"{CAUSE_MARK} {cause.summary}{listed} (rerun: {cause.example})"
        if run.whole:
            everyone = everyone or _Candidates(set(run.failing))
            entries = _new_entries(mine, run, passing, everyone, MIN_CAUSE_GLOB_CASES)
        else:
            entries = [Entry(glob_escape(n), glob_escape(n)) for n in mine]
        for entry in entries:
            entry.block = mark
        blocks[mark] = entries
        placed.update(mine)
    return blocks, [name for name in uncovered if name not in placed]


def _matches(entries: list[Entry], ran: list[str]) -> list[list[str]]:
    """The ran names each entry matches (one pass over the names for all the entries)."""
    matcher = GlobSet(e.pattern for e in entries)
    found: list[list[str]] = [[] for _ in entries]
    for name in ran:
        for index in matcher.matching(name):
            found[index].append(name)
    return found


def _tails(name: str) -> tuple[str, ...]:
    """The endings a glob may keep literal after its ``*``: from the last ``.`` and from the last ``_``.

    The last part of a name says which check of a model's cases it is (``.async``, ``_unlimited``): a
    bug fails that check for many models, so ``validation/*.async`` can name hundreds of failures that
    no prefix alone can without taking in cases that pass.
    """
    return tuple(sorted((name[i:] for i in {name.rfind("."), name.rfind("_")} if i > 0), key=len))


class _Candidates:
    """Names by ending, sorted, to count what a glob ``PREFIX*ENDING`` would take in with a bisection."""

    def __init__(self, names: set[str]) -> None:
        by_tail: dict[str, list[str]] = {"": sorted(names)}
        for name in names:
            for tail in _tails(name):
                by_tail.setdefault(tail, []).append(name)
        for tail, listed in by_tail.items():
            if tail:
                listed.sort()
        self.by_tail = by_tail

    def with_prefix(self, prefix: str, tail: str) -> list[str]:
        """The names with ``prefix`` and ``tail`` that the glob matches (the two not overlapping)."""
        listed = self.by_tail.get(tail, [])
        first = bisect.bisect_left(listed, prefix)
        end = bisect.bisect_left(listed, prefix + "\U0010ffff")
        return [n for n in listed[first:end] if len(n) >= len(prefix) + len(tail)]

    def count(self, prefix: str, tail: str) -> int:
        """At most how many names ``with_prefix`` gives (without reading them)."""
        listed = self.by_tail.get(tail, [])
        return bisect.bisect_left(listed, prefix + "\U0010ffff") - bisect.bisect_left(listed, prefix)


def _new_entries(uncovered: list[str], run: _Run, passing: _Candidates, everyone: _Candidates | None,
                 min_cases: int = MIN_GLOB_CASES) -> list[Entry]:
    """Globs (``PREFIX*`` or ``PREFIX*ENDING``) for many uncovered cases that no passing case matches, nor
    any case of ``everyone`` (the failing cases, ``uncovered`` among them) but ``uncovered``; exact
    entries for the rest.  Greedy: each case not yet covered takes the glob that covers most (on a tie the
    shortest ending, then the shortest prefix: the most general glob that is still exact)."""
    failing = _Candidates(set(uncovered))

    def need(prefix: str, tail: str) -> int:
        """Fewer than ``MIN_GLOB_CASES`` only for ``PREFIX*`` where the prefix names a whole model (a ``.``
        after its last ``/``): ``family/average_*`` would take in whatever model is named so later."""
        one_model = not tail and "." in prefix[prefix.rfind("/") + 1:]
        return min_cases if one_model else max(min_cases, MIN_GLOB_CASES)

    def blocked(prefix: str, tail: str) -> bool:
        # ``everyone`` holds ``uncovered``: more of its names with the prefix and ending is another's case
        # (or one whose ending overlaps the prefix, which the glob would not match: refused all the same).
        if everyone is not None and everyone.count(prefix, tail) > failing.count(prefix, tail):
            return True
        return passing.count(prefix, tail) > 0 and bool(passing.with_prefix(prefix, tail))

    entries: list[Entry] = []
    done: set[str] = set()
    for name in uncovered:
        if name in done:
            continue
        best: tuple[int, str, str] | None = None
        for tail in ("", *_tails(name)):
            for cut in (i + 1 for i, c in enumerate(name[:len(name) - len(tail)]) if c in _SEPARATORS):
                prefix = name[:cut]
                bound = failing.count(prefix, tail)
                if bound >= need(prefix, tail) and (best is None or bound > best[0]) and not blocked(prefix, tail):
                    best = (bound, prefix, tail)
        members = [] if best is None else [n for n in failing.with_prefix(best[1], best[2]) if n not in done]
        if best is None or len(members) < need(best[1], best[2]):
            entries.append(Entry(glob_escape(name), glob_escape(name)))
            done.add(name)
            continue
        done.update(members)
        pattern = glob_escape(best[1]) + "*" + glob_escape(best[2])
        entries.append(Entry(pattern, pattern, [_describe(members, run)]))
    return entries


def _describe(members: list[str], run: _Run) -> str:
    """``# 124 failing cases (generated: SOFTMAX TENSOR_FLOAT32), most: <reason>``: the comment above a glob."""
    labels = Counter(run.labels[n] for n in members).most_common(2)
    reason, count = Counter(run.failing[n] for n in members).most_common(1)[0]
    label = "; ".join(label for label, _ in labels) + ("; ..." if len(set(run.labels[n] for n in members)) > 2 else "")
    said = "all" if count == len(members) else f"{count}"
    return f"# {len(members)} failing cases ({label}); {said}: {' '.join(reason.split())[:140]}"
