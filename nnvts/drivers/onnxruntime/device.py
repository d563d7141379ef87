"""The ONNX Runtime device: NNAPI models translated to ONNX graphs and run by an ONNX Runtime execution provider.

The HAL plumbing is ``nnvts.drivers.engine.device``; the translation table is
``nnvts.drivers.onnxruntime.ops``; support is decided by asking the engine
(``nnvts.drivers.onnxruntime.translator``).

Capabilities: the figures below are what ``nnvts bench --driver
onnxruntime --runs 5`` measured against the reference driver (MobileNet v1
224, alternating runs, median of per-pair ratios, on a loaded 2-core
machine: float32 0.17, quant8 0.075; docs/engines.md has the runs),
rounded.  Power is declared equal to time (one CPU core either way).
Types it was not measured on declare parity with the CPU (1.0).

The provider is a driver option (``nnvts.drivers.onnxruntime.providers``); the
device then is the provider's: ``qualcomm-htp``, type ACCELERATOR, for
``ep=qnn`` (QNN's HTP backend is the Hexagon NPU, emulated on x86_64);
``{vendor}-{provider}`` and the ONNX Runtime hardware type otherwise.  Its
performance is not measured: it declares the HAL's neutral 1.0.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import ClassVar

from nnvts.drivers.engine.device import EngineDevice, capabilities_table, require_engine
from nnvts.drivers.onnxruntime.cache import SessionCache
from nnvts.drivers.onnxruntime.providers import NPU_BACKENDS, Provider
from nnvts.drivers.onnxruntime.translator import CPU_PROVIDER, OrtTranslator
from vts.hal.enums import DeviceType, HalVersion, OperandType
from vts.hal.types import Capabilities, PerformanceInfo


class OnnxRuntimeDevice(EngineDevice):
    name = "onnxruntime-cpu"
    #: AIDL v4 (feature level 8): the engine plumbing's rules and reusable executions (``nnvts.drivers.engine``).
    hal_version = HalVersion.FL8
    performance: ClassVar[dict[OperandType, PerformanceInfo]] = {
        OperandType.TENSOR_FLOAT32: PerformanceInfo(0.17, 0.17),
        OperandType.TENSOR_QUANT8_ASYMM: PerformanceInfo(0.075, 0.075),
    }

    def __init__(self, provider: Provider = CPU_PROVIDER, cache: SessionCache | None = None) -> None:
        super().__init__()
        self.provider = provider
        self.cache = cache
        self.translator = OrtTranslator(provider, cache)
        if not provider.is_cpu:
            self.name = device_name(provider)

    def get_type(self) -> DeviceType:
        if self.provider.is_qnn and dict(self.provider.options).get("backend_type") in NPU_BACKENDS:
            return DeviceType.ACCELERATOR
        return {"NPU": DeviceType.ACCELERATOR, "GPU": DeviceType.GPU}.get(self.provider.hardware, DeviceType.CPU)

    def get_capabilities(self) -> Capabilities:
        if self.provider.is_cpu:
            return super().get_capabilities()
        return capabilities_table({}, self.default_performance)  # not measured: neutral

    def get_version_string(self) -> str:
        text = f"onnxruntime/{metadata.version('onnxruntime')}"
        if self.provider.is_cpu:
            return text
        if self.provider.is_qnn:
            text += f" onnxruntime-qnn/{metadata.version('onnxruntime-qnn')}"
        return f"{text} {self.provider.describe()}"


def device_name(provider: Provider) -> str:
    """``{vendor}-{device}``: ``qualcomm-htp`` for QNN on its HTP, else the vendor and the provider's name."""
    if provider.is_qnn:
        device = dict(provider.options).get("backend_type", "htp")
    else:
        device = provider.name.removesuffix("ExecutionProvider")
    return re.sub(r"[^a-z0-9.-]+", "-", f"{provider.vendor}-{device}".lower()).strip("-")


def create_device(argv: Sequence[str] = (), **options: str) -> OnnxRuntimeDevice:
    """Entry point of the ``nnvts.drivers`` group (``onnxruntime``).

    Driver options:
    ep: the execution provider: cpu (default), qnn (Qualcomm's HTP through the QNN plugin, pip install
        'nnvts[qnn]'), a provider name ONNX Runtime has, or the path of a plugin provider library
    ep.KEY: a provider option, passed to the provider as KEY=VALUE (ep.htp_performance_mode=burst)
    cache: the directory of compiled sessions, on (~/.cache/nnvts/onnxruntime), or off (the default unless
        $NNVTS_ENGINE_CACHE names a directory: on the emulated HTP loading a context is slower than compiling)
    """
    require_engine("onnxruntime", "onnxruntime")
    from nnvts.drivers.onnxruntime.cache import ENV, default_directory
    from nnvts.drivers.onnxruntime.providers import configure

    where = options.pop("cache", "") or ("on" if os.environ.get(ENV) else "off")
    provider = configure(options)
    directory = (None if where.lower() in ("off", "0", "none", "no", "false")
                 else default_directory() if where.lower() in ("on", "1", "yes", "true") else Path(where))
    cache = SessionCache(provider, directory)
    return OnnxRuntimeDevice(provider, cache)
