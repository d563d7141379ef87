"""Shared mechanics of model-driven families: prepare a model, execute a request.

``create_prepared_model`` is the suite's createPreparedModel (VTS
VtsHalNeuralnetworks.cpp): the support query must answer NONE with one flag per operation; a
model that is not fully supported may be refused at preparation (the case is
then skipped), a fully supported one may not.  A model that only the NNAPI
runtime accepts (ValidateHal's driver mode refuses it, e.g. WHILE operands
of unknown size) may be refused with INVALID_ARGUMENT by either call, and
is skipped with the rule as the reason; a driver that accepts it is judged
like any other.  ``execute`` drives one of the
execution paths and normalises what came back into an ``Answer``, so every
family judges sync, async and fenced executions the same way.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from vts.families.base import Case, CaseFailure, RunOptions
from vts.hal.config import PrepareModelConfig
from vts.hal.enums import NO_TIMING, ErrorStatus, HalVersion, MeasureTiming, OperandType, OperationType, enum_name
from vts.hal.errors import DriverError
from vts.hal.interfaces import Device, PreparedModel, SyncFence, spoken_version
from vts.hal.types import NO_TIMING_INFO, Model, Operation, OutputShape, Request, Timing
from vts.model.casemodel import (
    BuiltRequest,
    CaseExample,
    CaseModel,
    ConstantPolicy,
    TensorData,
    close_model,
    dtype_of,
    element_count,
    to_hal_model,
)


class Executor(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    FENCED = "fenced"


@dataclass(frozen=True, slots=True)
class Answer:
    """What an execution returned, whichever path it took."""

    status: ErrorStatus
    output_shapes: tuple[OutputShape, ...] = ()
    timing: Timing = NO_TIMING_INFO
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == ErrorStatus.NONE


@dataclass(frozen=True, slots=True)
class Preparation:
    prepared: PreparedModel | None
    supported: tuple[bool, ...]
    error: DriverError | None = None
    #: The driver-mode rule that made an INVALID_ARGUMENT refusal right ("" if not refused so).
    refused: str = ""

    @property
    def fully_supported(self) -> bool:
        return all(self.supported)

    def skip_reason(self, model: Model) -> str:
        """Why a case is skipped when there is no prepared model."""
        if self.refused:
            return f"refused as the HAL allows: a model only the NNAPI runtime accepts ({self.refused})"
        return f"unsupported: {unsupported_names(model, self.supported)}"


class AllowedRefusal(Exception):
    """The driver refused (INVALID_ARGUMENT) a model that is invalid for a HAL 1.3 driver.

    The spec's model is valid for the NNAPI runtime, but ValidateHal's driver
    mode refuses it (WHILE operands of unknown size: the runtime runs such
    models on its own CPU path).  A driver refusing it is right; the case is
    skipped with the rule as the reason.
    """

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


def driver_mode_violation(model: Model, version: HalVersion = HalVersion.V1_3) -> str | None:
    """Why ValidateHal's driver mode refuses ``model`` for a driver of ``version`` (None: it must accept it)."""
    from vts.hal.validation import ValidationError, validate_model

    try:
        validate_model(model, version, hal_rules_only=True)
    except ValidationError as error:
        return error.message
    return None


def _refusal_allowed(model: Model, error: DriverError, version: HalVersion = HalVersion.V1_3) -> None:
    """Raise ``AllowedRefusal`` when an INVALID_ARGUMENT refusal is what the HAL's driver mode demands."""
    if error.status == ErrorStatus.INVALID_ARGUMENT:
        rule = driver_mode_violation(model, version)
        if rule is not None:
            raise AllowedRefusal(rule) from None


def sent_unchanged(device: Device, model: Model, made_from: Model | None = None
                   ) -> contextlib.AbstractContextManager[object]:
    """A block in which ``model`` is sent to ``device`` unchanged, however often: a device that crosses a
    process boundary then encodes it once (``model_sent_unchanged``); any other device ignores it.

    ``made_from``: the model ``model`` is a mutation of, sharing the operands and operations the
    mutation left alone as the same objects; nobody may change those while the caller goes on naming it.
    """
    hint = getattr(device, "model_sent_unchanged", None)
    if not callable(hint):
        return contextlib.nullcontext()
    return hint(model) if made_from is None else hint(model, made_from)


