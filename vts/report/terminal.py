"""Terminal reporting with rich: a progress bar while running, then the summary.

The summary shows counts per verdict, a table by operation and operand type
(where a vendor looks first: "all my QUANT8 CONV_2D cases fail"), and the
first failures with their comparison detail.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from vts.results import CaseResult, Verdict

_STYLE = {
    Verdict.PASSED: "green",
    Verdict.FAILED: "red",
    Verdict.SKIPPED: "yellow",
    Verdict.ERROR: "magenta",
    Verdict.CRASH: "bold red",
    Verdict.TIMEOUT: "bold red",
    Verdict.XFAIL: "cyan",
    Verdict.XPASS: "bold red",
    Verdict.FLAKY: "yellow",
    Verdict.UNREPRODUCED_CRASH: "bold red",
}


class TerminalReport:
    """Sink: progress while running, summary at the end."""

    def __init__(self, console: Console | None = None, total: int | None = None, max_failures: int = 20,
                 verbose: bool = False) -> None:
        self.console = console or Console(stderr=False)
        self.max_failures = max_failures
        self.verbose = verbose
        self.counts: Counter[Verdict] = Counter()
        self.by_op: dict[tuple[str, str], Counter[Verdict]] = defaultdict(Counter)
        self.failures: list[CaseResult] = []
        self.progress = Progress(
            TextColumn("[bold]nnvts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"), console=self.console, transient=True,
            disable=not self.console.is_terminal,
        )
        self.task = self.progress.add_task("", total=total)
        self.progress.start()

    def add(self, result: CaseResult) -> None:
        self.counts[result.verdict] += 1
        ops = ",".join(result.operations) or result.family
        types = ",".join(result.operand_types) or "-"
        self.by_op[(ops if len(ops) < 40 else ops[:37] + "...", types)][result.verdict] += 1
        if result.verdict.is_failure and len(self.failures) < self.max_failures:
            self.failures.append(result)
        failing = sum(c for v, c in self.counts.items() if v.is_failure)
        self.progress.update(self.task, advance=1, description=f"[red]{failing} failing" if failing else "")
        if self.verbose:
            style = _STYLE[result.verdict]
            self.progress.console.print(f"[{style}]{result.verdict.value.upper():8}[/] {result.name} {result.reason}")

    def finish(self, interrupted: bool) -> None:
        self.progress.stop()
        console = self.console
        if self.failures:
            console.rule("[red]failures")
            for result in self.failures:
                console.print(f"[red]FAILED[/] [bold]{result.name}[/] ({result.verdict.value}): {result.reason}",
                              highlight=False)
                for line in result.details[:5]:
                    console.print(f"    {line}", highlight=False)
            shown = len(self.failures)
            total_failing = sum(c for v, c in self.counts.items() if v.is_failure)
            if total_failing > shown:
                console.print(f"... and {total_failing - shown} more failing cases (see the JSON report)")
        table = Table(title="results by operation and operand type", show_lines=False)
        table.add_column("operation")
        table.add_column("operand type")
        present = [v for v in Verdict if self.counts[v]]
        for verdict in present:
            table.add_column(verdict.value, justify="right", style=_STYLE[verdict])
        interesting = sorted(self.by_op.items(), key=lambda kv: (-sum(kv[1][v] for v in Verdict if v.is_failure),
                                                                 kv[0]))
        for (ops, types), counter in interesting[:40]:
            table.add_row(ops, types, *(str(counter[v]) for v in present))
        if len(interesting) > 40:
            table.caption = f"{len(interesting) - 40} more rows in the JSON report"
        if self.by_op:
            console.print(table)
        parts = [f"[{_STYLE[v]}]{self.counts[v]} {v.value}[/]" for v in Verdict if self.counts[v]]
        total = sum(self.counts.values())
        status = "[yellow]interrupted[/]: " if interrupted else ""
        console.print(f"{status}{total} cases: " + ", ".join(parts) if parts else f"{status}no cases ran")
