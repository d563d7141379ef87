"""The run's header as every report reads it, and the driver options (``--driver-option``) it carries.

The header is written by ``nnvts run`` (trusted) but read back from files
anyone may have written (``nnvts report``, ``nnvts merge``), so everything a
report takes from it is bounded first.  The driver options are the one part
of the header a report lists entry by entry (a JUnit property, an HTML row),
so they get a shape of their own: a flat object of strings, sorted by key,
at most ``MAX_DRIVER_OPTIONS`` of them.  A header without them (written
before options existed) has none: ``{}``.
"""

from __future__ import annotations

import json
from typing import Any

from vts.report.sanitize import MAX_EXTRA_ITEMS, MAX_EXTRA_STRING, clean, clean_value, cut

#: Options kept of a header: a run configures a driver with a few; a file with thousands is hostile.
#: One entry less than a generic object keeps, so the cut marker fits without being cut itself.
MAX_DRIVER_OPTIONS = MAX_EXTRA_ITEMS - 1
#: Characters kept of an option's key (a value keeps ``MAX_EXTRA_STRING``, as strings of ``extra`` do).
MAX_OPTION_KEY = 256
#: The key under which a cut object of options says how many it dropped (always last).
CUT_KEY = "…"
#: Characters of options a one-line message shows (``describe_options``).
MAX_DESCRIBED = 300


def driver_of(header: dict[str, Any]) -> dict[str, Any]:
    """The header's driver as an object: a header of an old nnvts may name it with a bare string."""
    driver = header.get("driver")
    return driver if isinstance(driver, dict) else {"name": driver}


def driver_options(header: dict[str, Any]) -> Any:
    """The header's driver options as written (``{}`` when absent); not checked, see ``options_problem``."""
    options = driver_of(header).get("options")
    return {} if options is None else options


def options_problem(options: object) -> str | None:
    """Why ``options`` read from a file is not an object of strings (None when it is).

    Readers of results files refuse such a header, as they refuse a
    selection that is not an object: a report cannot say what the run was.
    """
    if not isinstance(options, dict):
        return f"the header's driver options are not an object ({_json_kind(options)})"
    for key, value in options.items():
        if not isinstance(value, str):
            return f"the header's driver option {cut(json.dumps(key), 80)} is not a string ({_json_kind(value)})"
    return None


def _json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words (the file's author wrote JSON, not Python)."""
    kinds = ((bool, "true or false"), (str, "a string"), (int | float, "a number"), (dict, "an object"),
             (list, "an array"))
    return next((kind for cls, kind in kinds if isinstance(value, cls)), "null" if value is None else "a value")


def clean_driver_options(options: object) -> dict[str, str]:
    """Options a report can list: strings only (others as their JSON text), bounded, sorted by key.

    Beyond ``MAX_DRIVER_OPTIONS`` the rest are dropped and ``CUT_KEY`` says
    how many, as a cut list says it in ``extra``: never silently.  Cleaning
    cleaned options changes nothing (a stream's writer and its reader both
    clean): an earlier marker is kept, last, unless this cut makes a new one.
    """
    if not isinstance(options, dict):
        return {}
    cleaned = {clean(key, MAX_OPTION_KEY): _option_value(value) for key, value in options.items()}
    marker = cleaned.pop(CUT_KEY, None)
    keys = sorted(cleaned)
    bounded = {key: cleaned[key] for key in keys[:MAX_DRIVER_OPTIONS]}
    if len(keys) > MAX_DRIVER_OPTIONS:
        marker = f"[cut: {len(keys) - MAX_DRIVER_OPTIONS} more options]"
    if marker is not None:
        bounded[CUT_KEY] = marker
    return bounded


def _option_value(value: object) -> str:
    """A value as a report shows it: a string cleaned, anything else (a hostile file's) as bounded JSON text."""
    if isinstance(value, str):
        return clean(value, MAX_EXTRA_STRING)
    return clean(json.dumps(clean_value(value), ensure_ascii=False), MAX_EXTRA_STRING)


def clean_header(header: dict[str, Any]) -> dict[str, Any]:
    """The header bounded as ``extra`` is (``clean_value``), its driver options as ``clean_driver_options``.

    A header with no options keeps having none: an old stream re-rendered
    reads as it was written.
    """
    cleaned = clean_value(header)
    driver = header.get("driver")
    if isinstance(driver, dict) and "options" in driver and isinstance(cleaned.get("driver"), dict):
        cleaned["driver"]["options"] = clean_driver_options(driver["options"])
    return cleaned


def with_clean_options(header: dict[str, Any]) -> dict[str, Any]:
    """``header`` with its driver options bounded (the same object when it has none to bound).

    The stream writes its header as given; a header taken from another file
    (``nnvts report``, ``nnvts merge``) must not carry 10,000 options on.
    """
    driver = header.get("driver")
    if not isinstance(driver, dict) or "options" not in driver:
        return header
    return {**header, "driver": {**driver, "options": clean_driver_options(driver["options"])}}


def options_text(options: object, separator: str = ",") -> str:
    """``KEY=VALUE`` pairs in key order (the JUnit property, the HTML row); "" for none.

    Reports get their header from ``read_stream``, options already clean;
    a header made by hand that holds something else has none to list.
    """
    if not isinstance(options, dict):
        return ""
    return separator.join(f"{key}={value}" for key, value in options.items())


def describe_options(options: object) -> str:
    """Options for a one-line message: ``(no driver option)`` or ``{"KEY": "VALUE", ...}``, bounded."""
    if options == {}:
        return "(no driver option)"
    return cut(json.dumps(options, ensure_ascii=True, sort_keys=isinstance(options, dict)), MAX_DESCRIBED)
