"""The opening exchange, harness side: HELLO, then (from revision 2) OPEN with the driver options.

HELLO is byte for byte what the first protocol sent, so a driver built
against it keeps working; its reply names the revisions the driver speaks
(``vts.ipc.protocol.opening``).  The harness agrees on the highest revision
both speak and, from revision 2, sends OPEN: the driver options, answered
with the options the driver accepts and its device name as opened.  Options
given to a driver that speaks only revision 1 are a usage error, as are
options the driver refuses (``DriverOptionError``, exit status 2).  From
revision 3 OPEN also asks for the features the harness uses (``batch``, and
``aidl:1`` to ``aidl:4``: the AIDL interface the driver speaks, at most one
granted) and the driver grants those it serves; a feature not granted is
never used.
"""

from __future__ import annotations

from collections.abc import Sequence

from vts.hal.enums import ErrorStatus
from vts.hal.errors import DriverError
from vts.ipc import protocol as p
from vts.ipc.connection import Connection
from vts.ipc.driver_options import DriverOptionError, check_against
from vts.ipc.errors import ProtocolError, RequestRejected
from vts.ipc.protocol import Method, Writer
from vts.ipc.remote_exceptions import RemoteDriverException

__all__ = ["WANTED_FEATURES", "hello", "open_driver"]

#: What the harness calls itself in HELLO (informative only).
CLIENT_NAME = "nnvts"
#: The features the harness asks for in a revision-3 OPEN (docs/protocol.md §5.3).
WANTED_FEATURES: tuple[str, ...] = (p.BATCH_FEATURE, *p.AIDL_FEATURES, p.ASYNC_FEATURE, *p.BATCH_EXTRA_FEATURES)


def hello(connection: Connection) -> None:
    """Say HELLO (version 1) and note the device's name and flags on ``connection``."""

    def write(w: Writer) -> None:
        w.u32(p.PROTOCOL_VERSION)
        w.string(CLIENT_NAME)

    version, connection.device_name, connection.device_flags = connection.call(
        Method.HELLO, write, lambda r, taken: (r.u32(), r.text(), tuple(r.text() for _ in range(r.count(4, 64)))))
    if version != p.PROTOCOL_VERSION:
        raise ProtocolError(f"the driver speaks protocol version {version}, the harness {p.PROTOCOL_VERSION}")


def open_driver(connection: Connection, options: Sequence[tuple[str, str]], driver: str) -> None:
    """Agree on a revision after HELLO and, from revision 2, open the driver with ``options``.

    Sets the connection's ``revision``, ``options``, ``accepted_options`` and
    ``features`` (and ``device_name``, as the driver reports it once opened).
    """
    revision = min(p.advertised_revision(connection.device_flags), p.PROTOCOL_REVISION)
    connection.revision = revision
    if revision < p.OPTIONS_REVISION:
        connection.accepted_options = ()
        if options:
            names = ", ".join(repr(key) for key, _ in options)
            raise DriverOptionError(
                f"driver {driver!r} does not accept option{'s' if len(options) > 1 else ''} {names} (it accepts "
                f"no options: it speaks protocol revision 1, and options came with revision {p.OPTIONS_REVISION}, "
                "docs/protocol.md §5.3)")
        return
    wanted = WANTED_FEATURES if revision >= p.FEATURES_REVISION else ()
    try:
        reply = connection.call(Method.OPEN, lambda w: p.write_open_request(w, revision, options, wanted),
                                lambda r, taken: p.read_open_reply(r))
    except DriverError as error:
        if error.status == ErrorStatus.INVALID_ARGUMENT:
            raise DriverOptionError(f"driver {driver!r} refused its options: {error.message}") from None
        raise ProtocolError(f"the driver did not open: {error}") from None
    except (RequestRejected, RemoteDriverException) as error:
        raise ProtocolError(f"the driver named revision {revision} in HELLO but did not open: {error}") from None
    if reply.revision != revision:
        raise ProtocolError(f"OPEN asked for revision {revision}; the driver answered {reply.revision}")
    unasked = sorted(set(reply.features) - set(wanted))
    if unasked:
        raise ProtocolError(f"OPEN granted features the harness did not ask for: {', '.join(unasked)}")
    p.granted_aidl(reply.features)  # at most one AIDL version (ProtocolError): ProxyDevice speaks it
    connection.features = frozenset(reply.features)
    connection.device_name = reply.device_name
    connection.accepted_options = reply.accepted
    connection.options = tuple(options)
    check_against(driver, reply.accepted, options)
