"""Running corpus files and project specs through the generated family, for the operation tests."""

from __future__ import annotations

import glob
import gzip
import json
import os
from collections.abc import Callable, Collection

from nnvts.drivers.reference import create_device
from vts.families.base import RunOptions
from vts.model.casemodel import CaseModel
from vts.run.runner import Runner, Selection, iter_cases
from vts.run.selection import parse_expression

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")


def run_generated(paths: list[str], keyword: str | None = None,
                  keep: Callable[[CaseModel], bool] | None = None) -> dict[str, int]:
    """Verdict counts of the generated family over ``paths``; asserts nothing failed or errored."""
    runner = Runner(create_device(), RunOptions())
    counts: dict[str, int] = {}
    failures = []
    selection = Selection(paths, keyword=parse_expression(keyword) if keyword else None, families=["generated"])
    for family, case in iter_cases(selection):
        if keep is not None and case.model is not None and not keep(case.model):
            continue
        result = runner.run_case(family, case)
        counts[result.verdict.value] = counts.get(result.verdict.value, 0) + 1
        if result.verdict.value in ("failed", "error"):
            failures.append(f"{result.name}: {result.reason}")
    assert not failures, "\n".join(failures[:20])
    return counts


def corpus_files_using(ops: Collection[str], pure: bool | None = None,
                       companions: Collection[str] = ("ADD",)) -> list[str]:
    """Corpus files whose main subgraphs use any of ``ops``.

    ``pure=True``: only those (plus ``companions``, the ADD the lifetime
    variations insert); ``pure=False``: together with other operations.
    """
    wanted = set(ops)
    paths = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*", "*.json.gz"))):
        with gzip.open(path, "rt") as handle:
            document = json.load(handle)
        used = {op["type"] for model in document["models"] for op in model["main"]["operations"]}
        if not used & wanted:
            continue
        if pure is None or (used <= wanted | set(companions)) == pure:
            paths.append(path)
    return paths
