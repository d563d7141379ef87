"""A ``-j`` worker: its own driver, its own share of the cases, every result recorded before it is sent.

The scheduler (``vts.run.parallel``) starts workers with ``spawn`` and hands
each the run's plan in a ``WorkerContext``: the plan itself, plus what the
parent decided before starting them (the CI filter that replaces the shard,
the spec files it already checked).  A worker records the case it starts and
each result in a ledger the parent can read (``vts.run.ledger``), and sends
the results down its pipe in batches, so no case is lost if it dies.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vts.report.batch import PlainTally, is_plain
from vts.report.sanitize import clean_result
from vts.report.stream import case_line
from vts.results import CaseResult, Verdict
from vts.run.claims import ClaimingSlot, ModelClaims
from vts.run.ledger import BATCH_SECONDS, WorkerLedger
from vts.run.plan import RunPlan
from vts.run.selection import WorkerSlot

#: The messages a worker sends its parent, each a tuple whose first item is one of these.
DONE = "done"
HELLO = "hello"
BATCH = "batch"  # results the worker recorded in its ledger (vts/run/ledger.py), sent together
RESULT = "result"  # one result too large for the ledger
FAILED = "failed"


@dataclass(frozen=True)
class WorkerContext:
    """Everything a worker needs, as plain picklable data: the plan and what the parent decided for it."""

    plan: RunPlan
    #: Replaces the selection's ``--shard`` (a durations plan, last failures; ``vts.run.ci``).
    case_filter: Any = None
    #: Digests of the spec files the parent checked: a worker need not check them again.
    checked_specs: tuple[Any, ...] = ()

    @property
    def jobs(self) -> int:
        return self.plan.isolation.jobs

    def selection(self, slot: int, claims: ModelClaims | None = None, replay: bool = False) -> Any:
        """The selection of worker ``slot``: models claimed in ``claims`` (``replay``: only read), else hashed."""
        partition = WorkerSlot(slot, self.jobs) if claims is None else ClaimingSlot(slot, self.jobs, claims, replay)
        return self.plan.selection.build(shard=self.case_filter, partition=partition)

    def slot_cases(self, slot: int, name: str, selection: Any = None, options: Any = None
                   ) -> Iterator[tuple[Any, Any]]:
        """The (family, case) pairs of ``slot``, in the order every worker of that slot runs them
        (``options``: the plan's run options, when the caller has made them)."""
        from vts.families.base import DeviceInfo
        from vts.run.runner import iter_cases

        extensions = (options or self.plan.run_options()).extensions
        return iter_cases(selection or self.selection(slot), DeviceInfo(name=name), extensions.for_parsing())

    def harness_result(self, meta: dict[str, Any], verdict: Verdict, reason: str,
                       details: tuple[str, ...] = ()) -> CaseResult:
        """A verdict given by the harness (not by running the case), with expected failures applied."""
        if self.plan.expected_failures and verdict.is_failure:
            with contextlib.suppress(Exception):
                if expectation_list(self.plan.expected_failures).expects_failure(meta["name"]):
                    verdict, reason = Verdict.XFAIL, f"expected failure: {reason}"
        return CaseResult(name=meta["name"], family=meta["family"], verdict=verdict, reason=reason, details=details,
                          operations=tuple(meta["operations"]), operand_types=tuple(meta["operand_types"]),
                          spec=meta["spec"])


@functools.lru_cache(maxsize=2)
def expectation_list(path: str) -> Any:
    """The run's expected-failures list, read and compiled once per process (not once per crashed case)."""
    from vts.run.selection import ExpectationList

    return ExpectationList.from_file(path)


def matched_terms(selection: Any) -> list[str]:
    """The -k terms that matched a case name of this slot (the parent warns about those no slot matched)."""
    keyword = selection.keyword
    return [term.text for term in keyword.terms if term.hits] if keyword is not None else []


def case_meta(case: Any) -> dict[str, Any]:
    """What the ledger records of a case as it starts: enough for the parent to give it a verdict."""
    operations, operand_types = case.labels()
    return {"name": case.name, "family": case.family, "spec": case.spec_path, "operations": list(operations),
            "operand_types": list(operand_types)}


class _LedgerSink:
    """Records each result in the worker's ledger, tagged with the index of the case it ends, and sends
    the parent a batch of them when one is due (``vts.run.ledger``).

    A result is recorded as its results-stream line.  With ``tally``, the plain results of a batch are
    also tallied (``vts.report.batch``), and the parent appends the batch's lines to the stream as they
    are: only a worker that runs no driver code may be trusted with that (its driver is out of process).

    A thread sends what has waited ``BATCH_SECONDS`` while a long case runs, so the progress display
    never lags by more than that; the lock keeps it and the run loop off the pipe at once.
    """

    def __init__(self, channel: Any, ledger: WorkerLedger, tally: bool = False) -> None:
        self.channel = channel
        self.ledger = ledger
        self.tally = tally
        self._tally = PlainTally()
        self.index: int | None = None
        self._lock = threading.Lock()
        self._oldest = 0.0
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._send_late, name="nnvts-ledger", daemon=True)
        self._timer.start()

    def start(self, index: int, labels: dict[str, Any]) -> None:
        self.ledger.start(index, labels)
        self.index = index

    def add(self, result: CaseResult) -> None:
        index = -1 if self.index is None else self.index
        self.index = None
        result = clean_result(result)
        line = case_line(result).encode("utf-8")
        plain = self.tally and is_plain(result)
        with self._lock:
            if not self.ledger.used:
                self._oldest = time.monotonic()
            if not self.ledger.append(index, line, plain):
                self._send_pending()
                if not self.ledger.append(index, line, plain):  # larger than the ledger: straight down the pipe
                    self.channel.send((RESULT, index, line))
                    return
            if plain:
                self._tally.add(result)
            if self.ledger.due() or time.monotonic() - self._oldest >= BATCH_SECONDS:
                self._send_pending()

    def send(self, message: tuple[Any, ...]) -> None:
        """A message of another kind, after the results recorded before it."""
        with self._lock:
            self._send_pending()
            self.channel.send(message)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._send_pending()

    def _send_pending(self) -> None:
        pending = self.ledger.pending()
        if pending is not None:
            self.channel.send((BATCH, *pending, self._tally if self.tally else None))
            self._tally = PlainTally()
            self.ledger.sent()

    def _send_late(self) -> None:
        while not self._stop.wait(BATCH_SECONDS):
            with self._lock:
                if self.ledger.used and time.monotonic() - self._oldest >= BATCH_SECONDS:
                    with contextlib.suppress(OSError, ValueError):  # the parent gone: the run loop will see
                        self._send_pending()

    def finish(self, interrupted: bool) -> None:
        """The worker reports completion itself (after closing its driver)."""