def supported_operations(device: Device, model: Model) -> tuple[bool, ...]:
    """``getSupportedOperations``: must answer NONE with one flag per main operation.

    Except for a model only the runtime accepts: INVALID_ARGUMENT is then
    the right answer (``AllowedRefusal``).
    """
    try:
        flags = device.get_supported_operations(model)
    except DriverError as error:
        _refusal_allowed(model, error, spoken_version(device))
        raise CaseFailure(f"get_supported_operations returned {error.status.name} for a valid model",
                          (error.message,)) from None
    flags = tuple(flags)
    wrong = [f for f in flags if not isinstance(f, (bool, np.bool_))]
    if wrong:
        # A flag must be a bool: "yes", 1 or None is no answer to "is this operation supported?".
        raise CaseFailure(f"get_supported_operations returned {type(wrong[0]).__name__} flags; each must be a bool")
    flags = tuple(bool(f) for f in flags)
    if len(flags) != len(model.main.operations):
        raise CaseFailure(f"get_supported_operations returned {len(flags)} flags for "
                          f"{len(model.main.operations)} operations")
    return flags


def unsupported_names(model: Model, flags: Sequence[bool]) -> str:
    """The operations not claimed, each with the type of its first input ("CONV_2D on TENSOR_FLOAT16").

    The operand type is what tells a vendor which kernel is missing: a driver
    with float32 CONV_2D skips the float16 and quantized variants.
    """
    operands = model.main.operands

    def label(op: Operation) -> str:
        name = enum_name(OperationType, op.type)
        if op.inputs and 0 <= op.inputs[0] < len(operands):
            return f"{name} on {enum_name(OperandType, operands[op.inputs[0]].type)}"
        return name

    names = sorted({label(op) for op, ok in zip(model.main.operations, flags, strict=True) if not ok})
    return ", ".join(names)


def claim_broken(status: ErrorStatus) -> str:
    """The reason of a case whose model was claimed whole by ``get_supported_operations``, then refused.

    Every family says it in these words, whichever preparation found it (the caching family's, the deadline
    family's), so the report gathers them into one cause (``vts.report.causes``), the support claim's.
    """
    return f"prepare_model failed with {status.name} although every operation was reported supported"


def refused_plainly(device: Device, model: Model) -> bool:
    """Whether ``prepare_model`` with the default arguments (no deadline, no cache handles) refuses ``model``.

    Asked after a preparation with other arguments failed: when the plain one fails too, those arguments
    are not to blame, the claim is.
    """
    try:
        device.prepare_model(model)
    except DriverError:
        return True
    return False


def create_prepared_model(device: Device, model: Model, with_config: PrepareModelConfig | None = None,
                          **kwargs: object) -> Preparation:
    """Prepare ``model`` the way the suite does; refusal of an unsupported model is allowed.

    ``with_config``: prepare through AIDL v4's ``prepare_model_with_config`` with that parcel instead.
    """
    try:
        flags = supported_operations(device, model)
    except AllowedRefusal as refusal:
        return Preparation(None, (), refused=refusal.rule)
    try:
        if with_config is not None:
            prepared = device.prepare_model_with_config(model, with_config)
        else:
            prepared = device.prepare_model(model, **kwargs)  # type: ignore[arg-type]
    except DriverError as error:
        try:
            _refusal_allowed(model, error, spoken_version(device))
        except AllowedRefusal as refusal:
            return Preparation(None, flags, error, refused=refusal.rule)
        if all(flags):
            raise CaseFailure(claim_broken(error.status), (error.message,)) from None
        return Preparation(None, flags, error)
    if prepared is None:
        raise CaseFailure("prepare_model returned no prepared model and no error")
    return Preparation(prepared, flags)


def execute(
    prepared: PreparedModel,
    request: Request,
    executor: Executor,
    measure: MeasureTiming = MeasureTiming.NO,
    deadline: int | None = None,
    loop_timeout: int | None = None,
    timeout: float | None = None,
) -> Answer:
    """Run ``request`` through one execution path and normalise the answer.

    An asynchronous launch error and a callback error are both reported as
    the answer's status; families that must tell them apart call
    ``execute_async`` themselves.
    """
    try:
        if executor is Executor.SYNC:
            result = prepared.execute(request, measure, deadline, loop_timeout)
            return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        if executor is Executor.ASYNC:
            future = prepared.execute_async(request, measure, deadline, loop_timeout)
            result = future.result(timeout)
            return Answer(ErrorStatus.NONE, tuple(result.output_shapes), result.timing)
        fence, callback = prepared.execute_fenced(request, [], measure, deadline, loop_timeout, None)
        if fence is not None and not fence.wait(timeout):
            raise CaseFailure("the sync fence of a fenced execution did not signal success")
        if callback is None:
            raise CaseFailure("execute_fenced returned no callback on success")
        status, launched, _fenced = callback.get_execution_info()
        return Answer(ErrorStatus(status), (), launched)
    except DriverError as error:
        return Answer(error.status, error.output_shapes, error.timing or Timing(), error.message)


