"""Reference devices each wrong only where the corpus and the default configurations never look.

Each breaks exactly one rule that real drivers have broken, passes the
``generated`` family on the bundled specs, and is caught by the family its
factory's docstring names (issue 22: fences, preparation arguments, sizes,
quantization parameters, extension prefixes).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnvts.drivers.reference.device import ReferenceDevice
from nnvts.drivers.reference.ops import binary
from nnvts.drivers.reference.ops.registry import OpDef
from nnvts.drivers.reference.prepared_model import ReferencePreparedModel
from nnvts.drivers.reference.quant import multiply_by_quantized_multiplier, quantize_multiplier
from nnvts.drivers.reference.tensor import OpContext, Tensor
from tests.fakes.broken_concurrency import _CompiledView
from vts.hal.enums import ErrorStatus, ExecutionPreference, MeasureTiming, OperandType, OperationType
from vts.hal.errors import DriverError
from vts.hal.interfaces import FencedExecutionCallback, PreparedModel, SyncFence
from vts.hal.types import NO_TIMING_INFO, ExtensionNameAndPrefix, Model, Request, Timing


class _Device(ReferenceDevice):
    """A reference device whose prepared models are ``prepared_class`` (every check of the reference kept)."""

    prepared_class: type[ReferencePreparedModel] = ReferencePreparedModel

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        reference = super().prepare_model(model, *args, **kwargs)
        assert isinstance(reference, ReferencePreparedModel)
        prepared = self.prepared_class(reference.model, reference.priority, self.scheduler, self.memory_budget,
                                       self.memory)
        self.adjust(prepared, model, *args, **kwargs)
        return prepared

    def adjust(self, prepared: ReferencePreparedModel, model: Model, *args: Any, **kwargs: Any) -> None:
        """Change the prepared model according to the preparation's arguments (nothing by default)."""


def _replace_run(prepared: ReferencePreparedModel, post: Any) -> None:
    """Route every result of ``prepared``'s interpreter through ``post(results) -> results``."""
    compiled = prepared.compiled
    original = compiled.run

    def run(inputs: Any, clock: Any, timeout: Any = None) -> Any:
        return post(original(inputs, clock, timeout))

    prepared.compiled = _CompiledView(compiled, run)  # type: ignore[assignment]


# -- fences ------------------------------------------------------------------------------------------


def _refuse_null_fences(wait_for: Sequence[SyncFence | None]) -> None:
    """What every fake keeps of the HAL's fenced preamble: a null wait fence is INVALID_ARGUMENT."""
    if any(fence is None for fence in wait_for):
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, "null wait fence")


class _NoWaitPreparedModel(ReferencePreparedModel):
    """Refuses null fences, then starts at once: the wait-for fences are never waited on."""

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None], *args: Any,
                       **kwargs: Any) -> tuple[SyncFence | None, FencedExecutionCallback]:
        _refuse_null_fences(wait_for)
        return super().execute_fenced(request, [], *args, **kwargs)


class NoWaitDevice(_Device):
    prepared_class = _NoWaitPreparedModel


def fence_no_wait() -> ReferenceDevice:
    """Caught by ``fenced`` (inputs written just before the wait fence signals are read too early)."""
    return NoWaitDevice("broken-fence-no-wait")


#: How long ``fence_late_start`` takes from an ``execute_fenced`` call to starting its work.
LATE_START_S = 0.1


class _LateStartCallback(FencedExecutionCallback):
    def __init__(self, done: threading.Event) -> None:
        self.done, self.status = done, ErrorStatus.NONE

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        self.done.wait()
        return self.status, NO_TIMING_INFO, NO_TIMING_INFO


class _LateStartPreparedModel(ReferencePreparedModel):
    """Returns at once with a fence of its own; starts ``LATE_START_S`` later without waiting for ``wait_for``.

    A fence already signalled in error by then fails the execution, so only a check made while a fence
    still pends sees that it does not wait; every execution, golden or not, starts that late.
    """

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        _refuse_null_fences(wait_for)
        own, done = SyncFence(), threading.Event()
        callback = _LateStartCallback(done)

        def work() -> None:
            time.sleep(LATE_START_S)
            try:
                if any(fence is not None and fence.signalled and not fence.wait(0) for fence in wait_for):
                    raise DriverError(ErrorStatus.GENERAL_FAILURE, "a wait fence signalled an error")
                self.execute(request, MeasureTiming.NO, deadline, loop_timeout)
            except DriverError as error:
                callback.status = error.status
            done.set()
            own.signal(callback.status == ErrorStatus.NONE)

        threading.Thread(target=work, daemon=True).start()
        return own, callback


