"""A driver's answers, checked and encoded for the wire (the driver host's side of docs/protocol.md §2.2).

Whatever a driver returns or raises is untrusted: each answer is checked to be
what the protocol can carry, texts are cut at the bounds of ``vts.bounds``,
and anything else becomes ``MalformedAnswer`` (the harness reports it as the
driver's fault).  Shared by the host's core handlers and its session kinds.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import numpy as np

from vts import bounds
from vts.hal.enums import ErrorStatus, MeasureTiming
from vts.hal.errors import DriverError
from vts.hal.types import ExecutionResult
from vts.ipc import protocol as p
from vts.ipc.protocol import WireStatus, Writer


class MalformedAnswer(Exception):
    """The driver returned something the protocol cannot carry (wrong type, out-of-range value)."""


def measure_timing(value: int) -> MeasureTiming | int:
    return MeasureTiming(value) if value in (0, 1) else value


def encode_answer(write: Callable[[Writer], None], call: str, value: object, w: Writer | None = None) -> Writer:
    """Run ``write``; anything the protocol cannot carry is the driver's malformed answer."""
    w = w or Writer()
    try:
        write(w)
    except MalformedAnswer:
        raise
    except Exception as error:
        raise MalformedAnswer(f"{call} returned {value!r}, which the protocol cannot carry: {error}") from None
    return w


def encode_result(result: object, call: str) -> Writer:
    if not isinstance(result, ExecutionResult):
        raise MalformedAnswer(f"{call} returned {type(result).__name__}, not an ExecutionResult")
    check_shapes(result.output_shapes, call)
    return encode_answer(lambda w: p.write_execution_result(w, result), call, result)


def check_shapes(shapes: object, call: str) -> None:
    """Output shapes the protocol can carry: at most MAX_OUTPUT_SHAPES, each of integer dimensions
    (at most MAX_RANK) and a bool ``is_sufficient``; anything else is the driver's malformed answer."""
    try:
        items = list(shapes)  # type: ignore[call-overload]
    except TypeError:
        raise MalformedAnswer(f"{call} returned output shapes {short_repr(shapes)}, not a sequence") from None
    if len(items) > bounds.MAX_OUTPUT_SHAPES:
        raise MalformedAnswer(f"{call} returned {len(items)} output shapes (at most {bounds.MAX_OUTPUT_SHAPES})")
    for shape in items:
        dims = getattr(shape, "dimensions", None)
        sufficient = getattr(shape, "is_sufficient", None)
        if dims is None or not isinstance(sufficient, (bool, np.bool_)):
            raise MalformedAnswer(f"{call} returned the output shape {short_repr(shape)}; expected an "
                                  "OutputShape with a bool is_sufficient")
        dims = list(dims)
        if len(dims) > bounds.MAX_RANK:
            raise MalformedAnswer(f"{call} returned an output shape of {len(dims)} dimensions "
                                  f"(at most {bounds.MAX_RANK})")
        if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
            raise MalformedAnswer(f"{call} returned output dimensions {short_repr(dims)}; each must be an integer")


def short_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return bounds.cut_text(text, 200)


def cut_wire_text(text: str, limit: int = bounds.MAX_TEXT, keep_tail: bool = False) -> str:
    """A text bounded for the wire (docs/protocol.md §2.2), cut and marked: the harness then reports it whole."""
    if len(text) <= limit // 4:
        return text
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return text
    return bounds.cut_bytes(data, len(data), limit, keep_tail)


def int_reply(value: object) -> tuple[Writer, None]:
    return encode_answer(lambda w: w.i64(int(value)), "query", value), None  # type: ignore[call-overload]


def as_str(value: object) -> str:
    if not isinstance(value, str):
        raise MalformedAnswer(f"returned {type(value).__name__}, not a string")
    return value


def text_body(message: str) -> bytes:
    w = Writer()
    w.string(cut_wire_text(message))
    return bytes(w.buf)


def error_body(error: DriverError) -> bytearray:
    w = Writer()
    message = cut_wire_text(safe_str(error.message))
    try:
        check_shapes(error.output_shapes, "the error")
        p.write_error(w, message, error.output_shapes, error.timing)
    except Exception as bad:
        # The status is what matters; malformed shapes or timing are reported as the message.
        w = Writer()
        p.write_error(w, cut_wire_text(f"{message} (unencodable shapes/timing: {safe_str(bad)})"), (), None)
    return w.buf


def driver_error_answer(error: DriverError) -> tuple[int, bytearray, list[int], None]:
    """(status, body, fds, writer) of a reply to a DriverError; NONE is no error status, so a driver
    raising it gave a malformed answer."""
    if error.status == ErrorStatus.NONE:
        wrong = MalformedAnswer(f"raised DriverError with status NONE ({safe_str(error.message)})")
        return WireStatus.DRIVER_EXCEPTION, exception_body(wrong), [], None
    return error.status, error_body(error), [], None


def safe_str(value: object) -> str:
    """``str(value)`` of a driver's object, which may itself raise."""
    try:
        return value if isinstance(value, str) else str(value)
    except BaseException:
        return f"<unprintable {type(value).__name__}>"


def exception_body(error: BaseException) -> bytearray:
    w = Writer()
    w.string(cut_wire_text(type(error).__name__, bounds.MAX_TYPE_NAME))
    w.string(cut_wire_text(safe_str(error)))
    try:
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    except BaseException:
        trace = "<the traceback could not be formatted>"
    w.string(cut_wire_text(trace, bounds.MAX_TRACEBACK, keep_tail=True))
    return w.buf
