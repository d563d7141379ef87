"""``nnvts merge``: shard results joined into one set of reports, with a coverage check.

A run spread over a farm (``--shard I/N`` per job) is only a run if every
selected case ran exactly once.  A shard job that died, a shard given
twice, or shards run with a different ``-k`` are silent gaps in a plain
concatenation; here they are named: cases of the selection no shard ran
(*missing*), cases two shards ran (*duplicate*, the first is kept), and
cases no shard should have run (*unexpected*).  The merged reports are
still written, so nothing that ran is lost; the exit status says the run
is not whole.  Shards of different drivers, or of one driver given
different ``--driver-option``, are no one run at all: refused before
anything is written (``DriverMismatch``, exit status 2).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vts.report.header import MAX_DESCRIBED, describe_options, driver_of, driver_options, options_problem
from vts.report.resultsfile import ResultsFileError, ResultsMeta, iter_results, read_results
from vts.report.sanitize import cut
from vts.results import CaseResult


@dataclass
class Coverage:
    missing: list[str] = field(default_factory=list)
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # case -> every file that has it
    unexpected: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # files cut short (killed) or interrupted

    @property
    def whole(self) -> bool:
        return not (self.missing or self.duplicates or self.unexpected or self.incomplete)

    def to_json(self) -> dict[str, Any]:
        return {"missing": len(self.missing), "duplicates": len(self.duplicates), "unexpected": len(self.unexpected),
                "incomplete_files": self.incomplete}

    def lines(self, limit: int = 20) -> list[str]:
        out: list[str] = []
        for label, names in (("missing (selected, but in no shard)", self.missing),
                             ("duplicate (in more than one shard)", sorted(self.duplicates)),
                             ("unexpected (in a shard, but not selected)", self.unexpected)):
            if names:
                out.append(f"{len(names)} {label}:")
                for name in names[:limit]:
                    where = f"  ({', '.join(self.duplicates[name])})" if name in self.duplicates else ""
                    out.append(f"  {name}{where}")
                if len(names) > limit:
                    out.append(f"  ... and {len(names) - limit} more")
        for path in self.incomplete:
            out.append(f"incomplete shard file (killed or interrupted): {path}")
        return out


class DriverMismatch(ResultsFileError):
    """Shards run with different drivers, or one driver configured differently: not parts of one run.

    A ``ResultsFileError`` (exit status 2, nothing written), naming the
    later shard, then the first: their results would be reported as one
    driver's, under the first shard's header.
    """

    def __init__(self, path: str, first: str, what: str, value: str, first_value: str) -> None:
        super().__init__(path, None, f"run with {what} {value}, but {first} with {what} {first_value}: "
                                     "merge only shards of one driver and one set of --driver-option")


class SelectionMismatch(ValueError):
    """Shards whose headers record different selections: no one selection to check coverage against."""


#: The header's selection keys that every shard shares (``shard`` is what differs between them).
SHARED_SELECTION_KEYS = ("specs", "families", "keyword")


def _header(path: str) -> dict[str, Any]:
    """The header of a results file, through the one bounded reader (a stream: up to its first case)."""
    meta, results = read_results(path)
    next(iter(results), None)  # a stream's header is read with its first record
    return meta.header


def shards_selection(paths: Sequence[str]) -> dict[str, Any] | None:
    """The selection every shard recorded in its header (specs, families, keyword), without the shard.

    ``nnvts merge`` checks coverage against it, so the shards' ``--specs``
    need not be repeated.  None when no file records one (then the default
    selection applies, as before headers carried it).  Raises
    ``SelectionMismatch`` naming two files whose selections differ: there is
    no one selection those shards are parts of.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        try:
            header = _header(path)
        except (OSError, ValueError) as error:
            raise ResultsFileError(path, 1, f"unreadable header: {error}") from None
        selection = header.get("selection")
        if selection is None:
            found.append((path, {}))
            continue
        if not isinstance(selection, dict):
            raise ResultsFileError(path, 1, "the header's selection is not an object")
        found.append((path, {k: selection[k] for k in SHARED_SELECTION_KEYS if selection.get(k)}))
    if not any(selection for _, selection in found):
        return None
    first_path, first = found[0]
    for path, selection in found[1:]:
        if selection != first:
            raise SelectionMismatch(f"the shards were run with different selections: {first_path} "
                                    f"{_describe(first)} but {path} {_describe(selection)}; give --specs, -k "
                                    "and --family to merge them against one selection")
    return first


