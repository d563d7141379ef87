"""Checking a selection given on the command line before anything starts (shared by soak and fuzz).

The same refusals as ``nnvts run``: a missing or unreadable spec path, a
``-k`` expression that does not parse (or nests deep enough to exhaust the
parser), an unknown family -- each a usage error, found before a driver
host is spawned or a spec is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence


def selection_problem(specs: Sequence[str], keyword: str | None, families: Sequence[str] = ()) -> str | None:
    """Why the selection cannot be used, or None."""
    from vts.run.runner import UnknownFamily, select_families
    from vts.run.selection import SelectionError, parse_expression
    from vts.spec.errors import SpecError
    from vts.spec.loader import iter_spec_paths

    try:
        iter_spec_paths(list(specs))
        if keyword is not None:
            parse_expression(keyword)
        if families:
            select_families(list(families))
    except (SelectionError, SpecError, UnknownFamily) as error:
        return str(error)
    except RecursionError:
        return f"-k {keyword[:40]!r}...: the expression is nested too deeply"
    return None
