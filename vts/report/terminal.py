"""The terminal: live progress while a run goes, then a closing summary a person can act on.

Three ways to show progress, chosen once at the start:

- ``live``: a rich progress bar with the total, rate, elapsed time, ETA
  and failures so far; on an interactive terminal with colour allowed;
- ``plain``: one line on stderr every ``progress_interval`` seconds
  (``nnvts: 1200/5000 cases (24%), 41.2/s, ETA 1m32s, 3 failing``); off a
  TTY (CI logs, ``make run`` piped), with ``NO_COLOR`` set, or ``TERM=dumb``;
- ``quiet``: nothing while running.

The total is counted in a background thread (``count_total``) so the
first case starts at once; until the count lands the progress shows the
cases done and how many it has counted so far.  The ETA is given only once
it means something (``vts/report/eta.py``): every family timed on enough of
its own cases, or the stored durations of the selection.

The closing summary: the first failures with their detail, a table by
operation and operand type and the new failures against a baseline (when
results carry ``extra["baseline"]``), none of them with ``quiet``; then
always the counts, the duration and the path of every report written.
Off a terminal no line is wrapped.

``NO_COLOR`` (any non-empty value, no-color.org) is honoured fully: no ANSI
escape of any kind, colour or cursor movement.  Driver strings are cleaned
of control characters and rich markup is escaped, so a driver cannot paint
or move the cursor on the vendor's terminal either.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from vts.bounds import shown
from vts.report.digest import MAX_GRID_CELLS, Digest, grid_key, tone
from vts.report.eta import Eta
from vts.report.logconsole import LogConsole
from vts.report.sanitize import clean, clean_result
from vts.report.support import support_rows
from vts.results import CaseResult, Verdict

if TYPE_CHECKING:
    from vts.report.batch import ResultBatch

DEFAULT_PROGRESS_INTERVAL = 5.0
#: Seconds of recent progress the rate (and so the ETA) is measured over: the first cases of a run
#: (device-level families, model preparation) are much slower than the sweep that follows.
RATE_WINDOW = 60.0
_TONE_STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow", "other": "cyan"}


def color_disabled(environ: dict[str, str] | None = None) -> bool:
    """NO_COLOR set to anything non-empty, or a dumb terminal."""
    env = os.environ if environ is None else environ
    return bool(env.get("NO_COLOR")) or env.get("TERM") == "dumb"


def format_duration(seconds: float) -> str:
    """``0.4 s``, ``12.3 s``, ``4m05s``, ``2h03m``: short, and exact enough to act on."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _safe(text: object, limit: int = 400) -> str:
    """A driver string fit for rich: bounded, no control characters, markup escaped."""
    return escape(clean(text, limit))


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f}/s" if speed else "-/s")


class _EtaColumn(ProgressColumn):
    """The report's own ETA (per family, or from stored durations), not rich's from the overall rate."""

    def __init__(self, report: TerminalReport) -> None:
        super().__init__()
        self.report = report

    def render(self, task: Task) -> Text:
        return Text(self.report.eta_text())


