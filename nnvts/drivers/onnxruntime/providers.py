"""Which ONNX Runtime execution provider runs the models: the driver options read, checked and applied.

``ep=NAME`` picks the provider: ``cpu`` (the default, today's
``CPUExecutionProvider``), ``qnn`` (Qualcomm's QNN plugin from
``nnvts[qnn]`` on its HTP backend: the Hexagon NPU, emulated on x86_64),
any provider name ONNX Runtime reports available, or the path of a plugin
provider library (registered with ``register_execution_provider_library``;
its devices are the ones whose library path is that file).  ``ep.KEY=VALUE``
are the provider's options.

CPU fallback is disabled (``session.disable_cpu_ep_fallback``) for every
provider but the CPU one: a model the provider does not take whole is
refused at session creation, so the per-operation probe answers exactly
"does this provider run it", never "ONNX Runtime ran it somewhere".

Bad configurations are refused when the driver loads, with what is
available (``EngineConfigError``: exit status 2, nothing runs): an unknown
provider, a missing plugin library, a QNN option name QNN does not have
(QNN ignores unknown names silently, so the list is kept here, from the
option names the plugin library itself contains), and options the provider
refuses on a one-node model.

Precision: QNN's HTP computes float32 in float16 unless
``enable_htp_fp16_precision=0``.  That is what NNAPI allows only for
relaxed models, so the driver sets it per model (``session_options``):
fp16 precision for a model with ``relaxComputationFloat32toFloat16``, full
float32 otherwise, unless the user fixed the option explicitly.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nnvts.drivers.engine.options import EngineConfigError

CPU = "CPUExecutionProvider"
#: The HTP option that computes float32 in float16 (its soc_model companion is required with it on).
FP16_OPTION = "enable_htp_fp16_precision"
#: QNN provider options (named in libonnxruntime_providers_qnn.so of onnxruntime-qnn 2.7).
QNN_OPTIONS = frozenset({
    "backend_type", "backend_path", "device_id", "dump_json_qnn_graph", "json_qnn_graph_dir", "dump_qnn_ir_dlc",
    "dump_qnn_ir_dlc_dir", FP16_OPTION, "enable_htp_fp16_clamp_overflow", "enable_htp_shared_memory_allocator",
    "enable_htp_spill_fill_buffer", "extended_udma", "htp_arch", "htp_bf16_enable",
    "htp_graph_finalization_optimization_mode", "htp_performance_mode", "offload_graph_io_quantization",
    "op_packages", "profiling_file_path", "profiling_level", "qnn_context_priority", "qnn_saver_path",
    "rpc_control_latency", "skip_qnn_version_check", "soc_model", "softmax_precision", "vtcm_mb",
})
#: QNN backends that are an NPU (the device is then an ACCELERATOR).
NPU_BACKENDS = frozenset({"htp", "dsp"})


@functools.cache
def ort() -> Any:
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    return onnxruntime


@dataclass(frozen=True)
class Provider:
    """One configured execution provider: how sessions are made, and what the device says it is."""

    label: str  # what ep= said, normalised ("cpu", "qnn", a provider name, a library path)
    name: str  # the provider's own name (CPUExecutionProvider, QNN, ...)
    options: tuple[tuple[str, str], ...] = ()
    plugin: bool = False  # a plugin provider: sessions take its devices (add_provider_for_devices)
    vendor: str = "onnxruntime"
    hardware: str = "CPU"  # the ONNX Runtime hardware device type (CPU, GPU, NPU)
    version: str = ""
    fixed: frozenset[str] = field(default_factory=frozenset)  # options the user set (not adjusted per model)

    @property
    def is_cpu(self) -> bool:
        return self.name == CPU

    @property
    def is_qnn(self) -> bool:
        return self.label == "qnn"

    def provider_options(self, relaxed: bool) -> dict[str, str]:
        """The options for one model: QNN's fp16 precision only for a relaxed model, unless fixed by the user."""
        options = dict(self.options)
        if self.is_qnn and FP16_OPTION not in self.fixed:
            options[FP16_OPTION] = "1" if relaxed else "0"
            if relaxed:
                options.setdefault("soc_model", "60")  # QNN needs one with fp16 precision: any HTP SoC
        return options

    def devices(self) -> list[Any]:
        return [d for d in ort().get_ep_devices() if d.ep_name == self.name]

    def describe(self) -> str:
        options = ", ".join(f"{k}={v}" for k, v in self.options)
        return f"{self.name}{f' {self.version}' if self.version else ''}{f' ({options})' if options else ''}"


def session_options(provider: Provider, relaxed: bool = False, config: Mapping[str, str] | None = None) -> Any:
    """Session options on one thread, the provider added, CPU fallback off unless it is the CPU provider.

    ``config``: further session configuration entries (the cache's ``ep.context_*``).
    """
    rt = ort()
    options = rt.SessionOptions()
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    if not provider.is_cpu:
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if provider.plugin:
        options.add_provider_for_devices(provider.devices(), provider.provider_options(relaxed))
    return options


def session(provider: Provider, content: bytes, relaxed: bool = False,
            config: Mapping[str, str] | None = None) -> Any:
    """An ONNX Runtime session of ``content`` on ``provider`` (raises the engine's own errors)."""
    rt = ort()
    options = session_options(provider, relaxed, config)
    if provider.plugin:
        created = rt.InferenceSession(content, options)
    else:
        created = rt.InferenceSession(content, options,
                                      providers=[(provider.name, provider.provider_options(relaxed))])
    if not provider.is_cpu:
        # ONNX Runtime's Python session answers a provider's failure at run time by re-creating itself on
        # the CPU provider, which CPU fallback being off refuses, leaving a session that no longer exists
        # ("'NoneType' object has no attribute ..." at every later run): the provider's own error instead.
        created.disable_fallback()
    return created


