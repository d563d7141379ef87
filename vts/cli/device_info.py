"""``nnvts info``: everything a device says about itself, as plain data and as a rich report.

Each query is asked separately and a failing one is recorded as its error,
so a device that answers some questions badly still shows the rest (the
discovery and capabilities families judge the answers; this only shows
them).  ``nnvts drivers`` uses the same summary helpers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from vts.bounds import shown
from vts.hal.enums import DeviceStatus, DeviceType, OperandType, enum_name
from vts.hal.interfaces import Device, spoken_version
from vts.hal.types import Capabilities, PerformanceInfo
from vts.ipc.drivers import DriverRef
from vts.report.logconsole import LogConsole

if TYPE_CHECKING:
    from vts.ipc.driver_options import DriverOption


@contextlib.contextmanager
def opened_device(ref: DriverRef) -> Iterator[Device]:
    """The driver ``ref`` names: in process, or for ``exec:`` programs through a driver host."""
    if not ref.is_exec:
        device = ref.load()
        try:
            yield device
        finally:
            with contextlib.suppress(Exception):
                device.close()
        return
    from vts.ipc.process import HostProcess

    host = HostProcess(ref)
    try:
        yield host.start()
    finally:
        host.stop()


def options_data(ref: DriverRef, device: Device) -> dict[str, Any]:
    """The options the driver accepts (None: any) with their defaults, and those this run gave it.

    A Python driver's are read from its factory's signature; a program's
    from the protocol's opening exchange (``accepted_options`` of its proxy).
    """
    from vts.ipc.driver_options import accepted_options, documented_options

    accepted = getattr(device, "accepted_options", None) if ref.is_exec else accepted_options(ref)
    summary = options_summary(accepted)
    documented = documented_options(ref.factory()) if accepted is None and not ref.is_exec else {}
    if documented:
        summary += ": " + ", ".join(documented)
    return {"accepted": None if accepted is None else [
                {"name": o.name, "default": o.default, "description": o.description} for o in accepted],
            "documented": documented, "given": dict(ref.options), "summary": summary}


def protocol_data(device: Device) -> dict[str, Any] | None:
    """The protocol revision and features agreed with a driver out of process (docs/protocol.md §5.3);
    None in process, where no protocol is spoken."""
    connection = getattr(device, "connection", None)
    if connection is None:
        return None
    return {"revision": connection.revision, "features": sorted(connection.features)}


def options_summary(accepted: Sequence[DriverOption] | None) -> str:
    """One line: each accepted option with its default, as usage errors list them (``nnvts drivers``, ``info``)."""
    if accepted is None:
        return "any (the factory takes **options)"
    return ", ".join(str(option) for option in accepted) or "none"


def _ask(call: Callable[[], Any]) -> tuple[Any, str]:
    try:
        return call(), ""
    except Exception as error:  # any answer, good or bad, is what ``info`` reports
        return None, f"{type(error).__name__}: {error}"


def _perf(info: PerformanceInfo) -> dict[str, float]:
    return {"exec_time": info.exec_time, "power_usage": info.power_usage}


def capabilities_data(caps: Capabilities) -> dict[str, Any]:
    return {
        "relaxed_float32_to_float16_scalar": _perf(caps.relaxed_float32_to_float16_performance_scalar),
        "relaxed_float32_to_float16_tensor": _perf(caps.relaxed_float32_to_float16_performance_tensor),
        "if": _perf(caps.if_performance),
        "while": _perf(caps.while_performance),
        "operand_performance": [{"type": enum_name(OperandType, e.type), **_perf(e.info)}
                                for e in caps.operand_performance],
    }


def _convert(key: str, value: Any) -> Any:
    """The JSON form of one answer; ``TypeError`` when it is not the type the HAL query returns."""
    if key in ("type", "status"):
        enum = DeviceType if key == "type" else DeviceStatus
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"returned {_shown(value)}, not a {enum.__name__}")
        return enum_name(enum, value)
    if key == "version":
        if not isinstance(value, str):
            raise TypeError(f"returned {_shown(value)}, not a string")
        return value
    if key == "capabilities":
        if not isinstance(value, Capabilities):
            raise TypeError(f"returned {_shown(value)}, not Capabilities")
        return capabilities_data(value)
    if key == "extensions":
        if not isinstance(value, list | tuple):
            raise TypeError(f"returned {_shown(value)}, not a list of extensions")
        try:
            return [{"name": e.name, "operand_types": [
                {"type": t.type, "is_tensor": t.is_tensor, "byte_size": t.byte_size} for t in e.operand_types]}
                for e in value]
        except (AttributeError, TypeError):
            raise TypeError(f"returned {_shown(value)}, not a list of extensions") from None
    if key == "cache_files":
        if not (isinstance(value, list | tuple) and len(value) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) for n in value)):
            raise TypeError(f"returned {_shown(value)}, not a pair of counts")
        return {"model": value[0], "data": value[1]}
    return value


def _shown(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def device_info(device: Device) -> dict[str, Any]:
    """Every device-level answer, JSON-ready; ``errors`` maps a query to what went wrong.

    A query that raises or answers with the wrong type is an error, shown as
    such (``info`` then exits 1): a missing table must never pass for an
    answer.
    """
    data: dict[str, Any] = {"name": getattr(device, "name", None), "interface": interface_text(device)}
    errors: dict[str, str] = {}
    queries: dict[str, Callable[[], Any]] = {
        "type": device.get_type, "version": device.get_version_string, "status": device.get_status,
        "capabilities": device.get_capabilities, "extensions": device.get_supported_extensions,
        "cache_files": device.get_number_of_cache_files_needed,
    }
    for key, call in queries.items():
        value, error = _ask(call)
        if not error:
            try:
                value = _convert(key, value)
            except TypeError as wrong:
                error = f"get_{_QUERY_NAMES[key]} {wrong}"
        if error:
            errors[key] = error
            data[key] = None
            continue
        data[key] = value
    data["errors"] = errors
    return data


def interface_text(device: Device) -> str:
    """The interface the driver speaks, ``AIDL v4, feature level 8``; a program reached through the nnvts protocol
    that granted no ``aidl:N`` feature (docs/protocol.md §5.3) is judged as HAL 1.3, and the line says why."""
    from vts.ipc.proxies import ProxyDevice

    text = spoken_version(device).describe
    if isinstance(device, ProxyDevice) and not device.hal_version.is_aidl:
        return f"{text} (the nnvts protocol's: the driver granted no aidl feature)"
    return text


_QUERY_NAMES = {"type": "type", "version": "version_string", "status": "status", "capabilities": "capabilities",
                "extensions": "supported_extensions", "cache_files": "number_of_cache_files_needed"}


def capabilities_summary(caps: Capabilities) -> str:
    """One line: float32, quant8 and relaxed figures (``nnvts drivers``)."""
    perf = caps.performance_of(OperandType.TENSOR_FLOAT32)
    quant = caps.performance_of(OperandType.TENSOR_QUANT8_ASYMM)
    relaxed = caps.relaxed_float32_to_float16_performance_tensor
    return (f"f32 {perf.exec_time:g}/{perf.power_usage:g}, q8 {quant.exec_time:g}/{quant.power_usage:g}, "
            f"relaxed {relaxed.exec_time:g}/{relaxed.power_usage:g}")


def _shown(text: object) -> str:
    """A driver's string for the console: one line (``vts.bounds.shown``), its brackets not taken as markup."""
    from rich.markup import escape

    return escape(shown(str(text)))


