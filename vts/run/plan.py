"""The run plan: everything that decides a run, as one typed, immutable, picklable value.

A run used to be assembled from a 26-field request, then a 15-field worker
plan plus an untyped dictionary, with ``--oracle`` parsed in five places.
Now the edge (the CLI, the pytest plugin, ``nnvts soak``) parses its text
once into a ``RunPlan``; ``vts.run.assemble`` alone turns a plan into a
runner, and every way of running (in process, out of process, ``-j``
workers, pytest items, soak) starts from the same plan.  ``-j`` workers
receive the plan itself, so nothing a worker needs travels any other way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from vts.ipc.drivers import DriverRef
from vts.run.ci import CiOptions
from vts.run.crashloop import CrashLoopPolicy

if TYPE_CHECKING:
    from vts.families.base import RunOptions
    from vts.run.runner import Selection


@dataclass(frozen=True, slots=True)
class SelectionPlan:
    """Which cases: spec paths, families, ``-k`` and ``--shard`` as typed (each process parses them)."""

    spec_paths: tuple[str, ...]
    families: tuple[str, ...] | None = None
    keyword: str | None = None
    shard: str | None = None

    def build(self, shard: Any = None, partition: Any = None) -> Selection:
        """A fresh ``Selection`` (its ``-k`` terms count their own hits); ``shard`` replaces ``--shard``."""
        from vts.run.runner import Selection
        from vts.run.selection import Shard, parse_expression

        return Selection(
            spec_paths=list(self.spec_paths),
            families=list(self.families) if self.families else None,
            keyword=parse_expression(self.keyword) if self.keyword is not None else None,
            shard=shard if shard is not None else Shard.parse(self.shard) if self.shard else None,
            partition=partition)

    def header(self) -> dict[str, Any]:
        """What the reports' header says of the selection (empty parts left out)."""
        fields = {"specs": list(self.spec_paths), "families": list(self.families or []), "keyword": self.keyword,
                  "shard": self.shard}
        return {k: v for k, v in fields.items() if v}


@dataclass(frozen=True, slots=True)
class ReportPlan:
    """Where results go and how the terminal shows them."""

    json: str | None = None
    junit: str | None = None
    html: str | None = None
    jsonl: str | None = None
    verbose: bool = False
    #: Terminal: only the closing summary.
    quiet: bool = False
    #: Seconds between plain progress lines off a terminal (0: none).
    progress_interval: float = 5.0
    #: The command line, as the reports' header records it.
    argv: tuple[str, ...] = ()

    @property
    def renders(self) -> bool:
        """Whether a report is rendered at the end (the terminal says so before it starts)."""
        return bool(self.json or self.junit or self.html)


@dataclass(frozen=True, slots=True)
class Isolation:
    """Where the driver runs and how many of it."""

    #: Run the driver inside the harness process (fast, but a crash ends the run).
    in_process: bool = False
    #: Worker processes, each with its own driver; 1 runs everything in this process.
    jobs: int = 1
    #: ``-j N``: pin each worker and its driver host to cores of their own (vts/run/affinity.py).
    pin_cpus: bool = True
    #: ``-j N``: ``claim`` (models taken as they come, vts/run/claims.py) or ``hash``.
    job_split: str = "claim"
    #: Let the driver reach the network (``--allow-network``); else an empty network namespace.
    allow_network: bool = False

    @property
    def label(self) -> str:
        return "in_process" if self.in_process else "process"


@dataclass(frozen=True, slots=True)
class Limits:
    """What one case, one driver host and a crashing driver may cost."""

    #: Seconds a case may take before it is a timeout.
    case_timeout: float = 60.0
    #: Address-space limit of the driver process in MiB (0: none); ignored in process.
    memory_limit_mib: int = 4096
    #: When a driver whose host keeps dying stops being run (vts/run/crashloop.py).
    crash_loop: CrashLoopPolicy = field(default_factory=CrashLoopPolicy)

    @property
    def memory_limit_bytes(self) -> int:
        return self.memory_limit_mib << 20


@dataclass(frozen=True, slots=True)
class RunPlan:
    """One run, decided: built once at the edge, never changed, handed as is to every process of the run."""

    driver: DriverRef
    selection: SelectionPlan
    reports: ReportPlan = field(default_factory=ReportPlan)
    isolation: Isolation = field(default_factory=Isolation)
    limits: Limits = field(default_factory=Limits)
    #: Re-runs, baselines, balanced shards, last-failed, strict expectations (vts/run/extensions.py).
    ci: CiOptions = field(default_factory=CiOptions)
    #: Case-name globs expected to fail (``--expected-failures``).
    expected_failures: str | None = None
    #: Extensions the driver may declare (``--extension-allowlist``).
    extension_allowlist: str | None = None
    #: How request memory is handed to the driver.
    pool_kind: str = "ashmem"
    #: The differential family's judge: the driver whose answers are the expected ones.
    oracle: DriverRef = field(default_factory=lambda: DriverRef("reference"))
    #: Seconds the differential family may spend on its realistic-size cases (0: skipped).
    large_budget: float = 120.0
    #: UNREPRODUCED_CRASH cases are reported but do not fail the exit status.
    allow_unreproduced_crashes: bool = False
    #: The runner runs every case a family names, in the order named, so a family may send a case's calls
    #: ahead (``nnvts run``; not the pytest plugin, which may deselect cases after naming them).
    send_ahead: bool = True

    def run_options(self) -> RunOptions:
        """The families' view of the plan: how cases run."""
        from vts.families.base import RunOptions
        from vts.model.extensions import default_registry

        return RunOptions(pool_kind=self.pool_kind, case_timeout=self.limits.case_timeout,
                          extensions=default_registry(self.extension_allowlist), oracle=self.oracle,
                          large_budget=self.large_budget, send_ahead=self.send_ahead,
                          allow_network=self.isolation.allow_network)

    def with_(self, **changes: Any) -> RunPlan:
        """A copy with some fields changed (the plan itself never changes)."""
        return replace(self, **changes)


def driver_ref(spec: DriverRef | str, options: Sequence[tuple[str, str]] = ()) -> DriverRef:
    """The reference ``spec`` names, with ``options`` (``--driver-option``) added to its own."""
    ref = DriverRef.of(spec)
    return ref.with_options(tuple(ref.options) + tuple(options)) if options else ref
