"""CLI for running nnvts in CI at scale: ``run``'s CI options, ``merge``, ``report``, ``expectations``.

Kept out of ``vts.cli.main`` so that file stays a list of commands; registered
there with ``add_command``.  Like ``vts.cli.main``, nothing heavy is imported at
module level (``nnvts --help`` must stay fast).

Exit statuses: 0 every case passed, 1 some case failed (``merge``: or the
shards do not cover the selection exactly once), 2 usage or input error
(a malformed results file names file and line; nothing is written).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from vts.bounds import shown
from vts.cli.params import NnvtsCommand, NnvtsGroup, OutputFile, ResultsFile, bounded_int
from vts.run.option_checks import MAX_RERUNS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _usage_error(message: str) -> None:
    click.echo(f"nnvts: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


_LAST_FAILED = click.option(
    "--last-failed", type=ResultsFile(), metavar="RESULTS",
    help="Only the cases that failed (or were flaky) in this results file (.jsonl or .json).")
_DURATIONS_FROM = click.option(
    "--durations-from", type=ResultsFile(), metavar="FILE",
    help="Balance --shard by stored per-case durations (a results file or --store-durations file).")

_RUN_OPTIONS = [
    click.option("--reruns", type=bounded_int(0, MAX_RERUNS), default=0, show_default=True, metavar="N",
                 help="Re-run an unexpectedly failing case up to N times, alone on a fresh driver host; "
                      "a case that then passes is 'flaky'."),
    click.option("--fail-on-flaky", is_flag=True, help="Flaky cases fail the run (by default they do not)."),
    _LAST_FAILED,
    click.option("--baseline", type=ResultsFile(), metavar="RESULTS",
                 help="Compare with a previous results file: each case is new-failure, still-failing, fixed, "
                      "new, lost-coverage (passed then, skipped now) or still-passing."),
    click.option("--fail-on", type=click.Choice(["any", "new"]), default="any", show_default=True,
                 help="'new': fail only on failures the --baseline did not have."),
    click.option("--fail-on-lost-coverage", is_flag=True,
                 help="Fail the run when a case that passed in the --baseline is skipped now."),
    _DURATIONS_FROM,
    click.option("--store-durations", type=OutputFile(), metavar="FILE",
                 help="Record each case's duration in FILE (updated in place) for --durations-from."),
    click.option("--allow-unmatched-expectations", is_flag=True,
                 help="Warn instead of failing (exit 2) when an --expected-failures entry matches no selected case."),
]
#: ``nnvts list`` takes the options that change which cases a run selects, to show them.
_LIST_OPTIONS = [_LAST_FAILED, _DURATIONS_FROM]


def ci_list_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``nnvts list`` that narrow the selection as ``nnvts run`` would."""
    for option in reversed(_LIST_OPTIONS):
        fn = option(fn)
    return fn


def narrow_selection(selection: Any, values: dict[str, Any]) -> None:
    """Apply ``--last-failed`` / ``--durations-from`` to ``selection`` (exit 2 on bad input)."""
    from vts.run.ci import CiInputError, CiOptions, prepare_ci

    try:
        prepare_ci(CiOptions(durations_from=values.get("durations_from"), last_failed=values.get("last_failed")),
                   selection, None)
    except CiInputError as error:
        _usage_error(str(error))


