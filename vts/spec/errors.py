"""Errors in spec files, located by file, line and JSON pointer.

A spec error is the author's problem, not a test verdict (docs/spec-format.md,
"Load-time errors"): the CLI prints it and exits with status 2.  The message
always says what was expected, because "invalid" alone sends the author to
the schema to find out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vts.bounds import shown

#: How many further problems ``str(SpecError)`` lists after the first.
SHOWN_OTHERS = 9


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem inside a document, before the file and line are known."""

    pointer: str
    message: str


class ProblemsFound(Exception):  # internal signal, not an error users catch
    """Raised by checks and expansion; the loader turns it into a located SpecError."""

    def __init__(self, problems: Sequence[Problem], *, expanded: bool = False) -> None:
        super().__init__(problems)
        self.problems = tuple(problems)
        self.expanded = expanded


class SpecError(Exception):
    """A spec file that cannot be used: names the file, line, JSON pointer and expectation.

    ``others`` carries further problems found in the same file (the first is
    this error itself), so one run shows an author several mistakes at once.
    """

    def __init__(
        self,
        path: str,
        line: int | None,
        pointer: str,
        message: str,
        others: Iterable[SpecError] = (),
    ) -> None:
        others = tuple(others)
        super().__init__(path, line, pointer, message, others)
        self.path = path
        self.line = line
        self.pointer = pointer
        self.message = message
        self.others = others

    @property
    def count(self) -> int:
        """Number of problems this error reports (itself plus ``others``)."""
        return 1 + len(self.others)

    def headline(self) -> str:
        """``path:line: pointer: message``, leaving out the parts that are unknown."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        # Escaped: the file's name and what it holds must not print a line of their own into the log.
        return shown(f"{where}: {self.pointer}: {self.message}" if self.pointer else f"{where}: {self.message}")

    def __str__(self) -> str:
        lines = [self.headline()]
        lines += [other.headline() for other in self.others[:SHOWN_OTHERS]]
        if len(self.others) > SHOWN_OTHERS:
            lines.append(f"... {self.count} problems in total")
        return "\n".join(lines)


def pointer_join(base: str, *parts: str | int) -> str:
    """Append ``parts`` to the JSON pointer ``base``, escaping ``~`` and ``/`` (RFC 6901)."""
    for part in parts:
        base += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return base


def pointer_parts(pointer: str) -> list[str]:
    """Split a JSON pointer into its unescaped reference tokens."""
    if not pointer:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]