class TerminalReport:
    """Sink: progress while running, the closing summary at the end."""

    def __init__(self, out: IO[str] | None = None, err: IO[str] | None = None, *, total: int | None = None,
                 verbose: bool = False, quiet: bool = False, progress_interval: float = DEFAULT_PROGRESS_INTERVAL,
                 max_failures: int = 20, color: bool | None = None, interactive: bool | None = None,
                 report_paths: Callable[[], list[tuple[str, str]]] | None = None, workers: int | None = None,
                 expected_seconds: float | None = None) -> None:
        out = out if out is not None else sys.stdout
        err = err if err is not None else sys.stderr
        color = not color_disabled() if color is None else color
        self.console = _console(out, color)
        self.err = _console(err, color)
        self.verbose = verbose and not quiet
        self.quiet = quiet
        self.max_failures = max_failures
        self.report_paths = report_paths
        #: How many workers ran the cases (``-j``), said in the closing counts; None: not said.
        self.workers = workers
        self.digest = Digest()
        #: The reason of the first case not run because the driver was in a crash loop.
        self.crash_loop: str | None = None
        self.by_op: dict[tuple[str, str], dict[str, int]] = {}
        self.total = total
        #: Cases the background count has seen so far (shown until the total lands).
        self.counted = 0
        self.eta = Eta(expected_seconds=expected_seconds)
        self.started = time.monotonic()
        #: The run's duration when it is not this process's own time (``nnvts merge``: the shards' summed).
        self.duration: float | None = None
        self._samples: deque[tuple[float, int]] = deque([(self.started, 0)])
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        interactive = self.err.is_terminal if interactive is None else interactive
        self.mode = "quiet" if quiet else "live" if interactive and color else "plain"
        self.progress_interval = progress_interval
        self.progress: Progress | None = None
        if self.mode == "live":
            self.progress = Progress(
                TextColumn("[bold]nnvts"), BarColumn(), MofNCompleteColumn(), _RateColumn(), TimeElapsedColumn(),
                _EtaColumn(self), TextColumn("{task.description}"), console=self.err, transient=True)
            self.task = self.progress.add_task("", total=total)
            self.progress.start()
        elif self.mode == "plain" and progress_interval > 0:
            self._start(self._tick, "nnvts-progress")

    # -- while running ------------------------------------------------------------------------------

    def count_total(self, cases: Callable[[], Iterable[object]]) -> None:
        """Count ``cases()`` in a background thread and show the total once known (errors: no total).

        Nothing is counted when no progress is shown (``quiet``, or plain lines turned off): the
        count costs CPU time the run could use.
        """
        if self.mode == "quiet" or (self.mode == "plain" and self.progress_interval <= 0):
            return

        def count() -> None:
            by_family: Counter[str] = Counter()
            try:
                for n, family in enumerate(cases(), start=1):
                    if self._stop.is_set():
                        return
                    by_family[family] += 1
                    self.counted = n
            except Exception:
                return  # the run itself reports a broken selection; the total just stays unknown
            self.set_total(sum(by_family.values()), by_family)

        self._start(count, "nnvts-count")

    def set_total(self, total: int, by_family: Counter[str] | None = None) -> None:
        """The selection's size; per family (``count_cases`` yields family names), for the ETA."""
        with self._lock:
            self.total = total
            if by_family is not None and all(isinstance(f, str) for f in by_family):
                self.eta.totals = by_family
        if self.progress is not None:
            self.progress.update(self.task, total=total)

    def add(self, result: CaseResult) -> None:
        result = clean_result(result)  # bounded before it is kept: a driver's 50 MB messages must not pile up
        with self._lock:
            self.digest.add(result)
            self.eta.add(result.family, 1, result.duration)
            _, operation, types = grid_key(result)
            self._count_op(operation, types, result.verdict.value, 1)
        if self.progress is not None:
            failing = self.digest.failing
            self.progress.update(self.task, advance=1, description=f"[red]{failing} failing" if failing else "")
        if result.verdict is Verdict.CRASH_LOOP and self.crash_loop is None:
            self.crash_loop = result.reason
            if not self.quiet:  # said at once: the run is about to end far sooner than its ETA
                target = self.progress.console if self.progress is not None else self.err
                target.print(f"nnvts: {_safe(result.reason)}; the remaining cases are not run (crash_loop)",
                             highlight=False)
        if self.verbose:
            style = _TONE_STYLE[tone(result.verdict)]
            target = self.progress.console if self.progress is not None else self.console
            target.print(f"[{style}]{result.verdict.value.upper():8}[/] {_safe(result.name)} {_safe(result.reason)}",
                         highlight=False)

    def add_batch(self, batch: ResultBatch) -> None:
        """A ``-j`` worker's batch: its tally merged at once, its other results added one by one."""
        if self.verbose:  # every result is printed
            for result in batch.results():
                self.add(result)
            return
        with self._lock:
            self.digest.add_plain(batch.tally)
            for (family, operation, types, value), (count, seconds) in batch.tally.cells.items():
                self._count_op(operation, types, value, int(count))
                self.eta.add(family, int(count), seconds)
        if self.progress is not None and batch.tally.count:
            failing = self.digest.failing
            self.progress.update(self.task, advance=batch.tally.count,
                                 description=f"[red]{failing} failing" if failing else "")
        for result in batch.others:
            self.add(result)

    def _count_op(self, operation: str, types: str, value: str, count: int) -> None:
        """``count`` results of verdict ``value`` in the operation table (the lock held)."""
        key = (operation, types)
        if key not in self.by_op and len(self.by_op) >= MAX_GRID_CELLS:
            key = ("(other)", "-")  # a sweep of generated models could have endless label combinations
        cell = self.by_op.setdefault(key, {})
        cell[value] = cell.get(value, 0) + count

    def progress_line(self) -> str:
        """``nnvts: 1200/5000 cases (24%), 41.2/s, ETA 1m32s, 3 failing`` (the plain-mode line)."""
        now = time.monotonic()
        with self._lock:
            done, total, failing = self.digest.total, self.total, self.digest.failing
        elapsed = max(now - self.started, 1e-9)
        while len(self._samples) > 1 and now - self._samples[1][0] >= RATE_WINDOW:
            self._samples.popleft()
        since, done_then = self._samples[0]
        rate = (done - done_then) / max(now - since, 1e-9)
        self._samples.append((now, done))
        parts = [f"{done}/{total} cases ({100 * done / total:.0f}%)" if total
                 else f"{done} cases (counting total: {self.counted:,} so far)"]
        parts.append(f"{rate:,.1f}/s")
        if total and done < total:
            parts.append(self.eta_text(now))
        parts.append(f"{format_duration(elapsed)} elapsed")
        if failing:
            parts.append(f"{failing} failing")
        return "nnvts: " + ", ".join(parts)

    def eta_text(self, now: float | None = None) -> str:
        """``ETA 4m05s``; ``ETA counting…`` before the total; ``ETA timing deadline, burst…`` until each
        family left has run enough cases to be timed (an ETA from the first cases' rate misled by hours)."""
        with self._lock:
            if self.total is None and self.eta.expected_seconds is None:
                return "ETA counting…"
            left = self.eta.remaining(time.monotonic() if now is None else now)
            waiting = self.eta.unmeasured() if left is None else []
        if left is not None:
            return f"ETA {format_duration(left)}"
        shown = ", ".join(waiting[:3]) + ("…" if len(waiting) > 3 else "")
        return f"ETA timing {shown}" if shown else "ETA timing…"

    def _tick(self) -> None:
        while not self._stop.wait(self.progress_interval):
            self.err.print(self.progress_line(), highlight=False, markup=False, soft_wrap=True)

    def _start(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- at the end ---------------------------------------------------------------------------------

    def before_reports(self, writing: bool = True) -> _BeforeReports:
        """A sink to put before the file reports: it ends the progress display when the cases end.

        Rendering the reports of a large run takes minutes; the progress
        then says so instead of standing still at 100 %.
        """
        return _BeforeReports(self, "writing the reports…" if writing else "")

    def stop_progress(self, note: str = "") -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=1.0)
        if self.progress is not None:
            self.progress.stop()
        if note and not self.quiet:
            self.err.print(f"nnvts: {self.digest.total} cases ran in {format_duration(time.monotonic() - self.started)}"
                           f"; {note}", highlight=False, markup=False, soft_wrap=True)

    def finish(self, interrupted: bool) -> None:
        self.stop_progress()
        elapsed = time.monotonic() - self.started if self.duration is None else self.duration
        if not self.quiet:  # -q: the closing summary only (counts, crash loop, reports), no comparison either
            self._print_causes()
            self._print_failures()
            self._print_table()
            self.print_baseline()
        if self.crash_loop is not None:  # part of the summary, -q included: why the run ended early
            self.console.print(f"nnvts: {self.digest.counts['crash_loop']} cases "
                               f"{_safe(self.crash_loop, 300)}", highlight=False)
        self._print_counts(interrupted, elapsed)
        self._print_reports()

    def _print_causes(self) -> None:
        """The failures by root cause, most cases first: a line each, and a case to rerun it with."""
        causes = self.digest.causes.causes()
        if not causes:
            return
        console = self.console
        console.rule(f"[red]causes: {self.digest.failing} failing cases, {len(causes)} "
                     f"cause{'s' if len(causes) != 1 else ''}")
        for cause in causes[:self.max_failures]:
            console.print(f"[red]{cause.cases:>6} ×[/] {_safe(cause.summary)}", highlight=False, soft_wrap=True)
            console.print(f"         e.g. [bold]{_safe(cause.example)}[/] (rerun it with -k)",
                          highlight=False, soft_wrap=True)
        if len(causes) > self.max_failures:
            console.print(f"... and {len(causes) - self.max_failures} more causes (see the reports)")

    def _print_failures(self) -> None:
        """Each failure once, grouped by reason (most common first) with a count and the first case's detail."""
        digest, console = self.digest, self.console
        groups = digest.grouped_failures()
        if not groups:
            return
        console.rule(f"[red]failures: {digest.failing} cases, {len(groups)} reasons")
        for reason, count, first, new in groups[:self.max_failures]:
            mark = " [bold red](new)[/]" if new else ""
            more = f" (and {count - 1} more)" if count > 1 else ""
            # soft_wrap: a reason stays one line, so it can be searched for and copied whole
            console.print(f"[red]{count:>6} ×[/]{mark} {_safe(reason)}", highlight=False, soft_wrap=True)
            console.print(f"         e.g. [bold]{_safe(first.name)}[/]{more}", highlight=False, soft_wrap=True)
            for line in [d for d in first.details if d != first.reason][:5]:  # the reason is printed once
                console.print(f"           {_safe(line)}", highlight=False)
        if len(groups) > self.max_failures:
            console.print(f"... and {len(groups) - self.max_failures} more reasons (see the reports)")

    def _print_table(self) -> None:
        """The support summary: per operation and operand type, the claim and how the claimed cases did."""
        rows = support_rows(self.digest.grid)
        if not rows:
            return
        table = Table(title="support by operation and operand type")
        for column in ("operation", "operand type", "supported"):
            table.add_column(column)
        for column in ("passed / ran", "validation passed"):
            table.add_column(column, justify="right")
        claimed = [row for row in rows if row.supported != "no"]
        unclaimed = [row for row in rows if row.supported == "no"]
        for row in claimed[:40]:
            style = "green" if row.passed == row.ran else "bold red"
            supported = row.supported if row.supported == "yes" else f"partly ({row.claimed} of " \
                                                                       f"{row.claimed + row.refused})"
            table.add_row(_safe(row.operation), _safe(row.operand_type), supported,
                          f"[{style}]{row.passed} / {row.ran}[/]",
                          f"{row.validation_passed} / {row.validation_cases}" if row.validation_cases else "-")
        notes = []
        if len(claimed) > 40:
            notes.append(f"{len(claimed) - 40} more supported rows in the reports")
        if unclaimed:
            validation = sum(row.validation_cases for row in unclaimed)
            notes.append(f"not supported: {len(unclaimed)} operation/type rows"
                         + (f" ({validation} validation cases)" if validation else ""))
        if notes:
            table.caption = "; ".join(notes)
        self.console.print(table)

    def print_baseline(self) -> None:
        """The comparison against the baseline (its presence tells the baseline extension not to print it)."""
        digest = self.digest
        if not digest.baseline:
            return
        new = digest.baseline_cases.get("new-failure", [])
        summary = ", ".join(f"{n} {status}" for status, n in sorted(digest.baseline.items()))
        self.console.print(f"against the baseline: {escape(summary)}", highlight=False)
        if new:
            self.console.print(f"[bold red]new failures ({digest.baseline['new-failure']}):[/]")
            for result in new[:self.max_failures]:
                self.console.print(f"  {_safe(result.name)} ({result.verdict.value}): {_safe(result.reason, 200)}",
                                   highlight=False)
            if digest.baseline["new-failure"] > self.max_failures:
                self.console.print(f"  ... and {digest.baseline['new-failure'] - self.max_failures} more")
        lost = digest.baseline_cases.get("lost-coverage", [])
        if lost:
            self.console.print(f"[bold yellow]lost coverage ({digest.baseline['lost-coverage']}): "
                               "passed in the baseline, skipped now[/]")
            for result in lost[:self.max_failures]:
                self.console.print(f"  {_safe(result.name)}: {_safe(result.reason, 200)}", highlight=False)

    def _print_counts(self, interrupted: bool, elapsed: float) -> None:
        digest = self.digest
        parts = [f"[{_TONE_STYLE[tone(v)]}]{digest.counts[v]} {v}[/]" for v in digest.verdicts()]
        status = "[yellow]interrupted[/] after " if interrupted else ""
        if self.total is not None and interrupted:
            status += f"{digest.total} of {self.total} "
        else:
            status += f"{digest.total} "
        line = f"nnvts: {status}cases in {format_duration(elapsed)}"
        if self.workers is not None:
            line += f" on {self.workers} worker{'s' if self.workers != 1 else ''}"
        self.console.print(line + (": " + ", ".join(parts) if parts else ": no cases ran"), highlight=False)

    def _print_reports(self) -> None:
        written = self.report_paths() if self.report_paths is not None else []
        for kind, path in written:
            self.console.print(f"  {kind + ':':7}{escape(shown(os.path.abspath(path)))}", highlight=False)


class _BeforeReports:
    def __init__(self, terminal: TerminalReport, note: str) -> None:
        self.terminal = terminal
        self.note = note

    def add(self, result: CaseResult) -> None:
        """The terminal sink itself counts the results."""

    def add_batch(self, batch: ResultBatch) -> None:
        """The terminal sink itself counts the results."""

    def finish(self, interrupted: bool) -> None:
        self.terminal.stop_progress(self.note)


def _console(file: IO[str], color: bool) -> Console:
    # color_system=None: rich then writes no escape sequence at all (not even bold).
    console = LogConsole(file=file, color_system="auto" if color else None, no_color=not color, highlight=False,
                         emoji=False)  # off a terminal, tables at their own width (vts/report/logconsole.py)
    # Into a file or a pipe a line stays one line (rich would wrap it at 80 columns): it is grepped, not read
    # on a screen of that width.
    console.soft_wrap = not console.is_terminal
    return console