def run_worker(context: WorkerContext, slot: int, channel: Any, skip: int, run_tag: str, ledger: WorkerLedger,
               claims: ModelClaims | None = None) -> None:
    """One worker (a ``spawn`` target): its own driver, its share of the cases, from case ``skip`` of the slot on."""
    from vts.ipc.process import set_run_tag
    from vts.run.affinity import pin_worker
    from vts.run.signals import install
    from vts.spec.loader import trust_checked

    install()  # the parent's terminate() (SIGTERM) then ends the run loop and this worker's driver host
    _die_with_parent()  # a SIGKILLed parent must not leave its workers (and their drivers) running
    trust_checked(context.checked_specs)  # the parent checked every spec before starting us
    if context.plan.isolation.pin_cpus:
        pin_worker(slot, context.jobs)  # before the driver host starts: it inherits the CPUs
    set_run_tag(run_tag)
    _SlotRun(context, slot, channel, skip, ledger, claims).run()


def _die_with_parent() -> None:
    """Ask for SIGKILL when the parent ends (``PR_SET_PDEATHSIG``, Linux): the worker's driver host asks the
    same of the worker, so nothing of a ``-j`` run outlives a harness killed by a signal it cannot catch."""
    import ctypes
    import multiprocessing

    try:
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG = 1, SIGKILL = 9
    except (OSError, AttributeError):
        return  # not Linux: the parent's terminate() is the only way down
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # the parent died before the request above
        os._exit(1)


class _SlotRun:
    """The cases of one slot in one worker process, from case ``skip`` on."""

    def __init__(self, context: WorkerContext, slot: int, channel: Any, skip: int, ledger: WorkerLedger,
                 claims: ModelClaims | None) -> None:
        self.context = context
        self.slot = slot
        self.channel = channel
        self.skip = skip
        self.sink = _LedgerSink(channel, ledger, tally=not context.plan.isolation.in_process)
        self.selection = context.selection(slot, claims)

    def numbered(self, cases: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        """The slot's cases from ``skip`` on, each recorded in the ledger as it starts."""
        for index, (family, case) in enumerate(cases):
            if index < self.skip:
                continue
            self.sink.start(index, case_meta(case))
            yield family, case
        self.sink.index = None

    def done(self) -> None:
        self.sink.close()
        self.channel.send((DONE, self.slot, matched_terms(self.selection)))

    def run(self) -> None:
        from vts.run.assemble import start_driver

        driver = None
        try:
            try:
                driver = start_driver(self.context.plan)
            except Exception as error:
                self.refuse_all(f"harness: worker {self.slot} could not start the driver: "
                                f"{type(error).__name__}: {error}")
                return
            self.run_cases(driver)
        except BaseException as error:
            with contextlib.suppress(Exception):
                self.sink.close()  # the results before it first: a worker that said it is done is not read again
                self.channel.send((FAILED, f"worker {self.slot}: {type(error).__name__}: {error}"))
                self.channel.send((DONE, self.slot, matched_terms(self.selection)))
        finally:
            if driver is not None and driver.host is not None:
                driver.host.stop()

    def refuse_all(self, reason: str) -> None:
        """Every case of the slot still gets its verdict when the driver did not start."""
        spec = self.context.plan.driver.spec
        for _family, case in self.numbered(self.context.slot_cases(self.slot, spec, self.selection)):
            self.sink.add(self.context.harness_result(case_meta(case), Verdict.ERROR, reason))
        self.done()

    def run_cases(self, driver: Any) -> None:
        from vts.run.assemble import build_runner
        from vts.run.runner import version_of

        device = driver.device
        name = getattr(device, "name", self.context.plan.driver.spec)
        self.sink.send((HELLO, {"name": name, "version": version_of(device)}))
        options = self.context.plan.run_options()
        runner = build_runner(self.context.plan, driver, options)
        runner.run(self.numbered(self.context.slot_cases(self.slot, name, self.selection, options)), [self.sink])
        self.done()
