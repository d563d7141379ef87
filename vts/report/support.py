"""The support summary: per operation and operand type, what the driver claimed and how its claims fared.

A vendor's first question of a run is "what does nnvts think my driver supports, and of that, what
works?".  The table by family × operation × operand type cannot answer it: validation cases pass
whether or not the operation is supported (a malformed model is refused either way), so it showed
"ABS: 67 passed" for a driver without ABS (issue 45).  Here:

* *claimed*: the ``generated`` family prepares every model once, as the suite does, and skips a
  model the driver does not prepare (refused as unsupported): its cases that ran are the claims
  kept, its skipped ones the models not claimed.  Where ``generated`` did not run, any case of the
  other families that ran counts as a claim;
* *passed*: of the cases that ran (not skipped, not expected failures) in every family but
  ``validation``, how many passed;
* *validation*: the ``validation`` family's cases, counted apart (they test refusals, not compute).

Rows come from a grid of counts by (family, operation label, operand type label) and verdict: the
``Digest``'s, or ``vts.report.findings``'s for the JSON report, so the rows are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Families whose cases check refusals of malformed input, not computation: counted apart.
VALIDATION_FAMILIES = frozenset({"validation"})
#: The family whose preparations are the driver's claims.
CLAIM_FAMILY = "generated"
_NOT_RAN = frozenset({"skipped", "xfail"})
SUPPORT_ORDER = ("yes", "partly", "no")


@dataclass(frozen=True, slots=True)
class SupportRow:
    operation: str
    operand_type: str
    #: "yes" (every claim-family case ran), "partly", or "no" (none did).
    supported: str
    claimed: int  # cases of the claim family that ran
    refused: int  # cases of the claim family skipped: the model was not prepared
    ran: int  # cases of every other family but validation that ran (the claim family's included)
    passed: int  # of those, passed
    validation_cases: int
    validation_passed: int

    def to_json(self) -> dict[str, Any]:
        return {"operation": self.operation, "operand_type": self.operand_type, "supported": self.supported,
                "claimed": self.claimed, "refused": self.refused, "ran": self.ran, "passed": self.passed,
                "validation": {"cases": self.validation_cases, "passed": self.validation_passed}}


def support_rows(grid: Mapping[tuple[str, str, str], Mapping[str, int]]) -> list[SupportRow]:
    """One row per (operation, operand type) of ``grid`` ((family, operation, types) -> verdict counts),
    supported ones first, then by operation and type; rows of device-level cases (no operation) left out."""
    cells: dict[tuple[str, str], dict[str, int]] = {}
    for (family, operation, types), counts in grid.items():
        if operation in ("-", "(other)"):
            continue
        cell = cells.setdefault((operation, types), dict.fromkeys(
            ("claimed", "refused", "other_ran", "ran", "passed", "validation_cases", "validation_passed"), 0))
        total = sum(counts.values())
        ran = total - sum(counts.get(v, 0) for v in _NOT_RAN)
        passed = counts.get("passed", 0)
        if family in VALIDATION_FAMILIES:
            cell["validation_cases"] += total
            cell["validation_passed"] += passed
            continue
        if family == CLAIM_FAMILY:
            cell["claimed"] += ran
            cell["refused"] += total - ran
        else:
            cell["other_ran"] += ran
        cell["ran"] += ran
        cell["passed"] += passed
    rows = []
    for (operation, types), cell in cells.items():
        if cell["claimed"] or cell["refused"]:
            supported = "yes" if not cell["refused"] else "partly" if cell["claimed"] else "no"
        else:
            supported = "yes" if cell["other_ran"] else "no"
        rows.append(SupportRow(operation, types, supported, cell["claimed"], cell["refused"], cell["ran"],
                               cell["passed"], cell["validation_cases"], cell["validation_passed"]))
    return sorted(rows, key=lambda r: (SUPPORT_ORDER.index(r.supported), r.operation, r.operand_type))
