"""Bounds on everything a driver sends the harness (docs/protocol.md §2.2).

A driver under test is not trusted: a message, a string, a list or a
descriptor count it sends is bounded here before the harness allocates for
it.  Two kinds of bound:

* **hard limits** (message size, descriptors, list lengths, dimensions per
  shape): exceeding one is a protocol violation - verdict ``crash``, the
  connection is dropped and the driver restarted;
* **text limits** (error messages, names, tracebacks): longer text is not
  wrong, only too long for a report, so it is cut and marked
  ``…[cut: N bytes]``.

No imports beyond the standard library: the runner uses ``cut_text`` too.
"""

from __future__ import annotations

#: Largest message body a driver may send (inline or in a BODY_IN_FD descriptor).
MAX_DRIVER_BODY = 64 << 20
#: Descriptors the harness makes room for in one received record; the kernel drops any beyond.
DRIVER_FD_SPACE = 8
#: Descriptors a driver's message may carry: only an EXECUTE_FENCED reply, one (a pending fence).
MAX_REPLY_FDS = 1
#: Items in any list a driver sends (support flags, capabilities table, extensions, device flags).
MAX_LIST_ITEMS = 1 << 16
#: Output shapes in one answer, and dimensions in one shape.
MAX_OUTPUT_SHAPES = 1024
MAX_RANK = 64
#: Text from a driver (error messages, names, version strings), in UTF-8 bytes; beyond is cut.
MAX_TEXT = 4096
#: A Python driver's traceback (the tail is kept: it names the fault).
MAX_TRACEBACK = 16384
#: A driver's exception type name.
MAX_TYPE_NAME = 256

#: What a result keeps of any one text (reason, each detail) and of all details together.
MAX_RESULT_TEXT = 16384
MAX_RESULT_DETAILS = 200
MAX_RESULT_DETAILS_TEXT = 65536


def cut_marker(cut: int) -> str:
    return f"…[cut: {cut} bytes]"


def cut_text(text: str, limit: int, keep_tail: bool = False) -> str:
    """``text`` if it has at most ``limit`` characters, else its head (or tail) and a marker.

    The marker counts what was left out in UTF-8 bytes.
    """
    if len(text) <= limit:
        return text
    kept = text[-limit:] if keep_tail else text[:limit]
    rest = text[:-limit] if keep_tail else text[limit:]
    marker = cut_marker(len(rest.encode("utf-8", "replace")))
    return marker + kept if keep_tail else kept + marker


def cut_bytes(data: bytes | bytearray | memoryview, total: int, limit: int, keep_tail: bool = False) -> str:
    """Decode at most ``limit`` bytes of a ``total``-byte UTF-8 field, marked when cut.

    Undecodable bytes become U+FFFD: a driver's text must never carry lone
    surrogates into a report (they cannot be written as UTF-8).
    """
    if total <= limit:
        return bytes(data).decode("utf-8", "replace")
    kept = data[total - limit :] if keep_tail else data[:limit]
    text = bytes(kept).decode("utf-8", "replace")
    marker = cut_marker(total - limit)
    return marker + text if keep_tail else text + marker
