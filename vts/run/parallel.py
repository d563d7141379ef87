"""``nnvts run -j N``: cases split across N worker processes, results merged in one report.

Each worker owns its driver (in process, or its own driver host).  By default the workers take models
as they get to them (``vts.run.claims``): each walks the models in the same order and takes the next one
no other worker has taken, with every family's cases of it, so the work goes to whichever worker is free.
With ``split="hash"`` each runs the units (the cases of one model, see ``vts.run.selection``) that hash to
its slot: a split fixed before the run, the same for every run.  Either way no worker names a case of
another's units.  A heavy model's validation cases are shared between the workers by name
(``vts.run.runner.HEAVY_MODEL_SIZE``), the model claimed by none.  Workers are started with ``spawn``:
forking a process that already runs threads (progress display, driver hosts) is unsafe.

No case is ever lost, whatever happens to a worker.  A worker records the
case it starts and each result in a ledger the parent can read
(``vts.run.ledger``: shared memory), and sends the results down a pipe of
its own in batches.  A worker whose driver is out of process sends each result as its results-stream
line and tallies the plain ones, so the parent writes a batch with one write and merges one tally
(``vts.report.batch``): the parent, one process for every worker, must not be the run's bottleneck.
When a worker dies, the parent takes the results it had recorded and not sent, the case it had
started gets a verdict here (``crash`` if the driver ran in the worker's process, else ``error``: a
harness worker died) and a replacement worker carries on from the next
case of the same slot.
A slot whose workers keep dying without progress is given up: the parent
lists its remaining cases and records each as ``error``.  A worker that
cannot start its driver records each of its cases as ``error`` itself.
Crash loops (vts/run/crashloop.py) are judged per slot: a worker with a
driver host guards its own cases, and the parent guards the in-process
workers, whose every driver death costs a new worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import secrets
import selectors
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vts.ipc.drivers import DriverRef
from vts.report.batch import PlainTally, ResultBatch, decode_line, is_plain
from vts.report.sanitize import clean_result
from vts.report.stream import case_line
from vts.results import CaseResult, Verdict
from vts.run import signals
from vts.run.claims import ClaimingSlot, ModelClaims
from vts.run.ledger import BATCH_SECONDS, WorkerLedger, records
from vts.run.selection import WorkerSlot

_DONE = "done"
_HELLO = "hello"
_BATCH = "batch"  # results the worker recorded in its ledger (vts/run/ledger.py), sent together
_RESULT = "result"  # one result too large for the ledger
_FAILED = "failed"

#: Replacement workers a slot may use in a row without a case finishing before it is given up.
MAX_FRUITLESS_RESTARTS = 2


@dataclass(frozen=True)
class WorkerPlan:
    """Everything a worker needs, as plain picklable data."""

    driver: DriverRef
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
    #: Pin each worker and its driver host to cores of their own (vts/run/affinity.py).
    pin_cpus: bool = True
    #: How the workers share the cases: ``claim``, each takes the next model nobody has as it gets to it
    #: (``vts.run.claims``); ``hash``, each runs the units that hash to its slot, fixed before the run.
    split: str = "claim"


def _selection(plan: WorkerPlan, slot: int, claims: ModelClaims | None = None, replay: bool = False):
    """The selection of worker ``slot``: models claimed in ``claims`` (``replay``: only read), else hashed."""
    from vts.run.runner import Selection
    from vts.run.selection import Shard, parse_expression

    user_shard = plan.extra.get("case_filter") or (Shard.parse(plan.shard) if plan.shard else None)
    return Selection(
        spec_paths=plan.spec_paths,
        families=list(plan.families) if plan.families else None,
        keyword=parse_expression(plan.keyword) if plan.keyword else None,
        shard=user_shard,
        partition=WorkerSlot(slot, plan.jobs) if claims is None else ClaimingSlot(slot, plan.jobs, claims, replay),
    )


def _slot_cases(plan: WorkerPlan, slot: int, name: str, selection: Any = None) -> Iterator[tuple[Any, Any]]:
    """The (family, case) pairs of ``slot``, in the order every worker of that slot runs them."""
    from vts.families.base import DeviceInfo
    from vts.model.extensions import default_registry
    from vts.run.runner import iter_cases

    extensions = default_registry(plan.extension_allowlist)
    return iter_cases(selection or _selection(plan, slot), DeviceInfo(name=name), extensions.for_parsing())


def _matched_terms(selection: Any) -> list[str]:
    """The -k terms that matched a case name of this slot (the parent warns about those no slot matched)."""
    keyword = selection.keyword
    return [term.text for term in keyword.terms if term.hits] if keyword is not None else []


def _meta(case: Any) -> dict[str, Any]:
    operations, operand_types = case.labels()
    return {"name": case.name, "family": case.family, "spec": case.spec_path, "operations": list(operations),
            "operand_types": list(operand_types)}


def _result_for(meta: dict[str, Any], verdict: Verdict, reason: str, plan: WorkerPlan,
                details: tuple[str, ...] = ()) -> CaseResult:
    """A verdict given by the harness (not by running the case), with expected failures applied."""
    if plan.expected_failures and verdict.is_failure:
        from vts.run.selection import ExpectationList

        with contextlib.suppress(Exception):
            if ExpectationList.from_file(plan.expected_failures).expects_failure(meta["name"]):
                verdict, reason = Verdict.XFAIL, f"expected failure: {reason}"
    return CaseResult(name=meta["name"], family=meta["family"], verdict=verdict, reason=reason, details=details,
                      operations=tuple(meta["operations"]), operand_types=tuple(meta["operand_types"]),
                      spec=meta["spec"])


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
                    self.channel.send((_RESULT, index, line))
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
            self.channel.send((_BATCH, *pending, self._tally if self.tally else None))
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


def _worker(plan: WorkerPlan, slot: int, channel: Any, skip: int, run_tag: str, ledger: WorkerLedger,
            claims: ModelClaims | None = None) -> None:
    """One worker: its own driver, its own slice of the cases, from case ``skip`` of the slot on."""
    from vts.families.base import RunOptions
    from vts.ipc.process import HostProcess, set_run_tag
    from vts.model.extensions import default_registry
    from vts.run.affinity import pin_worker
    from vts.run.crashloop import install_crash_guard
    from vts.run.isolated import IsolatedRunner
    from vts.run.reruns import install_reruns
    from vts.run.runner import Runner, version_of
    from vts.run.selection import ExpectationList
    from vts.run.signals import install

    install()  # the parent's terminate() (SIGTERM) then ends the run loop and this worker's driver host
    from vts.spec.loader import trust_checked

    trust_checked(plan.extra.get("checked_specs", ()))  # the parent checked every spec before starting us
    if plan.pin_cpus:
        pin_worker(slot, plan.jobs)  # before the driver host starts: it inherits the CPUs
    set_run_tag(run_tag)
    sink = _LedgerSink(channel, ledger, tally=not plan.in_process)
    selection = _selection(plan, slot, claims)

    def numbered(cases: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        for index, (family, case) in enumerate(cases):
            if index < skip:
                continue
            sink.start(index, _meta(case))
            yield family, case
        sink.index = None

    host = None
    try:
        try:
            if plan.in_process:
                device = plan.driver.load()
            else:
                host = HostProcess(plan.driver, memory_limit=plan.memory_limit_mib << 20)
                device = host.start()
        except Exception as error:
            # Every case of the slot still gets its verdict.
            reason = f"harness: worker {slot} could not start the driver: {type(error).__name__}: {error}"
            for _family, case in numbered(_slot_cases(plan, slot, plan.driver.spec, selection)):
                sink.add(_result_for(_meta(case), Verdict.ERROR, reason, plan))
            sink.close()
            channel.send((_DONE, slot, _matched_terms(selection)))
            return
        name = getattr(device, "name", plan.driver.spec)
        sink.send((_HELLO, {"name": name, "version": version_of(device)}))
        extensions = default_registry(plan.extension_allowlist)
        options = RunOptions(pool_kind=plan.pool_kind, case_timeout=plan.case_timeout, extensions=extensions,
                             oracle=DriverRef.of(plan.extra.get("oracle", "reference")),
                             large_budget=float(plan.extra.get("large_budget", 120.0)), send_ahead=True)
        expectations = ExpectationList.from_file(plan.expected_failures) if plan.expected_failures else None
        runner = Runner(device, options, expectations) if host is None else IsolatedRunner(
            device, options, expectations, host=host)
        install_reruns(runner, int(plan.extra.get("reruns", 0)))
        install_crash_guard(runner, plan.extra.get("crash_loop"))
        runner.run(numbered(_slot_cases(plan, slot, name, selection)), [sink])
        sink.close()
        channel.send((_DONE, slot, _matched_terms(selection)))
    except BaseException as error:
        with contextlib.suppress(Exception):
            sink.close()  # the results before it first: a worker that said it is done is not read again
            channel.send((_FAILED, f"worker {slot}: {type(error).__name__}: {error}"))
            channel.send((_DONE, slot, _matched_terms(selection)))
    finally:
        if host is not None:
            host.stop()


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


def run_parallel(plan: WorkerPlan, make_sinks: Callable[[dict[str, Any]], list[Any]],
                 matched: set[str] | None = None) -> tuple[bool, list[Any]]:
    """Run ``plan`` on ``plan.jobs`` workers; returns (completed, sinks).

    ``make_sinks(driver_info)`` builds the reporters once the first worker
    has said which driver it loaded (the reports' header names it).  The
    ``-k`` terms are matched in the workers, so the ones any slot matched are
    added to ``matched``: the parent's own expression never sees a name.
    """
    matched = set() if matched is None else matched
    from vts.ipc import tree
    from vts.ipc.process import run_tag, set_run_tag

    tree.become_subreaper()  # drivers' orphans of workers that died come here, to be swept at the end
    tag = f"{run_tag()}-j{secrets.token_hex(2)}"
    set_run_tag(tag)
    context = multiprocessing.get_context("spawn")
    claims = ModelClaims() if plan.split == "claim" and plan.jobs > 1 else None
    selector = selectors.DefaultSelector()
    slots = [_Slot(i) for i in range(plan.jobs)]
    policy = plan.extra.get("crash_loop")
    if policy is not None and policy.enabled:
        from vts.run.crashloop import CrashLoopGuard

        for slot in slots:
            slot.guard = CrashLoopGuard(policy)
    sinks: list[Any] = []
    pending: list[CaseResult] = []
    problems: list[str] = []
    interrupted = False

    def emit(result: CaseResult) -> None:
        if sinks:
            for sink in sinks:
                sink.add(result)
        else:
            pending.append(result)

    def open_sinks(driver_info: dict[str, Any]) -> None:
        """The reporters, once the driver is known; results that came before them are handed over."""
        sinks[:] = make_sinks(driver_info)
        for result in pending:
            for sink in sinks:
                sink.add(result)
        pending.clear()

    def launch(slot: _Slot) -> None:
        reader, writer = context.Pipe(duplex=False)
        if slot.ledger is not None:
            slot.ledger.close()
        slot.ledger, slot.batches = WorkerLedger(), 0
        slot.process = context.Process(target=_worker, args=(plan, slot.index, writer, slot.next_case, tag,
                                                             slot.ledger, claims),
                                       daemon=True, name=f"nnvts-worker-{slot.index}")
        slot.process.start()
        writer.close()
        slot.channel = reader
        selector.register(reader, selectors.EVENT_READ, slot)
        slot.workers += 1

    def advanced(slot: _Slot, index: int, result: CaseResult | None) -> None:
        """Case ``index`` of ``slot`` ended (-1: a result of no case); ``result`` None: a plain one, tallied."""
        if index >= 0:
            slot.next_case = index + 1
            slot.fruitless = 0
            if slot.guard is not None:
                slot.guard.observe_survivor() if result is None else slot.guard.observe(result)

    def ended(slot: _Slot, index: int, result: CaseResult) -> None:
        """A result from the worker of ``slot``: of case ``index`` of the slot, or of none (-1)."""
        advanced(slot, index, result)
        emit(result)

    def batch(slot: _Slot, blob: bytes, tally: PlainTally | None = None) -> None:
        """A batch of results; ``tally``: its plain results summarized by a worker trusted with its lines."""
        try:
            entries = list(records(blob))
            whole = None
            if tally is not None and sinks:
                try:
                    whole = ResultBatch.of(((line, plain) for _, line, plain in entries), tally)
                except Exception as error:  # nothing emitted yet: every result is decoded instead
                    problems.append(f"worker {slot.index}: a batch's tally does not match it: {error!r}")
            if whole is None:
                for index, line, _ in entries:
                    ended(slot, index, decode_line(line))
                return
            others = iter(whole.others)
            for index, _, plain in entries:
                advanced(slot, index, None if plain else next(others))
            if all(callable(getattr(sink, "add_batch", None)) for sink in sinks):
                for sink in sinks:
                    sink.add_batch(whole)
            else:  # a sink that needs every result (a baseline comparison)
                for result in whole.results():
                    emit(result)
        except Exception as error:  # our own worker's bytes: a harness bug, said, never silently dropped
            problems.append(f"worker {slot.index}: a batch of results could not be read: {error!r}")

    def worker_died(slot: _Slot) -> None:
        process = slot.process
        process.join(5)
        code = process.exitcode
        how = _describe_exit(code)
        selector.unregister(slot.channel)
        slot.channel.close()
        slot.channel = None
        if slot.done:
            return
        # What the worker finished but had not sent yet, then the case it was running, if any.
        batch(slot, slot.ledger.unsent(slot.batches))
        started_index, started = slot.ledger.started()
        if started_index >= slot.next_case:
            started = started or {"name": f"case {started_index} of worker {slot.index}'s share", "family": "harness",
                                  "spec": "", "operations": [], "operand_types": []}
            if plan.in_process:
                verdict, reason = Verdict.CRASH, f"driver crashed: the worker running the driver in process {how}"
            else:
                verdict, reason = Verdict.ERROR, f"harness: worker {slot.index} {how} during this case"
            result = _result_for(started, verdict, reason, plan,
                                 (f"a replacement worker ran the rest of worker {slot.index}'s cases",))
            emit(result)
            if slot.guard is not None:
                slot.guard.observe(CaseResult(result.name, result.family, verdict, reason))
            slot.next_case = started_index + 1
            slot.fruitless = 0 if plan.in_process else slot.fruitless + 1
        else:
            # No case of its was running, so none gets the verdict: the death is a result of its own
            # (docs/protocol.md §8.1: a -j worker of the harness that died is an error).
            slot.fruitless += 1
            emit(CaseResult(name=f"harness/worker_{slot.index}_died_{slot.workers}", family="harness",
                            verdict=Verdict.ERROR, reason=f"harness: worker {slot.index} {how} between cases",
                            details=(f"a replacement worker ran the rest of worker {slot.index}'s cases",)))
        if slot.guard is not None and slot.guard.tripped is not None:
            # In process, each death is the driver's and costs a new worker: a crash loop ends the slot.
            give_up(slot, how, Verdict.CRASH_LOOP, slot.guard.tripped)
            return
        if slot.fruitless > MAX_FRUITLESS_RESTARTS:
            give_up(slot, how)
            return
        launch(slot)

    def give_up(slot: _Slot, how: str, verdict: Verdict = Verdict.ERROR, why: str = "") -> None:
        slot.done = True
        reason = why or f"harness: not run: the workers of slot {slot.index} kept dying ({how})"
        selection = _selection(plan, slot.index, claims, replay=True)
        try:
            for index, (_family, case) in enumerate(_slot_cases(plan, slot.index, plan.driver.spec, selection)):
                if index >= slot.next_case:
                    emit(_result_for(_meta(case), verdict, reason, plan))
            matched.update(_matched_terms(selection))
        except Exception as error:
            problems.append(f"worker {slot.index}: cannot list its remaining cases: {error}")

    def handle(slot: _Slot, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == _BATCH:
            slot.batches = message[1] + 1
            batch(slot, message[2], message[3])
        elif kind == _RESULT:
            ended(slot, message[1], decode_line(message[2]))
        elif kind == _HELLO and not sinks:
            open_sinks(message[1])
        elif kind == _FAILED:
            problems.append(message[1])
        elif kind == _DONE:
            slot.done = True
            matched.update(message[2])

    def collect_late(slot: _Slot) -> None:
        """An interrupted run: what a stopped worker sent or recorded after the parent stopped reading."""
        with contextlib.suppress(EOFError, OSError):
            while not slot.done and slot.channel.poll(0):
                handle(slot, slot.channel.recv())
        if not slot.done:
            batch(slot, slot.ledger.unsent(slot.batches))

    for slot in slots:
        launch(slot)
    try:
        while not all(slot.done for slot in slots):
            if not selector.get_map():
                break
            if signals.received() is not None:
                raise KeyboardInterrupt  # a signal whose exception landed where Python drops it (run loop)
            # One selector for the whole run (epoll): building one per wait, as
            # multiprocessing.connection.wait does, cost the parent more than its reports.
            for key, _ in selector.select(timeout=1.0):
                slot = key.data
                try:
                    message = slot.channel.recv()
                except (EOFError, OSError):
                    worker_died(slot)
                    continue
                handle(slot, message)
    except KeyboardInterrupt:
        interrupted = True
        for slot in slots:
            if slot.process is not None and slot.process.is_alive():
                slot.process.terminate()
    if not sinks:
        open_sinks({"name": plan.driver.spec, "version": "<no worker started>"})
    for slot in slots:
        if slot.process is not None:
            slot.process.join(timeout=5)
            if not slot.done and slot.channel is not None and not slot.process.is_alive():
                collect_late(slot)
        if slot.ledger is not None:
            slot.ledger.close()
    if claims is not None:
        claims.close()
    selector.close()
    leftovers = _sweep(tag)
    if leftovers:
        problems.append("the drivers of dead workers left processes running, killed by the harness: "
                        + "; ".join(leftovers[:20]))
    for problem in problems:
        error = CaseResult(name=f"harness/{problem.split(':')[0].replace(' ', '_')}", family="harness",
                           verdict=Verdict.ERROR, reason=problem)
        for sink in sinks:
            sink.add(error)
    for sink in sinks:
        sink.finish(interrupted)
    return not interrupted, sinks


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