class LateStartDevice(_Device):
    prepared_class = _LateStartPreparedModel


def fence_late_start() -> ReferenceDevice:
    """Caught by ``fenced`` (a fence still pending when it starts, ``LATE_START_S`` after the call, is not
    waited on)."""
    return LateStartDevice("broken-fence-late-start")


class _ErrorBlindPreparedModel(ReferencePreparedModel):
    """Waits for every fence, but runs even when one signalled an error."""

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        _refuse_null_fences(wait_for)
        for fence in wait_for:
            assert fence is not None
            fence.wait()  # the result, success or error, is dropped
        # Then runs as if no fence had been given: timeout_after_fence (1 ms in the check) is not passed on,
        # or on a loaded machine it would fail the execution for a reason that is not this fault.
        return super().execute_fenced(request, [], measure, deadline, loop_timeout)


class ErrorBlindDevice(_Device):
    prepared_class = _ErrorBlindPreparedModel


def fence_error_blind() -> ReferenceDevice:
    """Caught by ``fenced`` (a wait fence signalled in error must fail the execution)."""
    return ErrorBlindDevice("broken-fence-error-blind")


class _TimedWaitPreparedModel(ReferencePreparedModel):
    """Waits for its fences at most ``timeout_after_fence`` (the HAL counts it from the signal), then runs."""

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None],
                       measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                       loop_timeout: int | None = None,
                       timeout_after_fence: int | None = None) -> tuple[SyncFence | None, FencedExecutionCallback]:
        _refuse_null_fences(wait_for)
        limit = None if timeout_after_fence is None else timeout_after_fence / 1e9
        for fence in wait_for:
            assert fence is not None
            fence.wait(limit)  # gives up on a fence that has not signalled in time, and runs anyway
        return super().execute_fenced(request, [], measure, deadline, loop_timeout, None)


class TimedWaitDevice(_Device):
    prepared_class = _TimedWaitPreparedModel


def fence_timed_wait() -> ReferenceDevice:
    """Caught by ``fenced`` (a fence that never signals, with timeout_after_fence: nothing may run)."""
    return TimedWaitDevice("broken-fence-timed-wait")


# -- preparation arguments ---------------------------------------------------------------------------


def _in_float16(results: list[Tensor]) -> list[Tensor]:
    for tensor in results:
        if tensor.type == OperandType.TENSOR_FLOAT32:
            tensor.value = tensor.value.astype(np.float16).astype(np.float32)
    return results


class LowPowerHalfDevice(_Device):
    """Computes float32 in float16 when prepared for LOW_POWER, although the model is not relaxed."""

    def adjust(self, prepared: ReferencePreparedModel, model: Model,
               preference: ExecutionPreference | int = ExecutionPreference.FAST_SINGLE_ANSWER,
               *args: Any, **kwargs: Any) -> None:
        preference = kwargs.pop("preference", preference)
        if int(preference) == ExecutionPreference.LOW_POWER and not model.relax_computation_float32_to_float16:
            _replace_run(prepared, _in_float16)


def low_power_half() -> ReferenceDevice:
    """Caught by ``deadline`` (every preference and priority judged with the model's own bounds)."""
    return LowPowerHalfDevice("broken-low-power-half")




# -- extension prefixes ------------------------------------------------------------------------------


def _by_position(model: Model) -> Model:
    """The model as a driver sees it that numbers ``extensionNameToPrefix`` 1, 2, ... in list order."""
    renumbered = model.copy()
    renumbered.extension_name_to_prefix = [ExtensionNameAndPrefix(entry.name, position + 1) for position, entry
                                           in enumerate(model.extension_name_to_prefix)]
    return renumbered


class PositionalPrefixDevice(ReferenceDevice):
    """Decodes an extension type's prefix by the extension's position in the model's list, not by its prefix.

    Right whenever the runtime numbers extensions 1, 2, ... in list order,
    as every model of the specs and the corpus did.
    """

    name = "broken-positional-prefix"

    def get_supported_operations(self, model: Model) -> list[bool]:
        return super().get_supported_operations(_by_position(model))

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        return super().prepare_model(_by_position(model), *args, **kwargs)


