"""The run loop: cases from specs and families, one guarded call per case, results to sinks.

Cases are generated lazily (spec file by spec file), so a sweep of hundreds
of thousands of validation cases never sits in memory.  Each case runs under
a time limit; a case whose driver call raises something other than
``DriverError`` or hangs is that case's failure, and the run goes on.

In process, a driver can raise anything, ``BaseException`` included
(``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, its own): each is
a verdict for its case, never the end of the run.  Only a Ctrl-C from the
user interrupts: ``Runner.run`` notes every SIGINT it receives, so a
``KeyboardInterrupt`` without one is the driver's.  Every text a result
carries is bounded (``vts.bounds``), whatever a driver put in it.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from vts import bounds
from vts.families import AllowedRefusal, run_recording_comparisons
from vts.families.base import Case, CaseFailure, DeviceInfo, Family, HarnessError, Outcome, RunOptions
from vts.families.registry import families as registered_families
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.hal.memory import PoolTruncated
from vts.ipc.errors import (
    DriverLost,
    DriverMisbehaved,
    DriverTimeout,
    EncodingError,
    ProtocolViolation,
    RequestRejected,
)
from vts.model.casemodel import CaseModel, ModelFormatError, iter_spec_models, model_case_name
from vts.model.extensions import ExtensionNotAllowed
from vts.model.parameters import operation_parameters
from vts.results import CaseResult, Verdict
from vts.run import signals
from vts.run.claims import ClaimingSlot
from vts.run.selection import ExpectationList, Expression, decide_unit, unit_key
from vts.run.version_gate import beyond_driver

if TYPE_CHECKING:
    from vts.spec.loader import KeepSpec, ModelOutline


class ResultSink(Protocol):
    def add(self, result: CaseResult) -> None: ...

    def finish(self, interrupted: bool) -> None: ...


@dataclass
class Selection:
    """Which cases a run (or ``nnvts list``) covers."""

    spec_paths: Sequence[str]
    families: Sequence[str] | None = None  # None: the default families
    keyword: Expression | None = None
    #: ``--shard`` (a ``Shard``), or a filter that replaces it (durations plan, last failures; ``vts.run.ci``).
    shard: Callable[[str], bool] | None = None
    #: A ``-j`` worker's own share (a ``WorkerSlot``, deciding units like a shard; or a name predicate).
    partition: Callable[[str], bool] | None = None

    def selects(self, name: str) -> bool:
        """Whether the device-level case ``name`` (its own unit) is selected."""
        return self._named(name) and (self.shard is None or self.shard(name))

    def _named(self, name: str) -> bool:
        if self.partition is not None and not self.partition(name):
            return False
        return self.keyword is None or self.keyword(name)

    def for_spec(self, spec_name: str) -> bool:
        """Whether the shard takes the spec file of a family that sees whole spec files."""
        return self.shard is None or decide_unit(self.shard, unit_key(spec_name)) is not False

    def for_unit(self, unit: str, shard_unit: str | None = None, *,
                 shared: bool = False) -> Callable[[str], bool] | None:
        """The name predicate for the cases of one unit (a model's ``SPEC.MODEL``), or None when the unit
        is not selected; ``shard_unit``: the unit the shard decides instead (a family that sees whole spec
        files is sharded by file); ``shared``: the ``-j`` slots share this unit's cases by name instead of
        giving it whole to one (a heavy model's validation sweep, see ``WantedModels``).

        A hash shard and a ``-j`` slot decide the whole unit here (``vts.run.selection.Shard``,
        ``WorkerSlot``), so no family names a case of a unit that is not selected.
        """
        if self.shard is None and self.partition is None:
            return self._named
        shard = True if self.shard is None else decide_unit(self.shard, unit_key(shard_unit or unit))
        if self.partition is None:
            partition: bool | Callable[[str], bool] = True
        else:  # a WorkerSlot called with a case name decides that case alone
            partition = self.partition if shared else decide_unit(self.partition, unit_key(unit))
        if partition is False or shard is False:
            return None
        # In this order: the -k terms count hits on this slot's names only (the parent sums the slots').
        checks = [c for c in (partition, self.keyword, shard) if c is not None and c is not True]
        if not checks:
            return _everything
        if len(checks) == 1:
            return checks[0]  # type: ignore[return-value]
        return lambda name: all(check(name) for check in checks)  # type: ignore[operator]


def _everything(name: str) -> bool:
    return True


class UnknownFamily(ValueError):
    """``--family`` named a family that does not exist (usage error)."""


def select_families(names: Sequence[str] | None, device: DeviceInfo | None = None) -> list[Family]:
    available = registered_families()
    if names:
        unknown = [n for n in names if n not in available]
        if unknown:
            raise UnknownFamily(f"unknown family {', '.join(unknown)} (known: {', '.join(available)})")
        chosen = [available[n]() for n in names]
    else:
        chosen = [cls() for cls in available.values() if cls.default]
    if device is not None:
        chosen = [f for f in chosen if f.applicable(device)]
    return chosen


def iter_models(spec_paths: Sequence[str], extensions: object = None,
                wanted: WantedModels | None = None) -> Iterator[tuple[str, CaseModel]]:
    """Every model of the specs; with ``wanted``, only the models some selected unit needs are parsed, and
    a spec file none of whose units is selected is read for its names only (neither checked nor parsed)."""
    from vts.spec.loader import load_paths

    for spec_file in load_paths(spec_paths, None if wanted is None else wanted.spec):
        per_model = None if wanted is None or wanted.whole_spec(spec_file.name) else wanted.model
        for model in iter_spec_models(spec_file.document, extensions, per_model):  # type: ignore[arg-type]
            yield spec_file.path, model


def _model_work(selection: Selection, model_families: list[Family], model: CaseModel,
                wanted: WantedModels | None) -> list[tuple[Family, Callable[[str], bool]]]:
    """The families with cases of ``model`` in the selection, each with its name predicate."""
    work = []
    name = model.case_name()
    shared = wanted is not None and wanted.shared(name)
    for family in model_families:
        if not family.sees_whole_spec:
            selects = selection.for_unit(name, shared=shared and family.shares_heavy_models)
        else:  # sharded by spec file, split between -j slots by model (see Family.sees_whole_spec)
            selects = selection.for_unit(name, shard_unit=model.spec)
            if selects is None and selection.for_spec(model.spec):
                selects = _nothing  # it still sees the model: another slot's, of a spec file the shard takes
        if selects is not None:
            work.append((family, selects))
    return work


def _nothing(name: str) -> bool:
    return False


#: A model this large (operands plus operations of its main graph, as written) is *heavy*: under ``-j``
#: its validation cases are shared between the slots by name instead of run by one.  Its sweep grows
#: with the square of its size (more mutations, each of a larger model): the corpus's one model of 248
#: (``mobilenet_224_gender_basic_fixed``, 6,785 mutations at 7.3 ms) was a quarter of ``V1_0``'s case time,
#: and one worker ran alone for the last 40% of a ``-j 2`` run.  Models of 100 and more are 36 of the
#: corpus's 6,140; an lstm of 100 has about 900 mutations at 1.2 ms.
HEAVY_MODEL_SIZE = 100


class WantedModels:
    """Which spec files and models a shard or a ``-j`` slot needs, decided from names alone.

    A unit is every case of one model; a family that sees whole spec files (``Family.sees_whole_spec``)
    is sharded by spec file and shown every model of a file the shard takes (its ``-j`` slots still split
    the file by model).  So a spec file is needed when a unit of one of its models is selected, or when
    such a family's shard takes it; every model of it is then parsed if that family runs, else only the
    selected ones.
    """

    def __init__(self, selection: Selection, model_families: list[Family]) -> None:
        self.selection = selection
        self.per_model = any(not f.sees_whole_spec for f in model_families)
        self.per_spec = any(f.sees_whole_spec for f in model_families)
        self.shares = selection.partition is not None and any(f.shares_heavy_models for f in model_families)
        #: The heavy models the names pass saw (``SPEC.MODEL``): every -j slot parses them and takes its
        #: share, by name, of the cases of the families that allow it (``Family.shares_heavy_models``).
        self.heavy: set[str] = set()

    def whole_spec(self, spec_name: str) -> bool:
        """Every model of the spec is needed: a family that sees whole spec files has cases in it."""
        return self.per_spec and self.selection.for_spec(spec_name)

    def shared(self, case_name: str) -> bool:
        """Whether the -j slots share this model's cases (of the families that allow it) by name."""
        return case_name in self.heavy

    def model(self, case_name: str) -> bool:
        return self.per_model and self.selection.for_unit(case_name, shared=self.shared(case_name)) is not None

    def spec(self, spec_name: str, models: list[ModelOutline]) -> bool:
        """Whether the spec file is needed at all (the loader neither checks nor expands it if not).

        Called by the loader's names pass, for every concrete-layer JSON spec file of the run, in every
        slot alike; so only what it reads decides a heavy model, and every slot decides the same.  A
        spec file it cannot read that way (YAML, variations) is loaded by every slot, its models never
        heavy: its cases stay whole units.  Where the slots claim models (``vts.run.claims``), the file's
        models get their places in the walk here, and a file whose models others have all taken is not
        needed.
        """
        units = [model_case_name(spec_name, m.name) for m in models]
        heavy = [unit for unit, m in zip(units, models, strict=True)
                 if self.shares and m.size >= HEAVY_MODEL_SIZE]
        self.heavy.update(heavy)
        partition = self.selection.partition
        if isinstance(partition, ClaimingSlot):  # workers that claim models as they reach them
            partition.register_spec([unit for unit in units if unit not in heavy])
            with partition.peeking():  # claims nothing: the walk claims each model when it gets there
                free = any(unit in heavy or partition.unit(unit_key(unit)) for unit in units)
                return (free and self.whole_spec(spec_name)) or any(self.model(unit) for unit in units)
        return self.whole_spec(spec_name) or any(self.model(unit) for unit in units)


def needed_specs(selection: Selection) -> KeepSpec | None:
    """The spec files ``selection`` needs, from their names (``load_paths``'s ``keep``; None: all).

    Decided with every family the selection names, whatever the device: a superset of what the run
    then loads, so the check before a run covers every spec it reads.
    """
    try:
        chosen = select_families(selection.families)
    except UnknownFamily:
        return None  # said where the run chooses its families
    wanted = _wanted(selection, [f for f in chosen if _has_model_cases(f)])
    return None if wanted is None else wanted.spec


def _wanted(selection: Selection, model_families: list[Family]) -> WantedModels | None:
    """What a shard or slot needs (None: every model, no shard)."""
    if selection.shard is None and selection.partition is None:
        return None
    return WantedModels(selection, model_families)


def iter_cases(selection: Selection, device: DeviceInfo | None = None,
               extensions: object = None) -> Iterator[tuple[Family, Case]]:
    """The selected cases, lazily; each family decides a name before it builds the case (see
    ``Family.selected_model_cases``), and a shard decides a family's cases of a model before they are
    named, so a shard or a -j worker builds only its own share."""
    chosen = select_families(selection.families, device)
    for family in chosen:
        for case in family.selected_device_cases(selection.selects):
            yield family, case
    model_families = [f for f in chosen if _has_model_cases(f)]
    if not model_families:
        return
    wanted = _wanted(selection, model_families)
    for spec_path, model in iter_models(selection.spec_paths, extensions, wanted):
        for family, selects in _model_work(selection, model_families, model, wanted):
            for case in family.selected_model_cases(model, spec_path, selects):
                yield family, case


def count_cases(selection: Selection, device: DeviceInfo | None = None, extensions: object = None) -> Iterator[str]:
    """The family's name once per selected case, building none (the progress total, per family): names only.

    Yields as it goes, so a caller counting in the background can stop early.
    """
    chosen = select_families(selection.families, device)
    count = 0

    def counting(selects: Callable[[str], bool]) -> Callable[[str], bool]:
        def counted(name: str) -> bool:
            nonlocal count
            count += selects(name)
            return False  # nothing is built

        return counted

    def drain(family: str, cases: Iterator[Case]) -> Iterator[str]:
        before = count
        for _ in cases:  # empty: counted() keeps no case
            pass
        yield from itertools.repeat(family, count - before)

    for family in chosen:
        yield from drain(family.name, family.selected_device_cases(counting(selection.selects)))
    model_families = [f for f in chosen if _has_model_cases(f)]
    if not model_families:
        return
    wanted = _wanted(selection, model_families)
    for spec_path, model in iter_models(selection.spec_paths, extensions, wanted):
        for family, selects in _model_work(selection, model_families, model, wanted):
            yield from drain(family.name, family.selected_model_cases(model, spec_path, counting(selects)))


def _has_model_cases(family: Family) -> bool:
    cls = type(family)
    return cls.model_cases is not Family.model_cases or cls.selected_model_cases is not Family.selected_model_cases


class _CaseTimeout(BaseException):
    """Raised by the SIGALRM handler; a BaseException so driver code's ``except Exception`` cannot eat it."""


def _raise_case_timeout(signum: int, frame: object) -> None:
    # Python swallows an exception raised inside a __del__ or weakref callback; re-arm so a
    # case that was interrupted there still ends within a second.
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    raise _CaseTimeout


def _can_use_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


#: ``arm_case_alarm``'s answer when the run holds the handler: there is nothing to put back.
_HELD = object()


def arm_case_alarm(seconds: float, held: bool) -> object:
    """Start a case's SIGALRM after ``seconds``; returns what ``disarm_case_alarm`` needs to undo it.

    ``held``: the run installed ``_raise_case_timeout`` for all its cases (``Runner.run``), so the
    handler is only checked: in process, a driver's code may have replaced it during an earlier case,
    and it is put back.  Otherwise (a case run alone) it is installed for this case.  Installing costs
    a case about 12 us (``signal.signal`` converts handlers to and from enums), checking 3 us, the
    timer 1.5 us: a validation case in process costs about 200 us in all.
    """
    if held:
        previous = _HELD
        if signal.getsignal(signal.SIGALRM) is not _raise_case_timeout:
            signal.signal(signal.SIGALRM, _raise_case_timeout)
    else:
        previous = signal.signal(signal.SIGALRM, _raise_case_timeout)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return previous


def disarm_case_alarm(previous: object) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    if previous is not _HELD:
        _restore_alarm_handler(previous)


def _restore_alarm_handler(previous: object) -> None:
    """Put back the SIGALRM handler found before; None (one not installed from Python) is the default."""
    signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)  # type: ignore[arg-type]


# -- Ctrl-C from the user, told apart from a KeyboardInterrupt a driver raises -------------------

_sigint_tracking = 0  # runs tracking SIGINT now (nested runs are possible in tests)
_sigints = 0  # SIGINTs received while tracking


def _note_sigint(previous: object) -> Callable[[int, object], None]:
    def handler(signum: int, frame: object) -> None:
        global _sigints
        _sigints += 1
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        else:
            raise KeyboardInterrupt

    return handler


def user_interrupted(error: BaseException) -> bool:
    """Whether ``error`` is the user's Ctrl-C (always assumed when SIGINT is not being tracked)."""
    if not isinstance(error, KeyboardInterrupt):
        return False
    return _sigint_tracking == 0 or _sigints > 0


def _safe_text(value: object, limit: int = bounds.MAX_TEXT) -> str:
    """``str(value)`` of a driver's object (which may raise, or be huge), bounded."""
    try:
        text = value if isinstance(value, str) else str(value)
    except BaseException:
        text = f"<unprintable {type(value).__name__}>"
    return bounds.cut_text(text, limit)


def _type_name(error: BaseException) -> str:
    return _safe_text(getattr(error, "remote_type", None) or type(error).__name__, bounds.MAX_TYPE_NAME)


def _crash_outcome(error: BaseException) -> Outcome:
    # An exception raised in a driver host carries the driver's own traceback.
    remote = getattr(error, "remote_traceback", "")
    try:
        tail = remote.splitlines()[-3:] if remote else traceback.format_exception(
            type(error), error, error.__traceback__)[-3:]
    except BaseException:
        tail = []
    name = _type_name(error)
    if name == "MalformedAnswer":
        reason = f"driver returned a malformed answer: {_safe_text(error)}"
    else:
        reason = f"driver raised {name}: {_safe_text(error)}"
    return Outcome(Verdict.FAILED, reason, tuple(_safe_text(line).rstrip() for line in tail))


def run_family_case(family: Family, case: Case, device: Device, options: RunOptions) -> Outcome:
    """Run one case and turn every way it can end into an Outcome.

    The rule of docs/protocol.md §8.1: the harness's own problems are
    ``error``; a driver that broke the protocol or died is ``crash`` (or
    ``timeout``); every other misbehaviour - a wrong status, a wrong answer,
    an exception of any kind, a pool resized or written outside its outputs
    - is ``failed``.  A case whose model is newer than the driver's version is skipped
    (``vts.run.version_gate``).
    """
    beyond = beyond_driver(case, device)
    if beyond is not None:
        return Outcome(Verdict.SKIPPED, beyond)
    try:
        return run_recording_comparisons(family.run, case, device, options)
    except CaseFailure as failure:
        return Outcome(Verdict.FAILED, failure.reason, failure.details)
    except ExtensionNotAllowed as denied:
        return Outcome(Verdict.SKIPPED, str(denied))
    except AllowedRefusal as refusal:
        return Outcome(Verdict.SKIPPED, f"refused as the HAL allows: a model only the NNAPI runtime accepts "
                                        f"({refusal.rule})")
    except (HarnessError, ModelFormatError, EncodingError) as error:
        return Outcome(Verdict.ERROR, f"harness: {error}")
    except DriverError as error:
        return Outcome(Verdict.FAILED, f"unexpected {error.status.name} from the driver",
                       (_safe_text(error.message),) if error.message else ())
    except ProtocolViolation as violation:
        return Outcome(Verdict.CRASH, violation.reason)
    except DriverLost as lost:
        # An out-of-process driver died or hung (the isolated runner refines this after the case).
        verdict = Verdict.TIMEOUT if isinstance(lost, DriverTimeout) else Verdict.CRASH
        return Outcome(verdict, f"driver lost: {lost.reason}")
    except (PoolTruncated, DriverMisbehaved) as misbehaved:
        return Outcome(Verdict.FAILED, misbehaved.reason)
    except RequestRejected as rejected:
        return Outcome(Verdict.FAILED, _safe_text(rejected))
    except _CaseTimeout:
        raise
    except Exception as error:
        return _crash_outcome(error)
    except BaseException as error:
        # SystemExit, KeyboardInterrupt, GeneratorExit or a driver's own BaseException subclass, raised
        # by an in-process driver: the case's verdict, not the end of the run.  Only the user's Ctrl-C
        # goes on.
        if user_interrupted(error):
            raise
        return _crash_outcome(error)


@dataclass
class Runner:
    """Runs cases in process, each under ``options.case_timeout`` seconds."""

    device: Device
    options: RunOptions = field(default_factory=RunOptions)
    expectations: ExpectationList | None = None
    _pool: concurrent.futures.ThreadPoolExecutor | None = None
    #: Whether ``run`` installed the case alarm's handler for all its cases (``arm_case_alarm``).
    _alarm_held: bool = field(default=False, init=False, repr=False)

    def _worker(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="nnvts-case")
        return self._pool

    def run_case(self, family: Family, case: Case) -> CaseResult:
        start = time.perf_counter()
        if _can_use_alarm():
            outcome = self._run_with_alarm(family, case)
            return self._result(case, outcome, time.perf_counter() - start)
        future = self._worker().submit(run_family_case, family, case, self.device, self.options)
        try:
            outcome = future.result(timeout=self.options.case_timeout)
        except concurrent.futures.TimeoutError:
            # The hung call keeps its thread; a fresh worker serves the next case.
            self._pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[union-attr]
            self._pool = None
            outcome = Outcome(Verdict.TIMEOUT, f"no answer within {self.options.case_timeout:g} s")
        return self._result(case, outcome, time.perf_counter() - start)

    def _run_with_alarm(self, family: Family, case: Case) -> Outcome:
        """Run on this thread; SIGALRM ends a call that hangs in Python code.

        Cheaper than a thread hop per case (a sweep runs a million cases).  A
        driver stuck inside C code without returning to the interpreter is out
        of reach here: process isolation handles that.
        """
        previous = arm_case_alarm(self.options.case_timeout, self._alarm_held)
        try:
            return run_family_case(family, case, self.device, self.options)
        except _CaseTimeout:
            return Outcome(Verdict.TIMEOUT, f"no answer within {self.options.case_timeout:g} s")
        finally:
            disarm_case_alarm(previous)

    def _result(self, case: Case, outcome: Outcome, duration: float) -> CaseResult:
        verdict = outcome.verdict
        reason = bounds.cut_text(outcome.reason, bounds.MAX_RESULT_TEXT)
        if self.expectations is not None and self.expectations.expects_failure(case.name):
            if verdict.is_failure:
                verdict, reason = Verdict.XFAIL, f"expected failure: {reason}"
            elif verdict == Verdict.PASSED:
                verdict, reason = Verdict.XPASS, "listed as an expected failure but passed"
        operations, operand_types = case.labels()
        extra = {key: bounds.cut_text(value, bounds.MAX_RESULT_TEXT) if isinstance(value, str) else value
                 for key, value in outcome.extra.items()}
        if verdict.is_failure and case.model is not None and "operation" not in extra:
            operation = operation_parameters(case.model)  # a failure's detail names stride, dilation, ...
            if operation is not None:
                extra["operation"] = operation
        return CaseResult(
            name=case.name,
            family=case.family,
            verdict=verdict,
            reason=reason,
            duration=duration,
            details=bounded_details(outcome.details),
            operations=operations,
            operand_types=operand_types,
            spec=case.spec_path,
            extra=extra,
        )

    def closing_results(self) -> list[CaseResult]:
        """Results about the run rather than a case, added after the last case (see IsolatedRunner)."""
        return []

    def run(self, cases: Iterable[tuple[Family, Case]], sinks: Sequence[ResultSink]) -> bool:
        """Run every case; returns False when interrupted (Ctrl-C). Sinks are always finished."""
        global _sigint_tracking, _sigints
        interrupted = False
        tracking = threading.current_thread() is threading.main_thread()
        previous = None
        if tracking:
            previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, _note_sigint(previous))
            if _sigint_tracking == 0:
                _sigints = 0
            _sigint_tracking += 1
        holding = tracking and _can_use_alarm() and not self._alarm_held
        if holding:
            alarm_previous = signal.signal(signal.SIGALRM, _raise_case_timeout)
            self._alarm_held = True
        try:
            for family, case in cases:
                result = self.run_case(family, case)
                if signals.received() is not None:
                    # The signal's exception can land inside code that records any exception of a driver
                    # call as that call's outcome (a future's result, a family's judgement); the case it
                    # interrupted is not a verdict, and the run ends here all the same.
                    raise KeyboardInterrupt
                for sink in sinks:
                    sink.add(result)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            try:
                for result in self.closing_results():
                    for sink in sinks:
                        sink.add(result)
            finally:
                for sink in sinks:
                    sink.finish(interrupted)
                if self._pool is not None:
                    self._pool.shutdown(wait=False, cancel_futures=True)
                if tracking:
                    _sigint_tracking -= 1
                    signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
                if holding:
                    self._alarm_held = False
                    _restore_alarm_handler(alarm_previous)
        return not interrupted


def bounded_details(details: Iterable[object]) -> tuple[str, ...]:
    """A result's details, bounded: each text, their number and their total size (cut and marked)."""
    kept: list[str] = []
    total = 0
    items = list(details)
    for index, item in enumerate(items):
        text = _safe_text(item, bounds.MAX_RESULT_TEXT)
        if index >= bounds.MAX_RESULT_DETAILS or total + len(text) > bounds.MAX_RESULT_DETAILS_TEXT:
            kept.append(f"…[cut: {len(items) - index} more detail lines]")
            break
        kept.append(text)
        total += len(text)
    return tuple(kept)


def version_of(device: Device) -> str:
    """The device's version string for a report header; a failing call must not fail the run."""
    try:
        return str(device.get_version_string())
    except Exception as error:
        return f"<error: {error}>"
