"""Scheduling: the run loop, isolation, ``-j``, reruns, signals, affinity, selection, shards, durations.

``__all__`` names what the faces (CLI, pytest plugin), soak, fuzz, the
benches and the tests use of it; each name loads from its module on first
use, so that importing the package does not import numpy or the families.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.run.affinity import default_jobs, worker_cpus
    from vts.run.caseindex import CaseIndex
    from vts.run.ci import CiInputError, CiOptions, prepare_ci, selection_names, unmatched_message
    from vts.run.claims import ClaimingSlot, ModelClaims
    from vts.run.crashloop import CrashLoopGuard, CrashLoopPolicy, install_crash_guard
    from vts.run.durations import load_durations, plan_shards, shard_loads, store_durations
    from vts.run.expectations import parse_file, update_expectations
    from vts.run.globset import GlobSet
    from vts.run.isolated import BACKSTOP_GRACE, IsolatedRunner, unreproduced_crash_outcome
    from vts.run.ledger import BATCH_RESULTS, WorkerLedger, records
    from vts.run.reruns import Rerunner, combine_attempts, install_reruns
    from vts.run.runner import (
        Runner,
        Selection,
        UnknownFamily,
        count_cases,
        iter_cases,
        iter_models,
        needed_specs,
        run_family_case,
        select_families,
    )
    from vts.run.selection import (
        ExpectationList,
        Glob,
        SelectionError,
        Shard,
        WorkerSlot,
        glob_escape,
        parse_expression,
        unit_key,
        worker_slot,
    )
    from vts.run.session import run_session

#: The public names, by the module that defines each.
_HOMES = {
    "vts.run.affinity": ("default_jobs", "worker_cpus"),
    "vts.run.caseindex": ("CaseIndex",),
    "vts.run.ci": ("CiInputError", "CiOptions", "prepare_ci", "selection_names", "unmatched_message"),
    "vts.run.claims": ("ClaimingSlot", "ModelClaims"),
    "vts.run.crashloop": ("CrashLoopGuard", "CrashLoopPolicy", "install_crash_guard"),
    "vts.run.durations": ("load_durations", "plan_shards", "shard_loads", "store_durations"),
    "vts.run.expectations": ("parse_file", "update_expectations"),
    "vts.run.globset": ("GlobSet",),
    "vts.run.isolated": ("BACKSTOP_GRACE", "IsolatedRunner", "unreproduced_crash_outcome"),
    "vts.run.ledger": ("BATCH_RESULTS", "WorkerLedger", "records"),
    "vts.run.reruns": ("Rerunner", "combine_attempts", "install_reruns"),
    "vts.run.runner": (
        "Runner", "Selection", "UnknownFamily", "count_cases", "iter_cases", "iter_models", "needed_specs",
        "run_family_case", "select_families",
    ),
    "vts.run.selection": (
        "ExpectationList", "Glob", "SelectionError", "Shard", "WorkerSlot", "glob_escape", "parse_expression",
        "unit_key", "worker_slot",
    ),
    "vts.run.session": ("run_session",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "BACKSTOP_GRACE", "BATCH_RESULTS", "CaseIndex", "CiInputError", "CiOptions", "ClaimingSlot", "CrashLoopGuard",
    "CrashLoopPolicy", "ExpectationList", "Glob", "GlobSet", "IsolatedRunner", "ModelClaims", "Rerunner", "Runner",
    "Selection",
    "SelectionError", "Shard", "UnknownFamily", "WorkerLedger", "WorkerSlot", "combine_attempts", "count_cases",
    "default_jobs",
    "glob_escape", "install_crash_guard", "install_reruns", "iter_cases", "iter_models", "load_durations",
    "needed_specs", "parse_expression", "parse_file", "plan_shards", "prepare_ci", "records", "run_family_case",
    "run_session", "select_families", "selection_names", "shard_loads", "store_durations", "unit_key",
    "unmatched_message", "unreproduced_crash_outcome", "update_expectations", "worker_cpus", "worker_slot",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
