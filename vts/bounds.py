"""Every bound nnvts keeps on untrusted input, and the one marker for text it cut.

Two sources are untrusted: a driver (whatever it sends the harness, docs/protocol.md §2.2)
and a file (specs, results, baselines, expectations that a vendor points nnvts at).
Both kinds of bound live here so one change of a limit or of the cut marker
reaches every reader.

Driver bounds come in two kinds:

* **hard limits** (message size, descriptors, list lengths, dimensions per
  shape): exceeding one is a protocol violation - verdict ``crash``, the
  connection is dropped and the driver restarted;
* **text limits** (error messages, names, tracebacks): longer text is not
  wrong, only too long for a report, so it is cut and marked
  ``…[cut: N bytes]`` (:func:`cut_marker`).

File bounds: each is far above anything a real spec needs (the largest file
of the external corpus is 8.6 MB of JSON once decompressed) and far below what
would hurt the machine; a file beyond one is a load-time error (exit status 2)
that names the bound.

No imports beyond the standard library: every floor above uses these.
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
#: A result's duration in seconds (about 31 years); a results file may claim any, and 1e303 s in
#: microseconds is no integer (the JUnit report's time, the HTML report's time in cases).
MAX_RESULT_DURATION = 1e9


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


# --- Text from a file, a tree or a driver printed into a log ---

#: What ``shown`` escapes: C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the
#: bidirectional overrides and isolates (which make a log line read as something else).
_UNSHOWN = {*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_ESCAPES = {**{c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _UNSHOWN},
            ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}


def shown(text: object) -> str:
    """``text`` fit for one line of a log: every control and line-breaking character escaped (``\\n``,
    ``\\x1b``, ``\\u2028``), so a file name or a string from a spec, a tree or a driver cannot print a line
    of its own (``x\\nnvts: 5 cases in 0.4 s: 5 passed.json``) or move the cursor.  Backslashes are left
    alone: the result is for a reader, not a parser.  Unchanged (the same object) when nothing needs it.
    """
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text  # the common case, checked in C: no control, separator or format character
    return text.translate(_ESCAPES)


# --- Spec files (vendors point nnvts at spec folders they did not write) ---

#: Bytes of JSON spec text, after decompression.  Gzip data is inflated in
#: chunks and abandoned as soon as it passes this, so a gzip bomb costs about
#: this much; a file of this size parses to at most ~0.5 GB of Python lists.
MAX_SPEC_BYTES = 32 << 20

#: Bytes of YAML spec text.  A YAML node costs ~300 bytes and ~10 µs while the
#: document is composed (before anything can be checked), so 2 MiB of
#: ``0,0,...`` is already ~500 MB; large data belongs in JSON or ``{b64}``.
MAX_YAML_BYTES = 2 << 20

#: Nodes YAML aliases may add to a document beyond the nodes written out.  An
#: alias is a reference, so ``*a`` repeated makes a "billion laughs" document
#: of a few hundred bytes; everything downstream (schema, checks, expansion)
#: walks the expanded tree, so the expansion is what must be bounded.
MAX_ALIAS_NODES = 1_000_000

#: Characters of an integer literal (sign included).  Every integer a spec
#: holds fits in 64 bits (20 digits); Python's own limit (4300 digits) would
#: otherwise surface as a traceback, and a 4000-digit number has no meaning.
MAX_INT_CHARS = 24

#: Largest integer magnitude a spec may write (64 bits, signed or unsigned).
MAX_INT_MAGNITUDE = (1 << 64) - 1


def describe_bytes(size: int) -> str:
    """``64 MiB`` for messages."""
    return f"{size >> 20} MiB" if size >= 1 << 20 and size % (1 << 20) == 0 else f"{size} bytes"


# --- Results files read back (--baseline, --last-failed, --durations-from, merge, report, expectations) ---

#: Bytes of one line of a results stream.  A case record is bounded when written (a reason and each
#: detail at MAX_RESULT_TEXT, all details at MAX_RESULT_DETAILS_TEXT), so a real line is far below this.
MAX_RESULTS_LINE = 4 << 20

#: Bytes of a JSON report or durations file, which are parsed whole (a stream is read line by line).
MAX_RESULTS_DOCUMENT = 512 << 20

#: Nesting of arrays and objects in one JSON value read back.  A case record nests 4 deep; Python's
#: decoder would otherwise stop at its recursion limit with a RecursionError.
MAX_RESULTS_DEPTH = 64


# --- What one client of ``nnvts serve`` can make the service hold (docs/protocol.md §5.2) ---
#
# ``nnvts serve`` is a shared service: a client is one accepted connection together with the
# connections OPEN_CONNECTION gave it.  Everything below is released when a connection's peer
# hangs up (its pools' descriptors closed, its handles dropped, its threads ended); a request
# beyond a bound is answered PROTOCOL_ERROR, a connection beyond one is closed at once.

#: Connections open at once, all clients together; and of one client (its first and those it opened).
#: Every connection accepted from one peer process (``SO_PEERCRED``: its uid and pid) is of one client:
#: a process cannot take the service by opening many.
SERVE_MAX_CONNECTIONS = 64
SERVE_MAX_CONNECTIONS_PER_CLIENT = 16
#: Seconds an accepted connection has to say HELLO, and a greeted one may stay silent with nothing in
#: flight (no call being served, no asynchronous execution running), before the service closes it.
SERVE_HANDSHAKE_TIMEOUT = 10.0
SERVE_IDLE_TIMEOUT = 600.0
#: Threads serving calls on one connection (SET_CONCURRENCY asks for more in vain: the reply grants this).
SERVE_MAX_THREADS_PER_CONNECTION = 8
#: Memory pools declared and not released, on one connection and on all together (each holds a
#: descriptor and a mapping; the service-wide figure is lowered to fit the process's descriptor limit).
SERVE_MAX_POOLS_PER_CONNECTION = 512
SERVE_MAX_POOLS = 2048
#: Live handles (prepared models, buffers, bursts, fenced callbacks) on one connection.
SERVE_MAX_HANDLES_PER_CONNECTION = 4096
#: Asynchronous executions launched and not yet completed, on one connection, of one client (all its
#: connections together) and on all together.  Each connected client is guaranteed
#: ``SERVE_EXECUTIONS_GUARANTEED`` of the service's: beyond that a client takes from what is left only
#: while the unused guarantees of the others stay free (one client cannot take what another needs).
SERVE_MAX_EXECUTIONS_PER_CONNECTION = 64
SERVE_MAX_EXECUTIONS_PER_CLIENT = 64
SERVE_MAX_EXECUTIONS = 256
SERVE_EXECUTIONS_GUARANTEED = SERVE_MAX_EXECUTIONS // SERVE_MAX_CONNECTIONS
#: Largest body of a request, by kind: refused from the header alone, before anything is allocated.
#: Small kinds (HELLO, GET_*, CLOSE, SET_CONCURRENCY, OPEN_CONNECTION, fenced info, burst configure and
#: free) carry a few bytes and a preamble of releases: never more than one inline record.
SERVE_MAX_SMALL_BODY = 64 << 10
#: Requests that name operands and pools (EXECUTE*, BURST_EXECUTE, ALLOCATE, BUFFER_COPY_*).
SERVE_MAX_REQUEST_BODY = 4 << 20
#: A model (PREPARE_MODEL, PREPARE_MODEL_FROM_CACHE): its inline constants travel in the body.
SERVE_MAX_MODEL_BODY = 128 << 20
#: Request bodies held at once (received and not yet answered), all connections together.
SERVE_MAX_BYTES_IN_FLIGHT = 256 << 20
