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
anything is written (``DriverMismatch``, exit status 2).  So are shards of
different nnvts versions or selections (``RunMismatch``), unless the merge
is told they are mixed on purpose (``--allow-mixed``).  The merged header
says what the merged run was: its selection (not the first shard's
``shard``), the shards' durations summed and the wall time from the first
start to the last end.
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


class RunMismatch(ResultsFileError):
    """Shards of one driver, but of different nnvts versions or selections: not parts of one run.

    ``nnvts merge --allow-mixed`` merges them anyway (a shard re-run with a newer nnvts; two selections
    reported as one); otherwise exit status 2 before anything is written, naming the field.
    """

    def __init__(self, path: str, first: str, what: str, value: object, first_value: object) -> None:
        super().__init__(path, None, f"run with {what} {_describe_value(value)}, but {first} with {what} "
                                     f"{_describe_value(first_value)}: merge only shards of one run, or give "
                                     "--allow-mixed to merge them anyway")
        self.field = what


def _describe_value(value: object) -> str:
    return "(none recorded)" if value in (None, {}) else cut(json.dumps(value, ensure_ascii=True, sort_keys=True),
                                                             MAX_DESCRIBED)


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
                                    f"{_describe(first)} but {path} {_describe(selection)}; give --allow-mixed "
                                    "(with --specs, -k and --family) to merge them against one selection")
    return first


def shared_selection(header: dict[str, Any]) -> dict[str, Any]:
    """A header's selection without its shard: what every shard of one run shares (``{}``: none recorded)."""
    selection = header.get("selection")
    if not isinstance(selection, dict):
        return {}
    return {k: selection[k] for k in SHARED_SELECTION_KEYS if selection.get(k)}


def check_run(meta: ResultsMeta, first: ResultsMeta) -> None:
    """Refuse a shard whose nnvts version or selection (its shard aside) is not ``first``'s (``RunMismatch``)."""
    version, first_version = meta.header.get("nnvts_version"), first.header.get("nnvts_version")
    if version != first_version:
        raise RunMismatch(meta.path, first.path, "nnvts version", version, first_version)
    selection, first_selection = shared_selection(meta.header), shared_selection(first.header)
    if selection != first_selection:
        raise RunMismatch(meta.path, first.path, "selection", selection, first_selection)


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


def survey(paths: Sequence[str], expected: Iterable[str] | None, allow_mixed: bool = False
           ) -> tuple[list[ResultsMeta], Coverage]:
    """Read every file to the end, strictly, and check coverage; nothing is written yet.

    A malformed file (``ResultsFileError``) thus stops the merge before any
    output, and the reports can say in their header what the merge found.
    ``expected`` is every case name of the selection (None: only
    duplicates are checked).  Every file must have been run with the
    first one's driver and driver options (``check_driver``) and, unless
    ``allow_mixed``, its nnvts version and selection (``check_run``).
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
        if metas and not allow_mixed:
            check_run(meta, metas[0])
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


def merged_header(metas: Sequence[ResultsMeta], coverage: Coverage, argv: Sequence[str],
                  selection: dict[str, Any] | None = None) -> dict[str, Any]:
    """The first shard's header (driver, versions), made the merged run's, plus where the merge came from.

    The merged run's selection is ``selection`` (what coverage was checked against) or the shards' shared
    one, never the first shard's ``shard``; with shards of several selections or nnvts versions
    (``--allow-mixed``) every one is listed.  ``started`` is the first shard's start, ``durations`` says
    what the shards took (``merged_durations``).
    """
    base = {k: v for k, v in (metas[0].header if metas else {}).items() if k != "nnvts_results"}
    selections = _distinct(shared_selection(m.header) for m in metas)
    merged_selection = selection if selection is not None else selections[0] if len(selections) == 1 else None
    if merged_selection is not None:
        base["selection"] = merged_selection
    else:
        base["selection"] = {"mixed": selections}
    versions = _distinct(m.header.get("nnvts_version") for m in metas)
    if len(versions) > 1:
        base["nnvts_version"] = versions
    ci = base.get("ci")
    if isinstance(ci, dict) and "shard_plan" in ci:  # the first shard's part of the plan, not the merged run's
        base["ci"] = {k: v for k, v in ci.items() if k != "shard_plan"}
    durations = merged_durations(metas)
    if durations.get("started") is not None:
        base["started"] = durations["started"]
    base["durations"] = durations
    base["argv"] = list(argv)
    base["merged_from"] = [m.path for m in metas]
    base["merge"] = coverage.to_json()
    base["merged"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return base


def _distinct(values: Iterable[Any]) -> list[Any]:
    found: list[Any] = []
    for value in values:
        if value not in found:
            found.append(value)
    return found


def merged_durations(metas: Sequence[ResultsMeta]) -> dict[str, Any]:
    """What the shards took: ``sum`` of their durations (CPU-slot time, what a farm pays), ``wall`` from the
    first start to the last end (what the people waiting saw), and those two instants.

    A shard that recorded no duration (killed) counts nothing in ``sum``; ``wall`` is None when any shard
    lacks its start or end (it would understate), as are the instants then.
    """
    total = 0.0
    starts: list[datetime.datetime] = []
    ends: list[datetime.datetime] = []
    for meta in metas:
        duration = (meta.footer or {}).get("duration")
        if isinstance(duration, int | float) and not isinstance(duration, bool) and 0 <= duration <= MAX_DURATION:
            total += duration
        start, end = _instant(meta.header.get("started")), _instant((meta.footer or {}).get("finished"))
        if start is not None:
            starts.append(start)
        if end is not None:
            ends.append(end)
    whole = len(starts) == len(metas) and len(ends) == len(metas) and metas
    wall = max(0.0, (max(ends) - min(starts)).total_seconds()) if whole else None
    return {"sum": round(total, 3), "wall": wall,
            "started": min(starts).isoformat(timespec="seconds") if starts else None,
            "finished": max(ends).isoformat(timespec="seconds") if whole else None}


#: A shard's duration taken at its word up to this (seconds): a file may claim anything.
MAX_DURATION = 1e9


def _instant(text: object) -> datetime.datetime | None:
    """An ISO time from a results file (None when absent or malformed; naive ones read as UTC)."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.UTC)


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
