"""Reference drivers (AIDL v4) that validate the older calls but skip validation on a call AIDL v4 added.

Each is caught by the ``validation`` family only through the AIDL v4 calls it sends (Android 13's VTS,
ValidateModel.cpp / ValidateRequest.cpp for ``aidlVersion >= kMinAidlLevelForFL8``):

* ``prepares_with_config_unchecked``: ``prepareModelWithConfig`` skips model validation and compiles whatever
  comes, which fails with GENERAL_FAILURE (an invalid preference or priority is taken as the default): every
  model mutation's case fails, naming ``[prepareModelWithConfig]``;
* ``sync_with_config_unchecked``, ``fenced_with_config_unchecked``, ``burst_with_config_unchecked``: that one
  ``*WithConfig`` execution skips request validation and answers an invalid request as a success with no
  outputs: the request mutations' ``sync`` (``fenced``) cases fail;
* ``reusable_unchecked``: ``createReusableExecution`` skips validation and so do the execution's runs: the
  request mutations' ``sync`` cases fail (where the reusable execution is checked);
* ``reusable_fenced_run_unchecked``: creation skips validation, the synchronous run refuses, the fenced run
  accepts: the ``sync`` cases fail, naming ``[reusable executeFenced]``.

``reusable_checks_at_run`` is correct: it accepts any request at creation and refuses an invalid one on every
run, as IPreparedModel.aidl allows; it must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nnvts.drivers.reference.device import ReferenceDevice
from vts.hal.config import ExecutionConfig, PrepareModelConfig
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.interfaces import Burst, CompletedFencedCallback, Device, Execution, PreparedModel
from vts.hal.types import NO_TIMING_INFO, ExecutionResult, Model, Request


def _lenient(call: Callable[[], Any], accepted: Callable[[], Any]) -> Any:
    """``call``, with an INVALID_ARGUMENT answered as ``accepted()`` instead: validation skipped."""
    try:
        return call()
    except DriverError as error:
        if error.status != ErrorStatus.INVALID_ARGUMENT:
            raise
        return accepted()


def _fenced_success() -> tuple[None, CompletedFencedCallback]:
    return None, CompletedFencedCallback(NO_TIMING_INFO, NO_TIMING_INFO)


class _PreparesWithConfigUnchecked(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.name = "broken-fl8-prepares-with-config-unchecked"

    def prepare_model_with_config(self, model: Model, config: PrepareModelConfig) -> PreparedModel:
        try:
            return super().prepare_model_with_config(model, config)
        except DriverError as error:
            if error.status != ErrorStatus.INVALID_ARGUMENT:
                raise
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "compilation failed (the model was never validated)"
                              ) from None


class _LenientBurst(Burst):
    def execute_with_config(self, request: Request, memory_ids: Sequence[int], config: ExecutionConfig,
                            deadline: int | None = None) -> ExecutionResult:
        return _lenient(lambda: super(_LenientBurst, self).execute_with_config(request, memory_ids, config, deadline),
                        ExecutionResult)


class _UncheckedPath(ReferenceDevice):
    """The reference with one execution call of its prepared models made lenient."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.name = f"broken-fl8-{path}-unchecked"
        self.path = path

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        prepared = super().prepare_model(model, *args, **kwargs)
        if self.path == "sync_with_config":
            sync = prepared.execute_synchronously_with_config
            prepared.execute_synchronously_with_config = (  # type: ignore[method-assign]
                lambda request, config, deadline=None: _lenient(lambda: sync(request, config, deadline),
                                                                ExecutionResult))
        elif self.path == "fenced_with_config":
            fenced = prepared.execute_fenced_with_config
            prepared.execute_fenced_with_config = (  # type: ignore[method-assign]
                lambda request, wait_for, config, deadline=None, after=None: _lenient(
                    lambda: fenced(request, wait_for, config, deadline, after), _fenced_success))
        elif self.path == "burst_with_config":
            prepared.configure_execution_burst = lambda: _LenientBurst(prepared)  # type: ignore[method-assign]
        else:
            kind = {"reusable_checks_at_run": Execution, "reusable_fenced_run_unchecked": _UncheckedFencedRun,
                    "reusable": _UncheckedExecution}[self.path]
            prepared.create_reusable_execution = (  # type: ignore[method-assign]
                lambda request, measure=MeasureTiming.NO, loop_timeout=None:
                kind(prepared, request, measure, loop_timeout))
        return prepared


class _UncheckedFencedRun(Execution):
    """Created without validation; its fenced runs answer an invalid request as a success."""

    def execute_fenced(self, wait_for: Sequence[Any], deadline: int | None = None,
                       timeout_after_fence: int | None = None) -> Any:
        return _lenient(lambda: super(_UncheckedFencedRun, self).execute_fenced(wait_for, deadline,
                                                                                 timeout_after_fence),
                        _fenced_success)


class _UncheckedExecution(_UncheckedFencedRun):
    """Created without validation, and all its runs answer an invalid request as a success."""

    def execute(self, deadline: int | None = None) -> ExecutionResult:
        return _lenient(lambda: super(_UncheckedExecution, self).execute(deadline), ExecutionResult)


def prepares_with_config_unchecked() -> Device:
    return _PreparesWithConfigUnchecked()


def sync_with_config_unchecked() -> Device:
    return _UncheckedPath("sync_with_config")


def fenced_with_config_unchecked() -> Device:
    return _UncheckedPath("fenced_with_config")


def burst_with_config_unchecked() -> Device:
    return _UncheckedPath("burst_with_config")


def reusable_unchecked() -> Device:
    return _UncheckedPath("reusable")


def reusable_fenced_run_unchecked() -> Device:
    return _UncheckedPath("reusable_fenced_run_unchecked")


def reusable_checks_at_run() -> Device:
    return _UncheckedPath("reusable_checks_at_run")