def timing_problems(answer: Answer, measure: MeasureTiming) -> list[str]:
    """HAL timing rules: nothing unless measured and successful; on-device <= in-driver."""
    timing = answer.timing
    if measure == MeasureTiming.NO or not answer.ok:
        if timing.time_on_device != NO_TIMING or timing.time_in_driver != NO_TIMING:
            why = "timing was not requested" if measure == MeasureTiming.NO else "the execution failed"
            return [f"timing reported although {why}: {timing}"]
        return []
    if (timing.time_on_device != NO_TIMING and timing.time_in_driver != NO_TIMING
            and timing.time_on_device > timing.time_in_driver):
        return [f"time on device {timing.time_on_device} us exceeds time in driver {timing.time_in_driver} us"]
    return []


def null_fence() -> list[SyncFence | None]:
    """A wait list holding the HAL's null handle (a driver must refuse it)."""
    return [None]


class PreparedModelCache:
    """The prepared form of the model a family is working through.

    The cases of one model arrive together, so a one-entry cache saves a
    preparation per case; a refusal (unsupported model) is cached too, with
    the reason the cases are skipped.  The entry belongs to one device
    object: after a crash the runner serves the next case from a restarted
    driver process (a new device), and the old prepared model died with
    the old process.
    """

    def __init__(self) -> None:
        self._key: tuple[str, str] | None = None
        self._device: Device | None = None
        self._entry: tuple[PreparedModel | None, str] = (None, "")

    def get(self, key: tuple[str, str], device: Device, build: Callable[[], Model],
            release: Callable[[Model], None]) -> tuple[PreparedModel | None, str]:
        if self._key != key or self._device is not device:
            model = build()
            try:
                preparation = create_prepared_model(device, model)
                why = "" if preparation.prepared else preparation.skip_reason(model)
            finally:
                release(model)
            self._key, self._device, self._entry = key, device, (preparation.prepared, why)
        return self._entry

    def for_case(self, spec_path: str, model: CaseModel, device: Device,
                 options: RunOptions) -> tuple[PreparedModel | None, str]:
        """``get`` for a test model turned into a HAL model (its constant pool closed after preparing).

        Keyed by the model's case name, unique in a run as case names are (two specs' models may share a
        plain name)."""
        return self.get((spec_path, model.case_name()), device,
                        lambda: to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind), options.extensions),
                        close_model)

    def for_version(self, case: Case, device: Device, options: RunOptions, least: HalVersion,
                    rule: str) -> tuple[PreparedModel | None, str]:
        """``for_case`` for a case of a rule that interface ``least`` introduced: (None, the skip reason naming
        ``rule`` and what the driver speaks) on a driver of an older one."""
        speaks = spoken_version(device)
        if speaks < least:
            return None, f"{rule}; the driver speaks {speaks.interface}"
        assert case.model is not None
        return self.for_case(case.spec_path, case.model, device, options)


def prepare_for_case(device: Device, model: CaseModel, options: RunOptions, extensions: object = None,
                     **prepare_kwargs: object) -> tuple[PreparedModel | None, str]:
    """Prepare a test model for one case: (prepared model, "") or (None, why the case is skipped).

    The HAL model (and its constant pool) lives only for the preparation;
    the prepared model keeps what it needs.
    """
    hal_model = to_hal_model(model, ConstantPolicy(pool_kind=options.pool_kind),
                             extensions if extensions is not None else options.extensions)
    try:
        preparation = create_prepared_model(device, hal_model, **prepare_kwargs)
    finally:
        close_model(hal_model)
    if preparation.prepared is None:
        return None, preparation.skip_reason(hal_model)
    return preparation.prepared, ""


def answer_outputs(model: CaseModel, built: BuiltRequest, answer: Answer, sized: CaseExample) -> dict[int, TensorData]:
    """The outputs an execution wrote, as an example's goldens (dims from the answer, else ``sized``)."""
    outputs = {}
    for position, index in enumerate(model.main.outputs):
        operand = model.main.operands[index]
        if answer.output_shapes:
            dims = tuple(answer.output_shapes[position].dimensions)
        elif position in sized.outputs:
            dims = tuple(sized.outputs[position].dims)
        else:
            dims = tuple(operand.dims)
        outputs[position] = TensorData(dims, built.read_output(position, dtype_of(operand.type), element_count(dims)))
    return outputs
