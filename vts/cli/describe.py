"""``nnvts drivers``: what each installed driver says about itself (``nnvts info`` shows one in full)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vts.cli.device_info import capabilities_summary, options_data
from vts.hal.enums import enum_name
from vts.ipc.drivers import (
    DriverNotFound,
    DriverRef,
    DriverUnavailable,
    available_drivers,
    load_device,
    unavailable_drivers,
)
from vts.report.logconsole import LogConsole


def describe_drivers(console: Console | None = None) -> None:
    console = console or LogConsole()  # off a terminal, tables at their own width
    table = Table(title="nnvts drivers")
    for column in ("driver", "device name", "type", "version", "capabilities (execTime/powerUsage)",
                   "options (defaults)"):
        table.add_column(column)
    unavailable = unavailable_drivers()
    for name, target in available_drivers().items():
        if name in unavailable:
            table.add_row(name, f"[yellow]unavailable: {escape(unavailable[name])}[/]", "", "", "", "")
            continue
        try:
            device = load_device(target)
            summary = capabilities_summary(device.get_capabilities())
            options = options_data(DriverRef(name), device)["summary"]
            table.add_row(escape(name), escape(str(device.name)), enum_name(type(device.get_type()), device.get_type()),
                          escape(str(device.get_version_string())), summary, escape(options))
        except DriverUnavailable as error:
            table.add_row(name, f"[yellow]unavailable: {escape(str(error))}[/]", "", "", "", "")
        except (DriverNotFound, Exception) as error:
            table.add_row(name, f"[red]cannot load: {escape(str(error))}[/]", "", "", "", "")
    console.print(table)
