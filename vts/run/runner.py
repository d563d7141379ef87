"""The run loop: cases from specs and families, one guarded call per case, results to sinks.

Cases are generated lazily (spec file by spec file), so a sweep of hundreds
of thousands of validation cases never sits in memory.  Each case runs under
a time limit; a case whose driver call raises something other than
``DriverError`` or hangs is that case's failure, and the run goes on.
"""

from __future__ import annotations

import concurrent.futures
import signal
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from vts.extensions import ExtensionNotAllowed
from vts.families.base import Case, CaseFailure, DeviceInfo, Family, HarnessError, Outcome, RunOptions
from vts.families.executions import AllowedRefusal
from vts.families.registry import families as registered_families
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.ipc.errors import DriverLost, DriverTimeout
from vts.results import CaseResult, Verdict
from vts.run import signals
from vts.run.selection import ExpectationList, Expression, Shard
from vts.testmodel import ModelFormatError, TestModel, parse_spec


class ResultSink(Protocol):
    def add(self, result: CaseResult) -> None: ...

    def finish(self, interrupted: bool) -> None: ...


@dataclass
class Selection:
    """Which cases a run (or ``nnvts list``) covers."""

    spec_paths: Sequence[str]
    families: Sequence[str] | None = None  # None: the default families
    keyword: Expression | None = None
    shard: Shard | None = None

    def selects(self, name: str) -> bool:
        if self.keyword is not None and not self.keyword(name):
            return False
        return self.shard is None or self.shard(name)


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


def iter_models(spec_paths: Sequence[str], extensions: object = None) -> Iterator[tuple[str, TestModel]]:
    from vts.spec.loader import load_paths

    for spec_file in load_paths(spec_paths):
        for model in parse_spec(spec_file.document, extensions):  # type: ignore[arg-type]
            yield spec_file.path, model


def iter_cases(selection: Selection, device: DeviceInfo | None = None,
               extensions: object = None) -> Iterator[tuple[Family, Case]]:
    chosen = select_families(selection.families, device)
    for family in chosen:
        for case in family.device_cases():
            if selection.selects(case.name):
                yield family, case
    model_families = [f for f in chosen if type(f).model_cases is not Family.model_cases]
    if not model_families:
        return
    for spec_path, model in iter_models(selection.spec_paths, extensions):
        for family in model_families:
            for case in family.model_cases(model, spec_path):
                if selection.selects(case.name):
                    yield family, case


class _CaseTimeout(BaseException):
    """Raised by the SIGALRM handler; a BaseException so driver code's ``except Exception`` cannot eat it."""


def _raise_case_timeout(signum: int, frame: object) -> None:
    # Python swallows an exception raised inside a __del__ or weakref callback; re-arm so a
    # case that was interrupted there still ends within a second.
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    raise _CaseTimeout


def _can_use_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _crash_outcome(error: BaseException) -> Outcome:
    # An exception raised in a driver host carries the driver's own traceback.
    remote = getattr(error, "remote_traceback", "")
    tail = remote.splitlines()[-3:] if remote else traceback.format_exception(
        type(error), error, error.__traceback__)[-3:]
    return Outcome(Verdict.FAILED, f"driver raised {type(error).__name__}: {error}",
                   tuple(line.rstrip() for line in tail))


def run_family_case(family: Family, case: Case, device: Device, options: RunOptions) -> Outcome:
    """Run one case and turn every way it can end into an Outcome."""
    try:
        return family.run(case, device, options)
    except CaseFailure as failure:
        return Outcome(Verdict.FAILED, failure.reason, failure.details)
    except ExtensionNotAllowed as denied:
        return Outcome(Verdict.SKIPPED, str(denied))
    except AllowedRefusal as refusal:
        return Outcome(Verdict.SKIPPED, f"refused as the HAL allows: a model only the NNAPI runtime accepts "
                                        f"({refusal.rule})")
    except (HarnessError, ModelFormatError) as error:
        return Outcome(Verdict.ERROR, f"harness: {error}")
    except DriverError as error:
        return Outcome(Verdict.FAILED, f"unexpected {error.status.name} from the driver",
                       (error.message,) if error.message else ())
    except DriverLost as lost:
        # An out-of-process driver died or hung (the isolated runner refines this after the case).
        verdict = Verdict.TIMEOUT if isinstance(lost, DriverTimeout) else Verdict.CRASH
        return Outcome(verdict, f"driver lost: {lost.reason}")
    except Exception as error:
        return _crash_outcome(error)


@dataclass
class Runner:
    """Runs cases in process, each under ``options.case_timeout`` seconds."""

    device: Device
    options: RunOptions = field(default_factory=RunOptions)
    expectations: ExpectationList | None = None
    _pool: concurrent.futures.ThreadPoolExecutor | None = None

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
        previous = signal.signal(signal.SIGALRM, _raise_case_timeout)
        signal.setitimer(signal.ITIMER_REAL, self.options.case_timeout)
        try:
            return run_family_case(family, case, self.device, self.options)
        except _CaseTimeout:
            return Outcome(Verdict.TIMEOUT, f"no answer within {self.options.case_timeout:g} s")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _result(self, case: Case, outcome: Outcome, duration: float) -> CaseResult:
        verdict = outcome.verdict
        reason = outcome.reason
        if self.expectations is not None and self.expectations.expects_failure(case.name):
            if verdict.is_failure:
                verdict, reason = Verdict.XFAIL, f"expected failure: {reason}"
            elif verdict == Verdict.PASSED:
                verdict, reason = Verdict.XPASS, "listed as an expected failure but passed"
        operations, operand_types = case.labels()
        return CaseResult(
            name=case.name,
            family=case.family,
            verdict=verdict,
            reason=reason,
            duration=duration,
            details=tuple(outcome.details),
            operations=operations,
            operand_types=operand_types,
            spec=case.spec_path,
            extra=dict(outcome.extra),
        )

    def run(self, cases: Iterable[tuple[Family, Case]], sinks: Sequence[ResultSink]) -> bool:
        """Run every case; returns False when interrupted (Ctrl-C). Sinks are always finished."""
        interrupted = False
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
            for sink in sinks:
                sink.finish(interrupted)
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
        return not interrupted