def print_device_info(data: dict[str, Any], console: Console | None = None) -> None:
    console = console or LogConsole()  # off a terminal, tables at their own width
    # Every string here is the driver's: one line each, no markup of its own (``_shown``).
    summary = Table(title=f"nnvts info: {_shown(data.get('name'))}", show_header=False)
    summary.add_column("field", style="bold")
    summary.add_column("value")
    for key in ("name", "interface", "type", "version", "status"):
        summary.add_row(key, _shown(data.get(key)))
    cache = data.get("cache_files")
    summary.add_row("cache files", f"model {cache['model']}, data {cache['data']}" if cache else "-")
    protocol = data.get("protocol")
    if isinstance(protocol, dict):
        features = ", ".join(protocol["features"]) or "none"
        summary.add_row("protocol", f"revision {protocol['revision']} (features: {features})")
    options = data.get("driver_options")
    if isinstance(options, dict):
        summary.add_row("driver options", str(options.get("summary")))
        if options.get("given"):
            summary.add_row("options given", _shown(", ".join(f"{k}={v}" for k, v in options["given"].items())))
    extensions = data.get("extensions") or []
    summary.add_row("extensions", "\n".join(
        f"{_shown(e['name'])}: " + ", ".join(f"type {t['type']} ({'tensor' if t['is_tensor'] else 'scalar'}, "
                                     f"{t['byte_size']} bytes)" for t in e["operand_types"])
        for e in extensions) or "none")
    console.print(summary)
    caps = data.get("capabilities")
    if isinstance(caps, dict):
        table = Table(title="capabilities (relative to the CPU: lower is better)")
        for column in ("operand type / path", "execTime", "powerUsage"):
            table.add_column(column)
        rows = [(e["type"], e) for e in caps["operand_performance"]]
        rows += [("relaxed f32->f16 scalar", caps["relaxed_float32_to_float16_scalar"]),
                 ("relaxed f32->f16 tensor", caps["relaxed_float32_to_float16_tensor"]),
                 ("IF", caps["if"]), ("WHILE", caps["while"])]
        for label, perf in rows:
            table.add_row(label, f"{perf['exec_time']:g}", f"{perf['power_usage']:g}")
        console.print(table)
    for key, error in data.get("errors", {}).items():
        console.print(f"[red]{_shown(key)}: {_shown(error)}[/]")