def _split(options: Mapping[str, str]) -> tuple[str, dict[str, str], dict[str, str]]:
    """(ep, ep.* options, other options)."""
    ep = options.get("ep", "cpu") or "cpu"
    ep_options = {k[3:]: v for k, v in options.items() if k.startswith("ep.")}
    other = {k: v for k, v in options.items() if k != "ep" and not k.startswith("ep.")}
    return ep, ep_options, other


def _qnn_library() -> str:
    try:
        import onnxruntime_qnn
    except ImportError:
        raise EngineConfigError("ep=qnn needs the QNN plugin: pip install 'nnvts[qnn]'") from None
    path = str(onnxruntime_qnn.get_library_path())
    if not os.path.isfile(path):
        raise EngineConfigError(f"ep=qnn: the QNN plugin library {path} is missing (reinstall onnxruntime-qnn)")
    return path


def _register(name: str, library: str) -> list[Any]:
    """Register plugin ``library`` under ``name`` (once per process); its devices."""
    rt = ort()
    registered = [d for d in rt.get_ep_devices() if d.ep_metadata.get("library_path") == library]
    if registered:
        return registered
    try:
        rt.register_execution_provider_library(name, library)
    except Exception as error:
        raise EngineConfigError(f"ep={library}: ONNX Runtime cannot register it as a provider library: "
                                f"{str(error).strip().splitlines()[-1][:200]}") from None
    return [d for d in rt.get_ep_devices() if d.ep_metadata.get("library_path") == library]


def available() -> str:
    """What ``ep=`` accepts here, for a message."""
    names = sorted(set(ort().get_available_providers()) | {d.ep_name for d in ort().get_ep_devices()})
    return ", ".join(["cpu", "qnn (pip install 'nnvts[qnn]')", *names, "or the path of a provider library"])


def _from_devices(label: str, devices: list[Any], ep_options: dict[str, str]) -> Provider:
    device = devices[0]
    hardware = str(device.device.type).rsplit(".", 1)[-1]
    return Provider(label, device.ep_name, tuple(sorted(ep_options.items())), plugin=True,
                    vendor=str(device.ep_vendor), hardware=hardware,
                    version=str(device.ep_metadata.get("version", "")), fixed=frozenset(ep_options))


def configure(options: Mapping[str, str]) -> Provider:
    """The provider the driver options name, checked (``EngineConfigError`` for anything unusable)."""
    ep, ep_options, other = _split(options)
    if other:
        raise EngineConfigError(f"unknown option{'s' if len(other) > 1 else ''} {', '.join(sorted(other))} "
                                "(the onnxruntime driver accepts ep=NAME and ep.KEY=VALUE)")
    if ep.lower() == "cpu" or ep == CPU:
        if ep_options:
            raise EngineConfigError("ep.KEY options are for a provider other than the CPU one (give ep=NAME)")
        return Provider("cpu", CPU)
    if ep.lower() == "qnn":
        unknown = sorted(set(ep_options) - QNN_OPTIONS)
        if unknown:
            raise EngineConfigError(f"ep=qnn has no option {', '.join(unknown)} "
                                    f"(QNN options: {', '.join(sorted(QNN_OPTIONS))})")
        devices = _register("QNN", _qnn_library())
        if not devices:
            raise EngineConfigError("ep=qnn: the QNN plugin registered but offers no device")
        provider = _from_devices("qnn", devices, {"backend_type": "htp", **ep_options})
        provider = Provider("qnn", provider.name, provider.options, True, "qualcomm", provider.hardware,
                            provider.version, frozenset(ep_options))
        return _checked(provider)
    if "/" in ep or ep.endswith((".so", ".dll", ".dylib")):
        if not os.path.isfile(ep):
            raise EngineConfigError(f"ep={ep}: no such provider library (available: {available()})")
        devices = _register(os.path.basename(ep).split(".")[0], os.path.abspath(ep))
        if not devices:
            raise EngineConfigError(f"ep={ep}: the library registered but offers no device")
        return _checked(_from_devices(ep, devices, ep_options))
    plugin = [d for d in ort().get_ep_devices() if d.ep_name == ep]
    if plugin:
        return _checked(_from_devices(ep, plugin, ep_options))
    if ep not in ort().get_available_providers():
        raise EngineConfigError(f"ep={ep}: ONNX Runtime has no such execution provider here "
                                f"(available: {available()})")
    return _checked(Provider(ep, ep, tuple(sorted(ep_options.items())), fixed=frozenset(ep_options)))


def _checked(provider: Provider) -> Provider:
    """``provider`` if it creates a session of one Add with its options; else ``EngineConfigError``."""
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "check",
                              [value("x", TensorProto.FLOAT, [1, 4])], [value("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    try:
        session(provider, model.SerializeToString())
    except Exception as error:
        lines = [line for line in str(error).strip().splitlines() if line.strip()] or [type(error).__name__]
        raise EngineConfigError(f"ep={provider.label}: the provider refuses its options "
                                f"({', '.join(f'{k}={v}' for k, v in provider.options) or 'none'}): "
                                f"{lines[-1].split(' : ')[-1][:200]}") from None
    return provider
