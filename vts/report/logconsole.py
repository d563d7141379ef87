"""A rich console for CI logs: off a terminal, a table is printed at its own width, never cut at 80 columns.

rich asks a terminal for its width; a file or a pipe has none, so rich
assumes 80 columns (or ``$COLUMNS``) and folds or truncates every wider
table: the results by operation lost their verdict columns in CI logs.  A
CI log has no width to fit, so off a terminal each renderable gets the
width it needs (and at least the console's, so rules and wrapped text stay
as they were).  On a terminal nothing changes: a table fits the window.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.measure import Measurement

#: The widest a renderable may be measured at (a bound on its natural width, not a width it gets).
MAX_LOG_WIDTH = 2000


class LogConsole(Console):
    """``Console`` whose ``print`` widens itself, off a terminal, to the natural width of what it prints."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        needed = self._natural_width(objects) if not self.is_terminal else 0
        if needed <= self.width:
            super().print(*objects, **kwargs)
            return
        saved = self._width
        self.width = needed
        try:
            super().print(*objects, **kwargs)
        finally:
            self._width = saved

    def _natural_width(self, objects: tuple[Any, ...]) -> int:
        """The widest natural width of the rich renderables among ``objects`` (plain strings wrap as before)."""
        options = self.options.update_width(MAX_LOG_WIDTH)
        widths = [Measurement.get(self, options, o).maximum for o in objects
                  if not isinstance(o, str) and hasattr(o, "__rich_console__")]
        return min(max(widths, default=0), MAX_LOG_WIDTH)
