"""``nnvts drivers``: what each installed driver says about itself."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from vts.hal.enums import OperandType, enum_name
from vts.run.drivers import DriverNotFound, available_drivers, load_device


def describe_drivers(console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title="nnvts drivers")
    for column in ("driver", "device name", "type", "version", "capabilities (execTime/powerUsage)"):
        table.add_column(column)
    for name, target in available_drivers().items():
        try:
            device = load_device(target)
            caps = device.get_capabilities()
            perf = caps.performance_of(OperandType.TENSOR_FLOAT32)
            quant = caps.performance_of(OperandType.TENSOR_QUANT8_ASYMM)
            relaxed = caps.relaxed_float32_to_float16_performance_tensor
            summary = (f"f32 {perf.exec_time:g}/{perf.power_usage:g}, q8 {quant.exec_time:g}/{quant.power_usage:g}, "
                       f"relaxed {relaxed.exec_time:g}/{relaxed.power_usage:g}")
            table.add_row(name, device.name, enum_name(type(device.get_type()), device.get_type()),
                          device.get_version_string(), summary)
        except (DriverNotFound, Exception) as error:
            table.add_row(name, f"[red]cannot load: {error}[/]", "", "", "")
    console.print(table)
