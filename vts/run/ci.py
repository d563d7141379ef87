"""The CI side of ``nnvts run``: strict expectations, balanced shards, last-failed, re-runs, baselines.

``prepare_ci`` runs before the driver starts and may refuse the run (a
``CiInputError``: exit status 2, nothing run, nothing written).  What it
decides (``CiRun``) is a filter that replaces the shard, the reports'
header fields, and the run extensions (``vts.run.extensions``) that
``vts.run.assemble`` puts in front of the sinks and asks for the exit
status.  ``-j`` workers need only the filter, which travels in their
``WorkerContext`` as plain picklable data.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vts.bounds import shown
from vts.report.baseline import Baseline
from vts.report.resultsfile import ResultsFileError, iter_results
from vts.results import Verdict
from vts.run.extensions import BaselineGate, DurationStore, FlakyGate, RunExtension
from vts.run.selection import ExpectationList, NameFilter, Shard, decide_unit


class CiInputError(ValueError):
    """A CI option that cannot be honoured (usage or input error: exit status 2)."""


@dataclass
class CiOptions:
    durations_from: str | None = None
    store_durations: str | None = None
    last_failed: str | None = None
    reruns: int = 0
    fail_on_flaky: bool = False
    baseline: str | None = None
    #: "any": every failing case fails the run; "new": only failures the baseline did not have.
    fail_on: str = "any"
    #: A case that passed in the baseline and is skipped now fails the run (coverage lost).
    fail_on_lost_coverage: bool = False
    #: An expected-failure entry that matches no selected case is an error (else a warning).
    strict_expectations: bool = True


@dataclass(frozen=True)
class AllOf:
    """Several name predicates at once (a shard and a last-failed set); picklable for workers."""

    parts: tuple[Any, ...]

    def __call__(self, name: str) -> bool:
        return all(part(name) for part in self.parts)

    def unit(self, key: str) -> bool | AllOf:
        """A unit no part takes is out; parts that take it whole drop out; the rest decide per name."""
        undecided = []
        for part in self.parts:
            decided = decide_unit(part, key)
            if decided is False:
                return False
            if decided is not True:
                undecided.append(decided)
        return AllOf(tuple(undecided)) if undecided else True


@dataclass
class CiRun:
    """What ``prepare_ci`` decided: the shard's replacement, the baseline read, and the extensions to apply."""

    options: CiOptions
    baseline: Baseline | None = None
    #: Replaces the selection's shard predicate (and the workers' ``--shard``) when set.
    case_filter: Any = None
    warnings: list[str] = field(default_factory=list)
    #: The stored seconds of the cases this job runs (``--durations-from``): the ETA from the start.
    expected_seconds: float | None = None

    def header_fields(self) -> dict[str, Any]:
        """What the reports' header records about the CI options (nothing when none was used)."""
        o = self.options
        fields: dict[str, Any] = {k: v for k, v in (
            ("reruns", o.reruns), ("fail_on_flaky", o.fail_on_flaky), ("last_failed", o.last_failed),
            ("baseline", o.baseline), ("durations_from", o.durations_from),
            ("shard_plan", getattr(self.case_filter, "label", None))) if v}
        if o.baseline:
            fields["fail_on"] = o.fail_on
            if o.fail_on_lost_coverage:
                fields["fail_on_lost_coverage"] = True
        return {"ci": fields} if fields else {}

    def extensions(self) -> list[RunExtension]:
        """The report-side extensions the options ask for (the baseline first: the others see its note)."""
        o = self.options
        found: list[RunExtension] = []
        if self.baseline is not None:
            found.append(BaselineGate(self.baseline, o.fail_on, o.fail_on_lost_coverage))
        if o.store_durations:
            found.append(DurationStore(o.store_durations))
        if o.fail_on_flaky:
            found.append(FlakyGate())
        return found


def failed_names(path: str) -> set[str]:
    """Cases that failed (or were flaky) in a results file: what ``--last-failed`` re-runs."""
    return {r.name for r in iter_results(path) if r.verdict.is_failure or r.verdict is Verdict.FLAKY}