def positional_prefix() -> ReferenceDevice:
    """Caught by ``extensions`` (prefixes other than positions; two extensions in both orders)."""
    return PositionalPrefixDevice()


# -- one operation wrong where the corpus never looks --------------------------------------------------


def _patched_device(name: str, operation: OperationType, run: Any) -> ReferenceDevice:
    """A reference device whose prepared models run ``run`` for every ``operation`` (other operations unchanged)."""

    class Patched(_Device):
        def adjust(self, prepared: ReferencePreparedModel, model: Model, *args: Any, **kwargs: Any) -> None:
            for slots in prepared.compiled.slots:
                for slot in slots:
                    op_def = slot.op_def
                    if isinstance(op_def, OpDef) and op_def.type == operation:
                        slot.op_def = dataclasses.replace(op_def, run=run)

    return Patched(name)


#: Where a 20-bit element index wraps.
INDEX_WRAP = 1 << 20


def _add_wrapping_past_2_20(ctx: OpContext) -> list[np.ndarray]:
    """ADD with a 20-bit element counter: element i >= 2**20 is element i mod 2**20 of the result."""
    (result,) = binary.add(ctx)
    flat = np.ascontiguousarray(result).reshape(-1)
    if flat.size > INDEX_WRAP:
        flat[INDEX_WRAP:] = np.resize(flat[:INDEX_WRAP], flat.size - INDEX_WRAP)
    return [flat.reshape(result.shape)]


def add_wrong_past_2_20() -> ReferenceDevice:
    """Caught by ``differential`` at realistic sizes (every corpus tensor is far below 2**20 elements)."""
    return _patched_device("broken-add-past-2-20", OperationType.ADD, _add_wrapping_past_2_20)


def _mul_product_in_16_bits(ctx: OpContext) -> list[np.ndarray]:
    """Quant8 MUL keeping ``(a - za) * (b - zb)`` in an int16 accumulator (it wraps past 32767)."""
    a, b = ctx.tensor(0), ctx.tensor(1)
    if a.type not in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED):
        return binary.mul(ctx)
    out = ctx.output()
    multiplier, shift = quantize_multiplier(a.scale * b.scale / out.scale)
    product = (a.value.astype(np.int64) - a.zero_point) * (b.value.astype(np.int64) - b.zero_point)
    product = (product.astype(np.int64) + (1 << 15)) % (1 << 16) - (1 << 15)
    raw = multiply_by_quantized_multiplier(product, multiplier, shift) + out.zero_point
    return [binary._clamp_quantized(ctx, raw)]


def mul_product_in_16_bits() -> ReferenceDevice:
    """Caught by ``differential``'s drawn quantization parameters (zero points of 0, wide output scales)."""
    return _patched_device("broken-mul-16-bit-product", OperationType.MUL, _mul_product_in_16_bits)



class _FenceLogPreparedModel(ReferencePreparedModel):
    """Notes, for each ``execute_fenced``, its kind and whether a wait fence handed over earlier still pends."""

    log: list[tuple[str, bool]]
    own_fences: list[SyncFence]

    def execute_fenced(self, request: Request, wait_for: Sequence[SyncFence | None], *args: Any,
                       **kwargs: Any) -> tuple[SyncFence | None, FencedExecutionCallback]:
        pending = [fence for fence in wait_for if fence is not None and not fence.signalled]
        self.own_fences += pending
        kind = "own" if pending else "golden" if not wait_for else "chained"
        self.log.append((kind, any(not fence.signalled for fence in self.own_fences)))
        return super().execute_fenced(request, wait_for, *args, **kwargs)


class FenceLogDevice(_Device):
    """Not broken: the reference, with one log of every prepared model's fenced calls (``log``).

    Shows the order of the ``fenced`` family's calls: its golden executions (no wait fences) are made while
    the harness's own fences are still pending, not after they signal.
    """

    prepared_class = _FenceLogPreparedModel

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.log: list[tuple[str, bool]] = []
        self.own_fences: list[SyncFence] = []

    def adjust(self, prepared: ReferencePreparedModel, model: Model, *args: Any, **kwargs: Any) -> None:
        prepared.log = self.log  # type: ignore[attr-defined]
        prepared.own_fences = self.own_fences  # type: ignore[attr-defined]


def fence_log() -> FenceLogDevice:
    """The reference with a log of its fenced calls (``FenceLogDevice``)."""
    return FenceLogDevice("fence-log")
