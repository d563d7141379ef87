"""Reference-driver variants that lie about the device, its speed, its extensions or its caches.

Each factory is a ``module:attr`` a test (or ``nnvts run --driver``) can
name; each breaks exactly one promise, which exactly one family must catch:

* ``lying_device_type``: ``get_type`` answers 7 (discovery);
* ``claims_10x_speed``: declares execTime 0.1 (ten times the CPU) while
  running at the reference's speed (capabilities_bench, ``nnvts bench``);
* ``accepts_undeclared_extension``: claims and "prepares" operations of
  extensions it does not declare (extensions);
* ``trusts_corrupted_cache``: restores whatever the cache files hold, with
  no integrity check and no token binding, so a corrupted or replaced model
  cache yields a model computing something else (caching);
* ``no_caching``: an honest driver without compilation caching (the caching
  cases must skip, not fail).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnvts.drivers.reference import caching
from nnvts.drivers.reference.device import ReferenceDevice
from nnvts.drivers.reference.extensions import ModelExtensions
from vts.hal.enums import ErrorStatus, MeasureTiming, is_extension_type
from vts.hal.errors import DriverError
from vts.hal.interfaces import PreparedModel
from vts.hal.types import Capabilities, ExecutionResult, Model, OperandPerformance, PerformanceInfo, Request


class _LyingType(ReferenceDevice):
    def get_type(self) -> Any:
        return 7


class _TenTimesFaster(ReferenceDevice):
    def get_capabilities(self) -> Capabilities:
        fast = PerformanceInfo(0.1, 1.0)
        caps = super().get_capabilities()
        table = tuple(OperandPerformance(e.type, fast) for e in caps.operand_performance)
        return Capabilities(fast, fast, table, fast, fast)


class _DoesNothing(PreparedModel):
    """Answers NONE and leaves the outputs as they were."""

    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO, deadline: int | None = None,
                loop_timeout: int | None = None) -> ExecutionResult:
        return ExecutionResult()


def _foreign_extension_ops(model: Model) -> bool:
    ours = ModelExtensions(model)
    return any(is_extension_type(op.type) and not ours.supports(op) for op in model.main.operations)


class _AcceptsAnyExtension(ReferenceDevice):
    def get_supported_operations(self, model: Model) -> list[bool]:
        flags = super().get_supported_operations(model)
        return [True if is_extension_type(op.type) else flag for op, flag in zip(model.main.operations, flags,
                                                                                strict=True)]

    def prepare_model(self, model: Model, *args: Any, **kwargs: Any) -> PreparedModel:
        if _foreign_extension_ops(model):
            self.check_model(model)
            return _DoesNothing()
        return super().prepare_model(model, *args, **kwargs)


class _TrustingCache(caching.CompilationCache):
    """Checks the handles like the reference, then trusts the model cache: no tag, no token binding."""

    def verified_payload(self, blob: bytes, token: bytes) -> bytes:
        return blob[:-32]


class _TrustsCorruptedCache(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self.cache = _TrustingCache(self.get_version_string())


class _NoCaching(ReferenceDevice):
    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return 0, 0

    def prepare_model_from_cache(self, deadline: int | None, model_cache: Sequence[int], data_cache: Sequence[int],
                                 token: bytes) -> PreparedModel:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "compilation caching not supported")

    def prepare_model(self, model: Model, preference: Any = 1, priority: Any = 1, deadline: int | None = None,
                      model_cache: Sequence[int] = (), data_cache: Sequence[int] = (),
                      token: bytes = bytes(32)) -> PreparedModel:
        return super().prepare_model(model, preference, priority, deadline)


def lying_device_type() -> ReferenceDevice:
    return _LyingType()


def claims_10x_speed() -> ReferenceDevice:
    return _TenTimesFaster()


def accepts_undeclared_extension() -> ReferenceDevice:
    return _AcceptsAnyExtension()


def trusts_corrupted_cache() -> ReferenceDevice:
    return _TrustsCorruptedCache()


def no_caching() -> ReferenceDevice:
    return _NoCaching()


class _NoCapabilities(ReferenceDevice):
    """Answers ``get_capabilities`` with None: ``nnvts info`` must show that as an error, not a shorter table."""

    def get_capabilities(self) -> Capabilities:
        return None  # type: ignore[return-value]


def no_capabilities() -> ReferenceDevice:
    return _NoCapabilities()


class _FourBadFigures(ReferenceDevice):
    """Four figures of its capabilities are not positive (zero, NaN, negative, a zero power): the
    ``capabilities/figures_positive`` case must name every one of them, not only the first (issue 43)."""

    def get_capabilities(self) -> Capabilities:
        caps = super().get_capabilities()
        good = caps.if_performance
        table = list(caps.operand_performance)
        table[1] = OperandPerformance(table[1].type, PerformanceInfo(1.0, 0.0))
        return Capabilities(PerformanceInfo(0.0, 1.0), caps.relaxed_float32_to_float16_performance_tensor,
                            tuple(table), PerformanceInfo(float("nan"), good.power_usage), PerformanceInfo(-1.0, 1.0))


def four_bad_figures() -> ReferenceDevice:
    return _FourBadFigures()
