"""``nnvts expectations update``: write the expected-failures file from a run.

The file a vendor keeps beside the driver (one whole-name glob per line,
``#`` comments) drifts: cases get fixed, new ones fail.  Updating it by
hand is where typos hide, and with strict matching a stale entry stops the
run.  The update keeps what still holds and says what changed:

* an entry is kept (with its comments) if it matches a case that failed
  or was an expected failure in the results, or matches no case of the
  results at all (it concerns cases this run did not select, a shard);
* an entry whose cases all ran and none failed is dropped (fixed);
* a failing case no kept entry covers gets a new exact entry.

Comment lines directly above an entry travel with it; the comment block at
the top of the file stays at the top; entries are sorted.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from vts.report.resultsfile import iter_results
from vts.results import Verdict
from vts.run.selection import glob_escape


@dataclass
class Entry:
    pattern: str
    line: str  # the line as written (pattern and inline comment)
    comments: list[str] = field(default_factory=list)  # comment lines directly above


@dataclass
class ExpectationsUpdate:
    text: str
    added: list[str]
    dropped: list[str]
    kept: list[str]


def parse_file(text: str) -> tuple[list[str], list[Entry], list[str]]:
    """(header comment block, entries, trailing comments) of an expected-failures file.

    The header is the comment block the file starts with, if a blank line
    ends it; other comment lines belong to the entry below them.
    """
    lines = [line.strip() for line in text.splitlines()]
    header: list[str] = []
    position = 0
    while position < len(lines) and lines[position].startswith("#"):
        header.append(lines[position])
        position += 1
    pending: list[str] = []
    if position < len(lines) and lines[position]:
        pending, header = header, []  # no blank line after it: the block comments the first entry
    entries: list[Entry] = []
    for line in lines[position:]:
        pattern = line.split("#", 1)[0].strip()
        if pattern:
            entries.append(Entry(pattern, line, pending))
            pending = []
        elif line:
            pending.append(line)
    return header, entries, pending


def expected_to_fail(verdict: Verdict) -> bool:
    """Verdicts a listed case should keep: failing now, or an expected failure that failed."""
    return (verdict.is_failure and verdict is not Verdict.XPASS) or verdict is Verdict.XFAIL


def update_expectations(results_path: str, existing: str | None) -> ExpectationsUpdate:
    failing: set[str] = set()
    ran: set[str] = set()
    for result in iter_results(results_path):
        ran.add(result.name)
        if expected_to_fail(result.verdict):
            failing.add(result.name)
    header, entries, trailer = parse_file(existing or "")
    kept: list[Entry] = []
    dropped: list[str] = []
    covered: set[str] = set()
    for entry in entries:
        matches_ran = [n for n in ran if fnmatch.fnmatchcase(n, entry.pattern)] \
            if any(c in entry.pattern for c in "*?[") else ([entry.pattern] if entry.pattern in ran else [])
        matches_failing = [n for n in matches_ran if n in failing]
        if matches_failing or not matches_ran:
            kept.append(entry)
            covered.update(matches_failing)
        else:
            dropped.append(entry.pattern)
    added = sorted(failing - covered)
    entries_out = kept + [Entry(glob_escape(name), glob_escape(name)) for name in added]
    entries_out.sort(key=lambda e: e.pattern)
    lines = list(header)
    if header:
        lines.append("")
    for entry in entries_out:
        lines.extend(entry.comments)
        lines.append(entry.line)
    lines.extend(trailer)
    return ExpectationsUpdate("\n".join(lines) + "\n" if lines else "", added, dropped,
                              [e.pattern for e in kept])