def prepare_ci(options: CiOptions, selection: Any, expected_failures: str | None,
               extension_allowlist: str | None = None) -> CiRun:
    """Check and plan before anything runs; narrows ``selection`` in place (its ``shard`` predicate).

    One pass over the names of the whole selection (before ``--shard`` and
    ``--last-failed`` narrow it) serves both the strict expectations check
    (an entry may match a case of another shard) and the duration plan
    (every shard job must plan over the same names).
    """
    if options.fail_on not in ("any", "new"):
        raise CiInputError(f"--fail-on {options.fail_on!r}: expected 'any' or 'new'")
    if options.fail_on_lost_coverage and not options.baseline:
        raise CiInputError("--fail-on-lost-coverage needs --baseline OLD.jsonl (lost against what?)")
    if options.fail_on == "new" and not options.baseline:
        raise CiInputError("--fail-on new needs --baseline OLD.jsonl (new against what?)")
    if options.durations_from and selection.shard is None:
        raise CiInputError("--durations-from balances shards: give --shard I/N too")
    ci = CiRun(options)
    inputs = _load_inputs(options, expected_failures)
    ci.baseline = inputs.baseline
    shard: Shard | None = selection.shard
    names = selection_names(selection, extension_allowlist) \
        if inputs.expectations is not None or inputs.durations is not None else []
    if inputs.expectations is not None:
        _check_expectations(inputs.expectations, names, options.strict_expectations, ci)
    if inputs.durations is not None:
        assert shard is not None
        from vts.run.durations import plan_shards, shard_loads

        last_failed = inputs.last_failed
        kept = names if last_failed is None else [n for n in names if last_failed(n)]
        plan = plan_shards(kept, inputs.durations, shard.count)
        ci.expected_seconds = shard_loads(plan, inputs.durations, shard.count)[shard.index - 1]
        ci.case_filter = NameFilter(frozenset(n for n, s in plan.items() if s == shard.index - 1),
                                    f"shard {shard.index}/{shard.count} by durations")
    elif inputs.last_failed is not None:
        ci.case_filter = inputs.last_failed if shard is None else AllOf((shard, inputs.last_failed))
    if ci.case_filter is not None:
        selection.shard = ci.case_filter
    return ci


@dataclass
class _Inputs:
    baseline: Baseline | None = None
    last_failed: NameFilter | None = None
    durations: dict[str, float] | None = None
    expectations: ExpectationList | None = None


def _load_inputs(options: CiOptions, expected_failures: str | None) -> _Inputs:
    """Every file the options name, read strictly (a bad one is a ``CiInputError`` naming file and line)."""
    inputs = _Inputs()
    try:
        if options.baseline:
            inputs.baseline = Baseline.from_file(options.baseline)
        if options.last_failed:
            inputs.last_failed = NameFilter(frozenset(failed_names(options.last_failed)), "last-failed")
            if not inputs.last_failed.names:
                print(f"nnvts: --last-failed: no case failed in {options.last_failed}; nothing to re-run",
                      file=sys.stderr)
        if options.durations_from:
            from vts.run.durations import load_durations

            inputs.durations = load_durations(options.durations_from)
        if expected_failures:
            inputs.expectations = ExpectationList.from_file(expected_failures)
    except ResultsFileError as error:
        raise CiInputError(str(error)) from None
    except OSError as error:
        raise CiInputError(f"{error.filename}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise CiInputError(f"{expected_failures}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return inputs


def _check_expectations(expectations: ExpectationList, names: Sequence[str], strict: bool, ci: CiRun) -> None:
    unmatched = expectations.unmatched_among(names)
    if not unmatched:
        return
    message = f"{expectations.path}: {unmatched_message(unmatched)}"
    if strict:
        raise CiInputError(message + " (remove them, or --allow-unmatched-expectations)")
    ci.warnings.append(message)
    print(f"nnvts: warning: {shown(message)}", file=sys.stderr)


def unmatched_message(unmatched: Sequence[Any], limit: int = 20) -> str:
    listing = ", ".join(f"{t.text!r} (line {t.line})" for t in unmatched[:limit])
    more = f" and {len(unmatched) - limit} more" if len(unmatched) > limit else ""
    return f"{len(unmatched)} expected-failure entries match no selected case: {listing}{more}"


def selection_names(selection: Any, extension_allowlist: str | None) -> list[str]:
    """Every case name of the selection without its shard (lazy enumeration; names only are kept)."""
    from vts.families.base import DeviceInfo
    from vts.model.extensions import default_registry
    from vts.run.runner import Selection, iter_cases

    whole = Selection(spec_paths=selection.spec_paths, families=selection.families, keyword=selection.keyword)
    extensions = default_registry(extension_allowlist).for_parsing()
    return [case.name for _, case in iter_cases(whole, DeviceInfo(name="nnvts-plan"), extensions)]
