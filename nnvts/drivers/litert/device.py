"""The LiteRT device: NNAPI models translated to TFLite and run by LiteRT's interpreter.

A template for vendors wrapping an engine: the HAL plumbing is
``nnvts.drivers.engine.device`` (validation, pools, deadlines, execution paths),
the translation table is ``nnvts.drivers.litert.ops``, and support is decided by
asking the engine (``nnvts.drivers.litert.translator``).

Capabilities: the figures below are what ``nnvts bench --driver litert
--runs 5`` measured against the reference driver (MobileNet v1 224,
alternating runs, median of per-pair ratios, on a loaded 2-core machine:
float32 0.41, quant8 0.14; docs/engines.md has the runs), rounded.  Power
is declared equal to time (one CPU core either way).  Types it was not
measured on declare parity with the CPU (1.0): the device *is* a CPU.

With a delegate (driver option ``delegate``, ``nnvts.drivers.litert.delegates``)
the device is named after it (``litert-xnnpack``); XNNPACK is a CPU
delegate, an external delegate library is declared an ACCELERATOR.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import ClassVar

from nnvts.drivers.engine.device import EngineDevice, require_engine
from nnvts.drivers.litert.delegates import Delegate
from nnvts.drivers.litert.translator import BUILTIN, LiteRtTranslator
from vts.hal.enums import DeviceType, HalVersion, OperandType
from vts.hal.types import PerformanceInfo


class LiteRtDevice(EngineDevice):
    name = "litert-cpu"
    #: AIDL v4 (feature level 8): the engine plumbing's rules and reusable executions (``nnvts.drivers.engine``).
    hal_version = HalVersion.FL8
    performance: ClassVar[dict[OperandType, PerformanceInfo]] = {
        OperandType.TENSOR_FLOAT32: PerformanceInfo(0.4, 0.4),
        OperandType.TENSOR_QUANT8_ASYMM: PerformanceInfo(0.15, 0.15),
    }

    def __init__(self, delegate: Delegate = BUILTIN) -> None:
        super().__init__()
        self.delegate = delegate
        self.translator = LiteRtTranslator(delegate)
        if delegate.kind != "none":
            self.name = f"litert-{delegate.label}"

    def get_type(self) -> DeviceType:
        return DeviceType.ACCELERATOR if self.delegate.kind == "external" else DeviceType.CPU

    def get_version_string(self) -> str:
        text = f"ai-edge-litert/{metadata.version('ai-edge-litert')}"
        return text if self.delegate.kind == "none" else f"{text} {self.delegate.describe()}"


def create_device(argv: Sequence[str] = (), **options: str) -> LiteRtDevice:
    """Entry point of the ``nnvts.drivers`` group (``litert``).

    Driver options:
    delegate: none (default: TFLite's builtin kernels), xnnpack (LiteRT as it ships), or the path of an
        external delegate library
    delegate.KEY: an option of the external delegate library (KEY=VALUE)
    cpu_fallback: 1 to accept operations the delegate leaves to LiteRT's CPU kernels (default 0: unsupported)
    """
    require_engine("ai_edge_litert", "litert")
    from nnvts.drivers.litert.delegates import configure

    return LiteRtDevice(configure(options))