def _describe(selection: dict[str, Any]) -> str:
    return "(" + (", ".join(f"{k} {selection[k]!r}" for k in SHARED_SELECTION_KEYS if k in selection)
                  or "the default selection") + ")"


def check_driver(meta: ResultsMeta, first: ResultsMeta | None) -> None:
    """Refuse a header whose driver options are not an object of strings, or whose driver (its ``ref``
    and options: absent ones are none) is not ``first``'s; ``first`` None: the file stands alone."""
    options = driver_options(meta.header)
    problem = options_problem(options)
    if problem is not None:
        raise ResultsFileError(meta.path, None, problem)
    if first is None:
        return
    ref, first_ref = driver_of(meta.header).get("ref"), driver_of(first.header).get("ref")
    if ref != first_ref:
        raise DriverMismatch(meta.path, first.path, "driver", _describe_ref(ref), _describe_ref(first_ref))
    first_options = driver_options(first.header)
    if options != first_options:
        raise DriverMismatch(meta.path, first.path, "driver options", describe_options(options),
                             describe_options(first_options))


def _describe_ref(ref: object) -> str:
    """A driver reference for a one-line message: quoted, escaped, bounded."""
    return "(none recorded)" if ref is None else cut(json.dumps(ref, ensure_ascii=True), MAX_DESCRIBED)


def survey(paths: Sequence[str], expected: Iterable[str] | None) -> tuple[list[ResultsMeta], Coverage]:
    """Read every file to the end, strictly, and check coverage; nothing is written yet.

    A malformed file (``ResultsFileError``) thus stops the merge before any
    output, and the reports can say in their header what the merge found.
    ``expected`` is every case name of the selection (None: only
    duplicates are checked).  Every file must have been run with the
    first one's driver and driver options (``check_driver``).
    """
    coverage = Coverage()
    metas: list[ResultsMeta] = []
    seen: dict[str, str] = {}
    for path in paths:
        meta, results = read_results(path)
        for result in results:
            first = seen.get(result.name)
            if first is not None:
                coverage.duplicates.setdefault(result.name, [first]).append(path)
            else:
                seen[result.name] = path
        check_driver(meta, metas[0] if metas else None)
        if not meta.complete or meta.interrupted:
            coverage.incomplete.append(path)
        metas.append(meta)
    if expected is not None:
        wanted = set(expected)
        coverage.missing = sorted(wanted.difference(seen))
        coverage.unexpected = sorted(set(seen).difference(wanted))
    return metas, coverage


def merge_results(paths: Sequence[str], sink: Any) -> None:
    """Feed each case of ``paths`` to ``sink.add`` once (a duplicate's first record wins)."""
    seen: set[str] = set()
    for path in paths:
        for result in iter_results(path):
            if result.name not in seen:
                seen.add(result.name)
                sink.add(result)


def merged_header(metas: Sequence[ResultsMeta], coverage: Coverage, argv: Sequence[str]) -> dict[str, Any]:
    """The first shard's header (driver, versions), plus where the merge came from and what it found."""
    base = {k: v for k, v in (metas[0].header if metas else {}).items() if k != "nnvts_results"}
    base["argv"] = list(argv)
    base["merged_from"] = [m.path for m in metas]
    base["merge"] = coverage.to_json()
    base["merged"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return base


class Collect:
    """A sink that remembers verdicts (for the exit status) and forwards results."""

    def __init__(self, inner: Sequence[Any], transform: Callable[[CaseResult], CaseResult] | None = None) -> None:
        self.inner = list(inner)
        self.transform = transform
        self.failing = 0
        self.total = 0

    def add(self, result: CaseResult) -> None:
        if self.transform is not None:
            result = self.transform(result)
        self.total += 1
        self.failing += result.verdict.is_failure
        for sink in self.inner:
            sink.add(result)

    def finish(self, interrupted: bool) -> None:
        for sink in self.inner:
            sink.finish(interrupted)
