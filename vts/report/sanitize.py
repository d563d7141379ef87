"""Making untrusted strings safe for every report: bounded, and holding only what XML can carry.

Reasons, details and driver stderr come from the driver, and a driver can
say anything: a 50 MB message, NUL bytes, ANSI escapes, ``]]>``, a lone
UTF-16 surrogate (which JSON can encode but UTF-8 cannot).  Every report
passes each such string through ``clean`` before writing it, so one hostile
message can neither blow a report up to hundreds of megabytes nor make it
unparseable, nor crash the harness while it writes the report.
"""

from __future__ import annotations

import math
import re
from typing import Any

from vts.bounds import MAX_RESULT_DURATION
from vts.results import CaseResult

#: Characters (in UTF-8 bytes) kept of any one message; a cut message says how much was dropped.
MAX_MESSAGE_BYTES = 8192
#: Detail lines kept per case (the first ones: a reason first, then its evidence).
MAX_DETAIL_LINES = 40
#: Characters kept of each string inside ``extra`` (keys and values alike).
MAX_EXTRA_STRING = 1024
#: Items kept of each list inside ``extra``, and nesting depth followed.
MAX_EXTRA_ITEMS = 64
MAX_EXTRA_DEPTH = 6

# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
# Everything else (C0 controls, lone surrogates, U+FFFE/U+FFFF) is replaced.  C1 controls
# and DEL are legal XML but are terminal escapes in disguise: replaced too.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
REPLACEMENT = "\ufffd"


def cut(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """``text`` bounded to ``limit`` UTF-8 bytes, marked ``…[cut: N bytes]`` when shortened.

    The marker counts in the limit, so cutting a cut message changes nothing
    (reports re-clean what they read from a stream).
    """
    if len(text) <= limit // 4:
        return text  # at most 4 bytes a character: certainly within the limit, no encoding needed
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= limit:
        return text
    room = max(limit - MARKER_ROOM, 0)
    kept = data[:room].decode("utf-8", errors="ignore")  # a character split by the cut is dropped
    return f"{kept}…[cut: {len(data) - len(kept.encode('utf-8', errors='surrogatepass'))} bytes]"


#: Bytes kept free for the marker: "…" (3 bytes) and "[cut: N bytes]" with N up to 20 digits.
MARKER_ROOM = 3 + 14 + 20


def clean(text: object, limit: int = MAX_MESSAGE_BYTES) -> str:
    """A bounded string with only characters XML 1.0 allows (the others become U+FFFD)."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) <= limit // 4 and text.isprintable():
        return text  # the common case, checked in C: short, and no control, surrogate or unassigned character
    return _NOT_XML.sub(REPLACEMENT, cut(text, limit))


def clean_value(value: Any, depth: int = 0) -> Any:
    """A JSON value from ``extra`` with every string cleaned and every container bounded."""
    if isinstance(value, str):
        return clean(value, MAX_EXTRA_STRING)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # strict JSON has no NaN or Infinity (a browser's JSON.parse rejects them)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth >= MAX_EXTRA_DEPTH:
        return "…[cut: nested too deep]"
    if isinstance(value, dict):
        items = list(value.items())
        bounded = {clean(k, MAX_EXTRA_STRING): clean_value(v, depth + 1) for k, v in items[:MAX_EXTRA_ITEMS]}
        if len(items) > MAX_EXTRA_ITEMS:
            bounded["…"] = f"[cut: {len(items) - MAX_EXTRA_ITEMS} more keys]"
        return bounded
    if isinstance(value, list | tuple):
        bounded_list = [clean_value(v, depth + 1) for v in value[:MAX_EXTRA_ITEMS]]
        if len(value) > MAX_EXTRA_ITEMS:
            bounded_list.append(f"…[cut: {len(value) - MAX_EXTRA_ITEMS} more items]")
        return bounded_list
    return clean(repr(value), MAX_EXTRA_STRING)


def clean_details(details: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    lines = tuple(clean(line) for line in details[:MAX_DETAIL_LINES])
    if len(details) > MAX_DETAIL_LINES:
        lines += (f"…[cut: {len(details) - MAX_DETAIL_LINES} more lines]",)
    return lines


def _already_clean(result: CaseResult) -> bool:
    """True for a result with no details, no extra and short, printable labels (checked in C, at once)."""
    if not 0.0 <= result.duration <= MAX_RESULT_DURATION:
        return False
    if result.extra or result.details or len(result.operations) + len(result.operand_types) > MAX_EXTRA_ITEMS:
        return False
    if (len(result.name) > 256 or len(result.spec) > 256 or len(result.family) > 64
            or len(result.reason) > MAX_MESSAGE_BYTES // 4):
        return False
    labels = (*result.operations, *result.operand_types)
    if any(len(label) > 64 for label in labels):
        return False
    return "".join((result.name, result.family, result.reason, result.spec, *labels)).isprintable()


#: The last result found clean: every sink of a run cleans the same object in turn (results are frozen).
_last_clean: list[CaseResult | None] = [None]


def _duration(seconds: float) -> float:
    """A duration a report can add up: NaN, negative and infinite ones are 0, huge ones the bound."""
    if not 0.0 <= seconds < math.inf:  # NaN is not comparable
        return 0.0
    return min(seconds, MAX_RESULT_DURATION)


def clean_result(result: CaseResult) -> CaseResult:
    """The same result with every string bounded and XML-safe (names included: specs are outside input too)."""
    if result is _last_clean[0]:
        return result
    if _already_clean(result):
        _last_clean[0] = result
        return result  # nothing to change (most results of a large run): no copy
    return CaseResult(
        name=clean(result.name, 1024),
        family=clean(result.family, 256),
        verdict=result.verdict,
        reason=clean(result.reason),
        duration=_duration(result.duration),
        details=clean_details(result.details),
        operations=tuple(clean(op, 256) for op in result.operations[:MAX_EXTRA_ITEMS]),
        operand_types=tuple(clean(t, 256) for t in result.operand_types[:MAX_EXTRA_ITEMS]),
        spec=clean(result.spec, 1024),
        extra=clean_value(result.extra) if result.extra else {},
    )
