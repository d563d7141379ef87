"""What the JSON report says about a run as a whole: its root causes and its support summary.

Both need every result.  The JSON report of a run copies the stream's case lines without decoding
them (``vts.report.verbatim``), so the run's ``FileReports`` sink keeps a ``Findings`` as results
arrive (a ``-j`` worker's plain results as their tally) and hands it to the report; a report
rendered again from a kept stream, or by ``nnvts merge`` from every shard, decodes each case anyway
and builds its own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vts.report.causes import CauseTally
from vts.report.digest import MAX_GRID_CELLS, grid_key
from vts.report.support import support_rows
from vts.results import CaseResult

if TYPE_CHECKING:
    from vts.report.batch import PlainTally


@dataclass
class Findings:
    causes: CauseTally = field(default_factory=CauseTally)
    grid: dict[tuple[str, str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, result: CaseResult) -> None:
        self._count(grid_key(result), result.verdict.value, 1)
        if result.verdict.is_failure:
            self.causes.add(result)

    def add_plain(self, tally: PlainTally) -> None:
        """Plain results a ``-j`` worker tallied: never failures, so only their counts."""
        for (family, operation, types, value), (count, _) in tally.cells.items():
            self._count((family, operation, types), value, int(count))

    def _count(self, key: tuple[str, str, str], value: str, count: int) -> None:
        if key not in self.grid and len(self.grid) >= MAX_GRID_CELLS:  # as the Digest pools its grid
            key = (key[0], "(other)", "-")
        self.grid[key][value] += count

    def to_json(self) -> dict[str, Any]:
        """``{"causes": [...], "support": [...]}``, as the JSON report carries them."""
        return {"causes": [cause.to_json() for cause in self.causes.causes()],
                "support": [row.to_json() for row in support_rows(self.grid)]}
