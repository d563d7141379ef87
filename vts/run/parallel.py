"""``nnvts run -j N``: cases split across N worker processes, results merged in one report.

Each worker owns its driver (in process, or its own driver host) and runs
the cases whose name hashes to its slot, so the split is stable and needs
no coordination; it streams ``CaseResult`` records back over a queue and the
parent feeds every reporter as they arrive.  Workers are started with
``spawn``: forking a process that already runs threads (progress display,
driver hosts) is unsafe.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import queue
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vts.results import CaseResult, Verdict

_DONE = "done"
_HELLO = "hello"
_RESULT = "result"
_FAILED = "failed"


@dataclass(frozen=True)
class WorkerPlan:
    """Everything a worker needs, as plain picklable data."""

    driver: str
    spec_paths: tuple[str, ...]
    families: tuple[str, ...] | None
    keyword: str | None
    shard: str | None
    jobs: int
    in_process: bool
    memory_limit_mib: int
    case_timeout: float
    pool_kind: str
    expected_failures: str | None
    extension_allowlist: str | None
    extra: dict[str, Any] = field(default_factory=dict)


class _QueueSink:
    def __init__(self, channel: Any) -> None:
        self.channel = channel

    def add(self, result: CaseResult) -> None:
        self.channel.put((_RESULT, result.to_json()))

    def finish(self, interrupted: bool) -> None:
        """The worker reports completion itself (after closing its driver)."""


def worker_slot(name: str, jobs: int) -> int:
    """The worker that runs case ``name``.

    A different hash from ``--shard``'s CRC-32, so that sharding and
    parallelism combine instead of sending a whole shard to one worker.
    """
    return int.from_bytes(hashlib.blake2s(name.encode(), digest_size=4).digest(), "little") % jobs


def _selection(plan: WorkerPlan, slot: int):
    from vts.run.runner import Selection
    from vts.run.selection import Shard, parse_expression

    user_shard = plan.extra.get("case_filter") or (Shard.parse(plan.shard) if plan.shard else None)

    class _Partitioned(Selection):
        def selects(self, name: str) -> bool:
            if worker_slot(name, plan.jobs) != slot or not super().selects(name):
                return False
            return user_shard is None or user_shard(name)

    return _Partitioned(
        spec_paths=plan.spec_paths,
        families=list(plan.families) if plan.families else None,
        keyword=parse_expression(plan.keyword) if plan.keyword else None,
    )


def _worker(plan: WorkerPlan, slot: int, channel: Any) -> None:
    """One worker: its own driver, its own slice of the cases."""
    from vts.extensions import default_registry
    from vts.families.base import DeviceInfo, RunOptions
    from vts.run.drivers import DriverRef
    from vts.run.isolated import IsolatedRunner
    from vts.run.reruns import install_reruns
    from vts.run.runner import Runner, iter_cases
    from vts.run.selection import ExpectationList
    from vts.run.session import version_of
    from vts.run.signals import install

    install()  # the parent's terminate() (SIGTERM) then ends the run loop and this worker's driver host
    host = None
    try:
        if plan.in_process:
            device = DriverRef(plan.driver).load()
        else:
            from vts.ipc.process import HostProcess

            host = HostProcess(plan.driver, memory_limit=plan.memory_limit_mib << 20)
            device = host.start()
        name = getattr(device, "name", plan.driver)
        channel.put((_HELLO, {"name": name, "version": version_of(device)}))
        extensions = default_registry(plan.extension_allowlist)
        options = RunOptions(pool_kind=plan.pool_kind, case_timeout=plan.case_timeout, extensions=extensions,
                             oracle=str(plan.extra.get("oracle", "reference")))
        expectations = ExpectationList.from_file(plan.expected_failures) if plan.expected_failures else None
        runner = Runner(device, options, expectations) if host is None else IsolatedRunner(
            device, options, expectations, host=host)
        install_reruns(runner, int(plan.extra.get("reruns", 0)))
        runner.run(iter_cases(_selection(plan, slot), DeviceInfo(name=name), extensions.for_parsing()),
                   [_QueueSink(channel)])
        channel.put((_DONE, slot))
    except BaseException as error:
        channel.put((_FAILED, f"worker {slot}: {type(error).__name__}: {error}"))
        channel.put((_DONE, slot))
    finally:
        if host is not None:
            host.stop()


def run_parallel(plan: WorkerPlan, make_sinks: Callable[[dict[str, Any]], list[Any]]) -> tuple[bool, list[Any]]:
    """Run ``plan`` on ``plan.jobs`` workers; returns (completed, sinks).

    ``make_sinks(driver_info)`` builds the reporters once the first worker
    has said which driver it loaded (the reports' header names it).
    """
    context = multiprocessing.get_context("spawn")
    channel = context.Queue()
    workers = [context.Process(target=_worker, args=(plan, slot, channel), daemon=True, name=f"nnvts-worker-{slot}")
               for slot in range(plan.jobs)]
    for worker in workers:
        worker.start()
    sinks: list[Any] = []
    pending: list[CaseResult] = []
    problems: list[str] = []
    done = 0
    interrupted = False
    try:
        while done < plan.jobs:
            try:
                kind, payload = channel.get(timeout=1.0)
            except queue.Empty:
                dead = [w for w in workers if not w.is_alive() and w.exitcode not in (0, None)]
                if dead and done + len(dead) >= plan.jobs and channel.empty():
                    problems += [f"{w.name} died (exit status {w.exitcode})" for w in dead]
                    break
                continue
            if kind == _HELLO and not sinks:
                sinks = make_sinks(payload)
                for result in pending:
                    for sink in sinks:
                        sink.add(result)
                pending.clear()
            elif kind == _RESULT:
                result = CaseResult.from_json(payload)
                if sinks:
                    for sink in sinks:
                        sink.add(result)
                else:
                    pending.append(result)
            elif kind == _FAILED:
                problems.append(payload)
            elif kind == _DONE:
                done += 1
    except KeyboardInterrupt:
        interrupted = True
        for worker in workers:
            worker.terminate()
    if not sinks:
        sinks = make_sinks({"name": plan.driver, "version": "<no worker started>"})
    for problem in problems:
        error = CaseResult(name=f"harness/{problem.split(':')[0].replace(' ', '_')}", family="harness",
                           verdict=Verdict.ERROR, reason=problem)
        for sink in sinks:
            sink.add(error)
    for sink in sinks:
        sink.finish(interrupted)
    for worker in workers:
        worker.join(timeout=5)
    return not interrupted, sinks