def ci_run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The CI options of ``nnvts run``; the command receives them as keyword arguments."""
    for option in reversed(_RUN_OPTIONS):
        fn = option(fn)
    return fn


def ci_options(values: dict[str, Any]) -> Any:
    """``CiOptions`` from the keyword arguments ``ci_run_options`` added."""
    from vts.run.ci import CiOptions

    return CiOptions(durations_from=values.get("durations_from"), store_durations=values.get("store_durations"),
                     last_failed=values.get("last_failed"), reruns=values.get("reruns", 0),
                     fail_on_flaky=values.get("fail_on_flaky", False), baseline=values.get("baseline"),
                     fail_on=values.get("fail_on", "any"),
                     fail_on_lost_coverage=values.get("fail_on_lost_coverage", False),
                     strict_expectations=not values.get("allow_unmatched_expectations", False))


def _expected_names(specs: Sequence[str], keyword: str | None, families: Sequence[str]) -> list[str]:
    from vts.run.ci import selection_names
    from vts.run.runner import Selection, UnknownFamily, select_families
    from vts.run.selection import SelectionError, parse_expression
    from vts.spec.bundled import default_spec_paths
    from vts.spec.errors import SpecError

    try:
        select_families(list(families) or None)
        selection = Selection(spec_paths=list(specs) or default_spec_paths(), families=list(families) or None,
                              keyword=parse_expression(keyword) if keyword else None)
        return selection_names(selection, None)
    except (SelectionError, SpecError, UnknownFamily) as error:
        _usage_error(str(error))
        raise AssertionError from None


def _report_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed([
        click.option("--json", "json_path", type=OutputFile(), help="Write the JSON report here."),
        click.option("--junit", "junit_path", type=OutputFile(), help="Write a JUnit XML report here."),
        click.option("--html", "html_path", type=OutputFile(), help="Write an HTML report here."),
        click.option("--jsonl", "jsonl_path", type=OutputFile(),
                     help="Write the joined JSON-lines stream here."),
    ]):
        fn = option(fn)
    return fn


@click.command(cls=NnvtsCommand)
@click.argument("shards", nargs=-1, required=True, type=ResultsFile())
@click.option("--specs", "specs", multiple=True, metavar="PATH",
              help="The selection the shards were run with (repeatable). Default: the selection recorded in "
                   "the shards' headers.")
@click.option("-k", "keyword", metavar="EXPR",
              help="The -k expression the shards were run with (overrides the headers).")
@click.option("--family", "families", multiple=True, metavar="NAME",
              help="The families the shards were run with (overrides the headers).")
@click.option("--no-coverage-check", is_flag=True,
              help="Only check for duplicates (do not enumerate the selection to find missing cases).")
@click.option("--baseline", type=ResultsFile(), metavar="RESULTS",
              help="Compare the merged run with a previous results file (as nnvts run --baseline).")
@click.option("--fail-on", type=click.Choice(["any", "new"]), default="any", show_default=True,
              help="'new': failing cases make the exit status 1 only when the --baseline did not have them.")
@click.option("--allow-mixed", is_flag=True,
              help="Merge shards run with different nnvts versions or selections (refused by default: they are "
                   "not parts of one run); the merged header lists each.")
@_report_options
def merge(shards: tuple[str, ...], specs: tuple[str, ...], keyword: str | None, families: tuple[str, ...],
          no_coverage_check: bool, baseline: str | None, fail_on: str, allow_mixed: bool, json_path: str | None,
          junit_path: str | None, html_path: str | None, jsonl_path: str | None) -> None:
    """Join shard results (.jsonl or .json) into one set of reports; every selected case must be there once.

    The selection is the one every shard recorded in its header (shards
    with different ones are refused); --specs, -k and --family override it.
    Cases it selects that no shard ran are 'missing', cases in two shards
    'duplicate', cases no shard should have run 'unexpected'.  The reports
    are written either way; exit status 1 names the problems.  Shards of
    different nnvts versions or selections are refused (exit status 2)
    unless --allow-mixed; with it and no --specs, -k or --family, every
    case of any shard's selection is expected once.
    """
    from vts.cli.params import check_outputs_spare_inputs
    from vts.report.baseline import Baseline, BaselineTally
    from vts.report.files import FileReports
    from vts.report.merge import Collect, merge_results, merged_header, survey
    from vts.report.resultsfile import ResultsFileError
    from vts.report.terminal import TerminalReport

    if fail_on == "new" and not baseline:
        _usage_error("--fail-on new needs --baseline OLD.jsonl (new against what?)")
    check_outputs_spare_inputs({"--json": json_path, "--junit": junit_path, "--html": html_path,
                                "--jsonl": jsonl_path}, [*shards, *([baseline] if baseline else [])], "merge")
    selection: dict[str, Any] | None = None
    if specs or keyword or families:
        selection = {k: v for k, v in (("specs", list(specs)), ("families", list(families)),
                                       ("keyword", keyword)) if v}
    expected = None
    if not no_coverage_check:
        selections = [selection] if selection is not None else _recorded_selections(shards, allow_mixed)
        expected = sorted({name for one in selections for name in _expected_names(
            tuple(str(s) for s in one.get("specs") or ()), one.get("keyword"),
            tuple(str(f) for f in one.get("families") or ()))})
    try:
        metas, coverage = survey(shards, expected, allow_mixed)
        old = Baseline.from_file(baseline) if baseline else None
    except ResultsFileError as error:
        _usage_error(str(error))
        return
    header = merged_header(metas, coverage, sys.argv[1:], selection)
    durations = header["durations"]
    tally = BaselineTally()

    def annotate(result: Any) -> Any:
        assert old is not None
        result = old.annotate(result)
        tally.add(result)
        return result

    files = FileReports(header, jsonl_path, json_path, junit_path, html_path,
                        footer={"duration": durations["sum"]})
    # The closing summary of `nnvts run` (failures grouped by reason, the table, the baseline, the
    # counts, the report paths), printed once the reports are written: the file sink comes first.
    terminal = TerminalReport(progress_interval=0, interactive=False, report_paths=lambda: files.written)
    terminal.duration = durations["sum"]  # the merged run's, as its reports say it
    collect = Collect([files, terminal], annotate if old is not None else None)
    merge_results(shards, collect)
    collect.finish(interrupted=any(m.interrupted or not m.complete for m in metas))
    if old is not None:
        for line in tally.lines(old.path):
            click.echo(line)
    click.echo(f"merged {len(shards)} files: {collect.total} cases, {collect.failing} failing")
    click.echo(f"the shards ran {durations['sum']:.1f} s in all" + (
        "" if durations["wall"] is None else f", {durations['wall']:.1f} s from the first start to the last end"))
    for line in coverage.lines():
        click.echo(f"nnvts: {shown(line)}", err=True)
    failing = tally.regression_count if fail_on == "new" else collect.failing
    sys.exit(EXIT_FAILED if failing or not coverage.whole else EXIT_OK)


def _recorded_selections(shards: Sequence[str], allow_mixed: bool) -> list[dict[str, Any]]:
    """The selections the shards' headers record (their shards aside): one, or with ``allow_mixed`` each
    distinct one (exit 2 when they differ without it, or a header cannot be read)."""
    from vts.report.merge import SelectionMismatch, shards_selection, shared_selection
    from vts.report.resultsfile import ResultsFileError, read_results

    try:
        if not allow_mixed:
            return [shards_selection(shards) or {}]
        found: list[dict[str, Any]] = []
        for path in shards:
            meta, results = read_results(path)
            next(iter(results), None)  # a stream's header is read with its first record
            one = shared_selection(meta.header)
            if one not in found:
                found.append(one)
        return found
    except (SelectionMismatch, ResultsFileError) as error:
        _usage_error(str(error))
    except (OSError, ValueError) as error:
        _usage_error(f"unreadable header: {error}")
    raise AssertionError  # unreachable: _usage_error exits


@click.command(cls=NnvtsCommand)
@click.argument("results", type=ResultsFile())
@_report_options
def report(results: str, json_path: str | None, junit_path: str | None, html_path: str | None,
           jsonl_path: str | None) -> None:
    """Render JSON, JUnit and HTML reports from a results file, also one cut short by a kill.

    Cases the run never reached are absent; a stream without its closing
    summary is reported as incomplete.  Exit status 0 once the reports are
    written (the run's own exit status gated the run), 2 for a bad file.
    """
    from vts.cli.params import check_outputs_spare_inputs
    from vts.report.files import FileReports
    from vts.report.merge import Collect, survey
    from vts.report.resultsfile import ResultsFileError, iter_results

    if not (json_path or junit_path or html_path or jsonl_path):
        _usage_error("nothing to write: give --json, --junit, --html or --jsonl")
    check_outputs_spare_inputs({"--json": json_path, "--junit": junit_path, "--html": html_path,
                                "--jsonl": jsonl_path}, [results], "report")
    try:
        meta = survey([results], None)[0][0]
    except ResultsFileError as error:
        _usage_error(str(error))
        return
    header = {k: v for k, v in meta.header.items() if k != "nnvts_results"}
    if not meta.complete:
        header["incomplete"] = "the results stream ended without its summary (the run was killed): " \
                               "cases it did not reach are absent"
        click.echo(f"nnvts: warning: {shown(results)} is incomplete (the run was killed); "
                   "reporting the cases it recorded", err=True)
    collect = Collect([FileReports(header, jsonl_path, json_path, junit_path, html_path)])
    for result in iter_results(results):
        collect.add(result)
    collect.finish(interrupted=meta.interrupted or not meta.complete)
    click.echo(f"{shown(results)}: {collect.total} cases, {collect.failing} failing"
               + ("" if meta.complete else " (incomplete)"))


@click.command(cls=NnvtsCommand)
@click.argument("results", nargs=-1, required=True, type=ResultsFile())
@click.option("--out", "out_path", required=True, type=OutputFile(), metavar="FILE",
              help="Durations file to write (updated in place: cases these results lack keep their seconds).")
def durations(results: tuple[str, ...], out_path: str) -> None:
    """Write the per-case seconds of results files (shard streams, a merged run) as a durations file.

    --durations-from reads any results file, but balancing shards needs
    only each case's name and seconds: a CI job that hands every shard the
    last run's whole report ships hundreds of MB (a corpus run's JSON
    report: 369 MB) where its durations are a small part of that.
    """
    from vts.report.resultsfile import ResultsFileError, iter_results
    from vts.run.durations import store_durations

    measured: dict[str, float] = {}
    try:
        for path in results:
            measured.update((result.name, result.duration) for result in iter_results(path))
        store_durations(out_path, measured)
    except ResultsFileError as error:
        _usage_error(str(error))
        return
    click.echo(f"{out_path}: {len(measured)} case durations from {len(results)} results files")


@click.group(cls=NnvtsGroup)
def expectations() -> None:
    """Maintain expected-failures files (--expected-failures)."""


@expectations.command()
@click.option("--from", "results", required=True, type=ResultsFile(), metavar="RESULTS",
              help="Results file (.jsonl or .json) of the run to take the failures from.")
@click.option("--out", "out_path", required=True, type=OutputFile(), metavar="FILE",
              help="Expected-failures file to write (its comments and still-valid entries are kept).")
def update(results: str, out_path: str) -> None:
    """Write the expected-failures file from a run: one commented block per root cause of many failures
    (globs, or exact names), a glob where many other cases fail alike, else exact names."""
    import os

    from vts.report.resultsfile import ResultsFileError
    from vts.run.expectations import update_expectations

    existing = None
    if os.path.exists(out_path):
        with open(out_path, encoding="utf-8") as handle:
            existing = handle.read()
    try:
        change = update_expectations(results, existing)
    except ResultsFileError as error:
        _usage_error(str(error))
        return
    tmp = f"{out_path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(change.text)
    os.replace(tmp, out_path)
    click.echo(f"{shown(out_path)}: {len(change.kept) + len(change.added)} entries "
               f"({len(change.added)} added, {len(change.dropped)} dropped as fixed)"
               + (f"; {len(change.causes)} new cause blocks" if change.causes else ""))
    for mark in change.causes:
        click.echo(f"  {shown(mark)}")
    for pattern in change.dropped:
        click.echo(f"  dropped {shown(pattern)}", err=True)
    if not change.globs_allowed and change.added:
        click.echo("  exact names only: these results are of a shard, a -k or a --last-failed run, where a glob "
                   "could cover cases that pass elsewhere (update from the merged report to get globs)", err=True)


COMMANDS = (merge, report, durations, expectations)
