"""The ONNX Runtime device: NNAPI models translated to ONNX graphs and run by ONNX Runtime's CPU provider.

The HAL plumbing is ``nnvts.drivers.engine.device``; the translation table is
``nnvts.drivers.onnxruntime.ops``; support is decided by asking the engine
(``nnvts.drivers.onnxruntime.translator``).

Capabilities: the figures below are what ``nnvts bench --driver
onnxruntime --runs 5`` measured against the reference driver (MobileNet v1
224, alternating runs, median of per-pair ratios, on a loaded 2-core
machine: float32 0.17, quant8 0.075; docs/engines.md has the runs),
rounded.  Power is declared equal to time (one CPU core either way).
Types it was not measured on declare parity with the CPU (1.0).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import ClassVar

from nnvts.drivers.engine.device import EngineDevice, require_engine
from nnvts.drivers.onnxruntime.translator import OrtTranslator
from vts.hal.enums import OperandType
from vts.hal.types import PerformanceInfo


class OnnxRuntimeDevice(EngineDevice):
    name = "onnxruntime-cpu"
    performance: ClassVar[dict[OperandType, PerformanceInfo]] = {
        OperandType.TENSOR_FLOAT32: PerformanceInfo(0.17, 0.17),
        OperandType.TENSOR_QUANT8_ASYMM: PerformanceInfo(0.075, 0.075),
    }

    def __init__(self) -> None:
        super().__init__()
        self.translator = OrtTranslator()

    def get_version_string(self) -> str:
        return f"onnxruntime/{metadata.version('onnxruntime')}"


def create_device(argv: Sequence[str] = ()) -> OnnxRuntimeDevice:
    """Entry point of the ``nnvts.drivers`` group (``onnxruntime``)."""
    require_engine("onnxruntime", "onnxruntime")
    return OnnxRuntimeDevice()
