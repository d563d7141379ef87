"""The priority family: priorities are honoured at preparation and, where declared, in scheduling.

* Every valid priority (LOW, MEDIUM, HIGH) must be accepted at preparation
  and every invalid one (-1, 3, 100) refused with INVALID_ARGUMENT, on a
  model the driver supports: the float32 ADD chain, else the first ADD of
  ``_kit/supported_models`` it claims (a partial driver refuses an
  unsupported model whatever the priority; skipped when it claims none).
* Beyond the HAL suite, which only checks that priorities are accepted: a
  driver that declares it schedules by priority (``priority_scheduling =
  True`` on the device, an nnvts extension of the HAL) gets LOW and HIGH
  executions queued together, and the HIGH ones must finish first.  The
  observed completion order goes into the report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from vts.families._kit.executions import prepare_for_case
from vts.families._kit.supported_models import add_models, first_supported
from vts.families.base import Case, Family, Outcome, RunOptions, failed, passed, skipped
from vts.families.registry import register_family
from vts.hal.enums import ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device
from vts.model.builtin.synthetic import add_chain
from vts.model.casemodel import ConstantPolicy, build_request, close_model, to_hal_model

VALID = (Priority.LOW, Priority.MEDIUM, Priority.HIGH)
INVALID = (-1, 3, 100)
#: Executions per priority in the scheduling test.
QUEUED = 4


def _small_model():
    return add_chain("add_chain", length=4, size=8)


@register_family
class PriorityFamily(Family):
    name = "priority"
    description = "valid priorities accepted, invalid refused; HIGH-priority executions scheduled first"

    def device_cases(self) -> Iterator[Case]:
        small = _small_model()
        for priority in VALID:
            yield Case(f"{self.name}/prepare_{priority.name.lower()}", self.name, small, 0, "",
                       {"test": "valid", "priority": int(priority)})
        for value in INVALID:
            yield Case(f"{self.name}/prepare_invalid_{value}", self.name, small, 0, "",
                       {"test": "invalid", "priority": value})
        long_model = add_chain("long_add_chain", length=60, size=1 << 17)
        yield Case(f"{self.name}/scheduling_high_before_low", self.name, long_model, 0, "", {"test": "scheduling"})

    def run(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        test = case.config["test"]
        if test == "scheduling":
            return self._run_scheduling(case, device, options)
        assert case.model is not None
        priority = case.config["priority"]
        model, why = first_supported(device, [case.model, *add_models("priority_add")], options)
        if model is None:
            return skipped(f"the driver supports none of the models priorities are prepared with: {why}")
        hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind))
        try:
            device.prepare_model(hal_model, ExecutionPreference.FAST_SINGLE_ANSWER, priority)
            status = ErrorStatus.NONE
        except DriverError as error:
            status = error.status
        finally:
            close_model(hal_model)
        expected = ErrorStatus.NONE if test == "valid" else ErrorStatus.INVALID_ARGUMENT
        if status != expected:
            return failed(f"prepare_model with priority {priority} returned {status.name}, expected {expected.name}")
        return passed(status.name)

    def _run_scheduling(self, case: Case, device: Device, options: RunOptions) -> Outcome:
        if not getattr(device, "priority_scheduling", False):
            return skipped("the driver does not declare priority scheduling (priority_scheduling = True)")
        assert case.model is not None
        prepared = {}
        for priority in (Priority.LOW, Priority.HIGH):
            prepared_model, why = prepare_for_case(device, case.model, options, priority=priority)
            if prepared_model is None:
                return skipped(why)
            prepared[priority] = prepared_model
        order: list[str] = []
        lock = threading.Lock()
        done = threading.Event()
        futures = []

        def finished(label: str) -> None:
            with lock:
                order.append(label)
                if len(order) == 2 * QUEUED:
                    done.set()

        # Every request is in shared memory before the first submission, so the HIGH executions follow the LOW
        # ones within microseconds: the LOW ones are still queued when a fast driver sees the HIGH ones.
        labelled = []
        done_before_high = -1
        try:
            for priority, label in ((Priority.LOW, "L"), (Priority.HIGH, "H")):
                for _ in range(QUEUED):
                    labelled.append((priority, label, build_request(case.model, case.model.examples[0],
                                                                    options.pool_kind)))
            started = time.monotonic()
            for priority, label, built in labelled:
                if label == "H" and done_before_high < 0:
                    with lock:  # the LOW executions that ended before any HIGH one existed cannot be overtaken
                        done_before_high = len(order)
                future = prepared[priority].execute_async(built.request, MeasureTiming.NO)
                future.add_done_callback(lambda f, label=label: finished(label))
                futures.append(future)
            done.wait(max(options.case_timeout - 1.0, 1.0))
            for future in futures:
                future.result(timeout=1.0)
            elapsed = time.monotonic() - started
        finally:
            for _, _, built in labelled:
                built.close()
        observed = "".join(order)
        extra = {"completion_order": observed, "seconds": round(elapsed, 3), "low_done_before_high": done_before_high}
        if done_before_high >= QUEUED:
            return skipped(f"every LOW execution ended before the first HIGH one was submitted ({elapsed * 1000:.1f} "
                           "ms for all eight: execute_async returned after its execution, or the executions are too "
                           "short to queue): nothing to judge")
        # LOW executions already running when the HIGH ones arrived may finish first; allow one per core, and
        # none of those that had ended before the first HIGH submission counts.
        lows_before_last_high = observed[done_before_high: observed.rfind("H")].count("L")
        if lows_before_last_high > 2:
            return failed(f"completion order {observed}: {lows_before_last_high} LOW executions finished before "
                          "the last HIGH one although the driver declares priority scheduling", **extra)
        return passed(f"completion order {observed}", **extra)
