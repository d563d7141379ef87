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
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import ClassVar

from nnvts.drivers.engine.device import EngineDevice, require_engine
from nnvts.drivers.litert.translator import LiteRtTranslator
from vts.hal.enums import OperandType
from vts.hal.types import PerformanceInfo


class LiteRtDevice(EngineDevice):
    name = "litert-cpu"
    performance: ClassVar[dict[OperandType, PerformanceInfo]] = {
        OperandType.TENSOR_FLOAT32: PerformanceInfo(0.4, 0.4),
        OperandType.TENSOR_QUANT8_ASYMM: PerformanceInfo(0.15, 0.15),
    }

    def __init__(self) -> None:
        super().__init__()
        self.translator = LiteRtTranslator()

    def get_version_string(self) -> str:
        return f"ai-edge-litert/{metadata.version('ai-edge-litert')}"


def create_device(argv: Sequence[str] = ()) -> LiteRtDevice:
    """Entry point of the ``nnvts.drivers`` group (``litert``)."""
    require_engine("ai_edge_litert", "litert")
    return LiteRtDevice()
