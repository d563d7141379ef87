"""``nnvts run -j N``: cases split across N worker processes, results merged in one report.

Each worker owns its driver (in process, or its own driver host) and runs
``vts.run.worker``.  By default the workers take models as they get to them
(``vts.run.claims``): each walks the models in the same order and takes the
next one no other worker has taken, with every family's cases of it, so the
work goes to whichever worker is free.  With ``job_split="hash"`` each runs
the units (the cases of one model, see ``vts.run.selection``) that hash to
its slot: a split fixed before the run, the same for every run.  Either way
no worker names a case of another's units.  A heavy model's validation cases
are shared between the workers by name (``vts.run.runner.HEAVY_MODEL_SIZE``),
the model claimed by none.  Workers are started with ``spawn``: forking a
process that already runs threads (progress display, driver hosts) is unsafe.

No case is ever lost, whatever happens to a worker.  A worker records the
case it starts and each result in a ledger the parent can read
(``vts.run.ledger``: shared memory), and sends the results down a pipe of its
own in batches.  A worker whose driver is out of process sends each result as
its results-stream line and tallies the plain ones, so the parent writes a
batch with one write and merges one tally (``vts.report.batch``): the parent,
one process for every worker, must not be the run's bottleneck.  When a
worker dies, the parent takes the results it had recorded and not sent, the
case it had started gets a verdict here (``crash`` if the driver ran in the
worker's process, else ``error``: a harness worker died) and a replacement
worker carries on from the next case of the same slot.  A slot whose workers
keep dying without progress is given up: the parent lists its remaining
cases and records each as ``error``.  A worker that cannot start its driver
records each of its cases as ``error`` itself.  Crash loops
(vts/run/crashloop.py) are judged per slot: a worker with a driver host
guards its own cases, and the parent guards the in-process workers, whose
every driver death costs a new worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import secrets
import selectors
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vts.report.batch import PlainTally, ResultBatch, decode_line
from vts.results import CaseResult, Verdict
from vts.run import signals
from vts.run.claims import ModelClaims
from vts.run.ledger import WorkerLedger, records
from vts.run.worker import BATCH, DONE, FAILED, HELLO, RESULT, WorkerContext, case_meta, matched_terms, run_worker

__all__ = ["MAX_FRUITLESS_RESTARTS", "JobScheduler", "WorkerContext"]

#: Replacement workers a slot may use in a row without a case finishing before it is given up.
MAX_FRUITLESS_RESTARTS = 2


@dataclass
class _Slot:
    index: int
    process: Any = None
    channel: Any = None
    next_case: int = 0  # cases of the slot before this one have a verdict
    #: What the running worker records (vts/run/ledger.py), and how many of its batches came.
    ledger: WorkerLedger | None = None
    batches: int = 0
    done: bool = False
    fruitless: int = 0  # replacements in a row that ended no case
    workers: int = 0
    #: The slot's verdicts as they come, for the crash loops only the parent sees (in-process workers dying).
    guard: Any = None


class JobScheduler:
    """The parent of a ``-j`` run: starts a worker per slot, reads their results, replaces the dead.

    ``make_sinks(driver_info)`` builds the reporters once the first worker
    has said which driver it loaded (the reports' header names it).  The
    ``-k`` terms are matched in the workers: the ones any slot matched are
    collected in ``matched``, since the parent's own expression never sees a
    name.
    """

    def __init__(self, context: WorkerContext, make_sinks: Callable[[dict[str, Any]], list[Any]]) -> None:
        self.context = context
        self.plan = context.plan
        self.make_sinks = make_sinks
        self.matched: set[str] = set()
        self.sinks: list[Any] = []
        self.pending: list[CaseResult] = []  # results that came before the reporters
        self.problems: list[str] = []
        self.tag = ""
        self.mp = multiprocessing.get_context("spawn")
        jobs = self.plan.isolation.jobs
        self.claims = ModelClaims() if self.plan.isolation.job_split == "claim" and jobs > 1 else None
        self.selector = selectors.DefaultSelector()
        self.slots = [_Slot(i) for i in range(jobs)]
        policy = self.plan.limits.crash_loop
        if policy is not None and policy.enabled:
            from vts.run.crashloop import CrashLoopGuard

            for slot in self.slots:
                slot.guard = CrashLoopGuard(policy)

    # The run

    def run(self) -> bool:
        """Run every slot to its end; whether the run completed (False: interrupted).  Finishes the sinks."""
        from vts.ipc import tree
        from vts.ipc.process import run_tag, set_run_tag

        tree.become_subreaper()  # drivers' orphans of workers that died come here, to be swept at the end
        self.tag = f"{run_tag()}-j{secrets.token_hex(2)}"
        set_run_tag(self.tag)
        for slot in self.slots:
            self.launch(slot)
        interrupted = False
        try:
            self.read_until_done()
        except KeyboardInterrupt:
            interrupted = True
            for slot in self.slots:
                if slot.process is not None and slot.process.is_alive():
                    slot.process.terminate()
        if not self.sinks:
            self.open_sinks({"name": self.plan.driver.spec, "version": "<no worker started>"})
        self.wind_down()
        for problem in self.problems:
            error = CaseResult(name=f"harness/{problem.split(':')[0].replace(' ', '_')}", family="harness",
                               verdict=Verdict.ERROR, reason=problem)
            for sink in self.sinks:
                sink.add(error)
        for sink in self.sinks:
            sink.finish(interrupted)
        return not interrupted

    def read_until_done(self) -> None:
        """Every message of every worker until each slot is done (one selector, epoll, for the whole run:
        building one per wait, as ``multiprocessing.connection.wait`` does, cost more than the reports)."""
        while not all(slot.done for slot in self.slots):
            if not self.selector.get_map():
                break
            if signals.received() is not None:
                raise KeyboardInterrupt  # a signal whose exception landed where Python drops it (run loop)
            for key, _ in self.selector.select(timeout=1.0):
                slot = key.data
                try:
                    message = slot.channel.recv()
                except (EOFError, OSError):
                    self.worker_died(slot)
                    continue
                self.handle(slot, message)

    def wind_down(self) -> None:
        """Join the workers, read what stopped ones left, free the shared memory, kill leftover drivers."""
        for slot in self.slots:
            if slot.process is not None:
                slot.process.join(timeout=5)
                if not slot.done and slot.channel is not None and not slot.process.is_alive():
                    self.collect_late(slot)
            if slot.ledger is not None:
                slot.ledger.close()
        if self.claims is not None:
            self.claims.close()
        self.selector.close()
        leftovers = _sweep(self.tag)
        if leftovers:
            self.problems.append("the drivers of dead workers left processes running, killed by the harness: "
                                 + "; ".join(leftovers[:20]))

    def launch(self, slot: _Slot) -> None:
        """Start the worker of ``slot`` from its next case on."""
        reader, writer = self.mp.Pipe(duplex=False)
        if slot.ledger is not None:
            slot.ledger.close()
        slot.ledger, slot.batches = WorkerLedger(), 0
        slot.process = self.mp.Process(target=run_worker, args=(self.context, slot.index, writer, slot.next_case,
                                                                self.tag, slot.ledger, self.claims),
                                       daemon=True, name=f"nnvts-worker-{slot.index}")
        slot.process.start()
        writer.close()
        slot.channel = reader
        self.selector.register(reader, selectors.EVENT_READ, slot)
        slot.workers += 1

    # Results

    def emit(self, result: CaseResult) -> None:
        if self.sinks:
            for sink in self.sinks:
                sink.add(result)
        else:
            self.pending.append(result)

    def open_sinks(self, driver_info: dict[str, Any]) -> None:
        """The reporters, once the driver is known; results that came before them are handed over."""
        self.sinks[:] = self.make_sinks(driver_info)
        for result in self.pending:
            for sink in self.sinks:
                sink.add(result)
        self.pending.clear()

    def handle(self, slot: _Slot, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == BATCH:
            slot.batches = message[1] + 1
            self.batch(slot, message[2], message[3])
        elif kind == RESULT:
            self.ended(slot, message[1], decode_line(message[2]))
        elif kind == HELLO and not self.sinks:
            self.open_sinks(message[1])
        elif kind == FAILED:
            self.problems.append(message[1])
        elif kind == DONE:
            slot.done = True
            self.matched.update(message[2])

    def advanced(self, slot: _Slot, index: int, result: CaseResult | None) -> None:
        """Case ``index`` of ``slot`` ended (-1: a result of no case); ``result`` None: a plain one, tallied."""
        if index >= 0:
            slot.next_case = index + 1
            slot.fruitless = 0
            if slot.guard is not None:
                slot.guard.observe_survivor() if result is None else slot.guard.observe(result)

    def ended(self, slot: _Slot, index: int, result: CaseResult) -> None:
        """A result from the worker of ``slot``: of case ``index`` of the slot, or of none (-1)."""
        self.advanced(slot, index, result)
        self.emit(result)

    def batch(self, slot: _Slot, blob: bytes, tally: PlainTally | None = None) -> None:
        """A batch of results; ``tally``: its plain results summarized by a worker trusted with its lines."""
        try:
            entries = list(records(blob))
            whole = None
            if tally is not None and self.sinks:
                try:
                    whole = ResultBatch.of(((line, plain) for _, line, plain in entries), tally)
                except Exception as error:  # nothing emitted yet: every result is decoded instead
                    self.problems.append(f"worker {slot.index}: a batch's tally does not match it: {error!r}")
            if whole is None:
                for index, line, _ in entries:
                    self.ended(slot, index, decode_line(line))
                return
            others = iter(whole.others)
            for index, _, plain in entries:
                self.advanced(slot, index, None if plain else next(others))
            if all(callable(getattr(sink, "add_batch", None)) for sink in self.sinks):
                for sink in self.sinks:
                    sink.add_batch(whole)
            else:  # a sink that needs every result (a baseline comparison)
                for result in whole.results():
                    self.emit(result)
        except Exception as error:  # our own worker's bytes: a harness bug, said, never silently dropped
            self.problems.append(f"worker {slot.index}: a batch of results could not be read: {error!r}")

    # Dead workers

    def worker_died(self, slot: _Slot) -> None:
        """The worker of ``slot`` is gone: its unsent results, a verdict for its case, then a replacement."""
        process = slot.process
        process.join(5)
        how = _describe_exit(process.exitcode)
        self.selector.unregister(slot.channel)
        slot.channel.close()
        slot.channel = None
        if slot.done:
            return
        # What the worker finished but had not sent yet, then the case it was running, if any.
        self.batch(slot, slot.ledger.unsent(slot.batches))
        started_index, started = slot.ledger.started()
        if started_index >= slot.next_case:
            self.blame_started_case(slot, started_index, started, how)
        else:
            # No case of its was running, so none gets the verdict: the death is a result of its own
            # (docs/protocol.md §8.1: a -j worker of the harness that died is an error).
            slot.fruitless += 1
            self.emit(CaseResult(name=f"harness/worker_{slot.index}_died_{slot.workers}", family="harness",
                                 verdict=Verdict.ERROR, reason=f"harness: worker {slot.index} {how} between cases",
                                 details=(f"a replacement worker ran the rest of worker {slot.index}'s cases",)))
        if slot.guard is not None and slot.guard.tripped is not None:
            # In process, each death is the driver's and costs a new worker: a crash loop ends the slot.
            self.give_up(slot, how, Verdict.CRASH_LOOP, slot.guard.tripped)
            return
        if slot.fruitless > MAX_FRUITLESS_RESTARTS:
            self.give_up(slot, how)
            return
        self.launch(slot)

    def blame_started_case(self, slot: _Slot, started_index: int, started: dict[str, Any] | None,
                           how: str) -> None:
        """The case a dead worker had started: the driver's crash in process, else a harness error."""
        in_process = self.plan.isolation.in_process
        started = started or {"name": f"case {started_index} of worker {slot.index}'s share", "family": "harness",
                              "spec": "", "operations": [], "operand_types": []}
        if in_process:
            verdict, reason = Verdict.CRASH, f"driver crashed: the worker running the driver in process {how}"
        else:
            verdict, reason = Verdict.ERROR, f"harness: worker {slot.index} {how} during this case"
        result = self.context.harness_result(started, verdict, reason,
                                             (f"a replacement worker ran the rest of worker {slot.index}'s cases",))
        self.emit(result)
        if slot.guard is not None:
            slot.guard.observe(CaseResult(result.name, result.family, verdict, reason))
        slot.next_case = started_index + 1
        slot.fruitless = 0 if in_process else slot.fruitless + 1

    def give_up(self, slot: _Slot, how: str, verdict: Verdict = Verdict.ERROR, why: str = "") -> None:
        """No more workers for ``slot``: each of its remaining cases gets ``verdict`` without running."""
        slot.done = True
        reason = why or f"harness: not run: the workers of slot {slot.index} kept dying ({how})"
        selection = self.context.selection(slot.index, self.claims, replay=True)
        try:
            cases = self.context.slot_cases(slot.index, self.plan.driver.spec, selection)
            for index, (_family, case) in enumerate(cases):
                if index >= slot.next_case:
                    self.emit(self.context.harness_result(case_meta(case), verdict, reason))
            self.matched.update(matched_terms(selection))
        except Exception as error:
            self.problems.append(f"worker {slot.index}: cannot list its remaining cases: {error}")

    def collect_late(self, slot: _Slot) -> None:
        """An interrupted run: what a stopped worker sent or recorded after the parent stopped reading."""
        with contextlib.suppress(EOFError, OSError):
            while not slot.done and slot.channel.poll(0):
                self.handle(slot, slot.channel.recv())
        if not slot.done:
            self.batch(slot, slot.ledger.unsent(slot.batches))


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _sweep(tag: str) -> list[str]:
    """Kill the processes of this run's driver trees still running (workers that died left them)."""
    from vts.ipc import tree
    from vts.ipc.process import known_children

    return tree.kill_tree(0, tag + "/", 0, known_children(), prefix=True)
