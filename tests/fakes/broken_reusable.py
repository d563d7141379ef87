"""Reference drivers whose reusable executions (AIDL v4 ``IExecution``) break one rule each.

* ``keeps_first_inputs``: the execution reads the inputs of its first run on every later run (as if it had
  cached the memory's contents, not its mapping): caught by ``reusable_execution`` sync and fenced.
* ``runs_two_at_once``: a second execution starts while the first is in flight, neither refused nor
  serialised: caught by ``reusable_execution`` one_at_a_time.
* ``returns_no_execution``: ``createReusableExecution`` answers no execution and no error (over the protocol:
  the null handle): caught by ``reusable_execution`` sync, fenced and one_at_a_time.
* ``keeps_first_inputs_prepared_with_config``: ``keeps_first_inputs``, but only in models prepared through
  ``prepareModelWithConfig``: caught by ``reusable_execution`` prepared_with_config alone.
"""

from __future__ import annotations

from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.config import PrepareModelConfig
from vts.hal.enums import MeasureTiming
from vts.hal.interfaces import Device, Execution, PreparedModel
from vts.hal.memory import Memory
from vts.hal.types import Model, Request


class _FirstInputsKept(Execution):
    """Snapshots the input memory at its first run and writes it back before every later run."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._snapshot: list[tuple[Memory, bytes]] | None = None

    def _replay(self) -> None:
        pools = {argument.location.pool_index for argument in self.request.inputs if not argument.has_no_value}
        memories = [self.request.pools[index] for index in sorted(pools)]
        if self._snapshot is None:
            self._snapshot = [(m, m.read(0, m.size)) for m in memories if isinstance(m, Memory)]
        for memory, data in self._snapshot:
            memory.write(0, data)

    def execute(self, deadline: int | None = None) -> Any:
        self._replay()
        return super().execute(deadline)

    def execute_fenced(self, wait_for: Any, deadline: int | None = None, timeout_after_fence: int | None = None
                       ) -> Any:
        self._replay()
        return super().execute_fenced(wait_for, deadline, timeout_after_fence)


class _NoMark:
    """An in-flight mark that marks nothing."""

    def acquire(self, blocking: bool = True) -> bool:
        return True

    def release(self) -> None:
        return None


class _TwoAtOnce(Execution):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._in_flight = _NoMark()  # type: ignore[assignment]


class _NoExecution(Execution):
    """Stands for the answer ``None``: ``_ReusableFault`` returns nothing in its place."""


class _ReusableFault(ReferenceDevice):
    def __init__(self, name: str, execution: type[Execution]) -> None:
        super().__init__()
        self.name = name
        self.execution = execution

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return self.broken(super().prepare_model(model, *args, **kwargs))

    def broken(self, prepared: PreparedModel) -> PreparedModel:
        """``prepared`` with its reusable executions made of the fault's kind."""
        kind = self.execution

        def create(request: Request, measure: MeasureTiming | int = MeasureTiming.NO,
                   loop_timeout: int | None = None) -> Execution:
            return None if kind is _NoExecution else kind(prepared, request, measure, loop_timeout)  # type: ignore[return-value]

        prepared.create_reusable_execution = create  # type: ignore[method-assign]
        return prepared


class _ReusableFaultWithConfig(_ReusableFault):
    """The fault only in models prepared through ``prepare_model_with_config``: a driver with two preparation
    paths, one of them wrong."""

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return ReferenceDevice.prepare_model(self, model, *args, **kwargs)

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        return self.broken(super().prepare_model_with_config(model, config))


def keeps_first_inputs() -> Device:
    return _ReusableFault("broken-reusable-first-inputs", _FirstInputsKept)


def runs_two_at_once() -> Device:
    return _ReusableFault("broken-reusable-two-at-once", _TwoAtOnce)


def returns_no_execution() -> Device:
    return _ReusableFault("broken-reusable-no-execution", _NoExecution)


def keeps_first_inputs_prepared_with_config() -> Device:
    return _ReusableFaultWithConfig("broken-reusable-first-inputs-with-config", _FirstInputsKept)
