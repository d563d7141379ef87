"""Durations on the command line: ``90``, ``90s``, ``10m``, ``1.5h``."""

from __future__ import annotations

import re

import click

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
#: Longer than any soak or fuzz run: a larger value is a typo.
MAX_SECONDS = 30 * 24 * 3600.0
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)\s*$")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ValueError when it is not a non-negative number with an optional s/m/h unit."""
    match = _PATTERN.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration (examples: 90, 90s, 10m, 1.5h)")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_SECONDS:
        raise ValueError(f"{text!r} is longer than 30 days")
    return seconds


class Duration(click.ParamType):
    name = "DURATION"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            return parse_duration(value if isinstance(value, str) else f"{value}")
        except ValueError as error:
            self.fail(str(error), param, ctx)
