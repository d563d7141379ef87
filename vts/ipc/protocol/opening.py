"""The opening exchange's revision and ``OPEN`` message (docs/protocol.md §5.3), both ends.

HELLO stays what it has always been (version 1, byte for byte), so a driver
built against the first protocol keeps working.  A driver that speaks a
later revision says so in HELLO's reply flags (``protocol:N``, the highest
it speaks); the harness then agrees on ``min(N, PROTOCOL_REVISION)`` and,
from revision 2, sends ``OPEN`` with the driver options.  The driver
answers with the options it accepts and its device name as opened, or
INVALID_ARGUMENT when it refuses an option.  A later revision appends its
fields to ``OPEN``'s arguments and result, present when the agreed revision
is at least its number; what a revision defines never changes.

Revision 3 appends one field to each: the **features** the harness asks for
and those the driver grants (a subset).  A feature is a name (``batch``:
several calls in one message, ``vts.ipc.protocol.batch``); what comes later
(the AIDL interfaces) is one more feature of the same negotiation, not one
more revision, so the exchange is negotiated once and extended by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vts import bounds
from vts.ipc.driver_options import MAX_OPTIONS, DriverOption, DriverOptionError, check_pair
from vts.ipc.errors import ProtocolError
from vts.ipc.protocol.primitives import Reader, Writer

__all__ = [
    "ASYNC_FEATURE",
    "BATCH_FEATURE",
    "FEATURES_REVISION",
    "OPTIONS_REVISION",
    "PROTOCOL_REVISION",
    "REVISION_FLAG_PREFIX",
    "OpenReply",
    "advertised_revision",
    "check_feature",
    "read_open_reply",
    "read_open_request",
    "revision_flag",
    "write_open_reply",
    "write_open_request",
]

#: The highest revision of the protocol this implementation speaks.  Revision 1 is HELLO alone.
PROTOCOL_REVISION = 3
#: The revision that brought ``OPEN`` and driver options.
OPTIONS_REVISION = 2
#: The revision that brought named features to ``OPEN`` (asked by the harness, granted by the driver).
FEATURES_REVISION = 3
#: Feature: ``BATCH`` messages, several calls and their answers in one exchange (docs/protocol.md §5.4).
BATCH_FEATURE = "batch"
#: Feature: ``EXECUTE_ASYNC`` served by a driver that granted ``aidl:N`` (docs/protocol.md §6).  AIDL has no
#: asynchronous execute, so an AIDL driver need not serve it: without this feature the harness runs its
#: asynchronous path through ``EXECUTE``.  A driver granting no ``aidl`` is HAL 1.3 and serves it regardless.
ASYNC_FEATURE = "execute_async"
#: At most this many features asked or granted in one ``OPEN``, each a name of at most 64 characters.
MAX_FEATURES = 64
_MAX_FEATURE_NAME = 64
#: HELLO reply flag naming the highest revision a driver speaks: ``protocol:2``.
REVISION_FLAG_PREFIX = "protocol:"
#: The highest revision number a flag may name (a bound on what a driver sends, not a plan).
_MAX_REVISION = 1 << 16


def revision_flag(revision: int = PROTOCOL_REVISION) -> str:
    """The HELLO reply flag saying a driver speaks up to ``revision``."""
    return f"{REVISION_FLAG_PREFIX}{revision}"


def advertised_revision(flags: Iterable[str]) -> int:
    """The highest revision HELLO's reply ``flags`` name (1 when none does; malformed ones are ignored)."""
    best = 1
    for flag in flags:
        number = flag[len(REVISION_FLAG_PREFIX):] if flag.startswith(REVISION_FLAG_PREFIX) else ""
        if number.isdigit() and len(number) <= 6 and 1 <= int(number) <= _MAX_REVISION:
            best = max(best, int(number))
    return best


def check_feature(name: str) -> str:
    """``name`` if it is a well-formed feature name (``[a-z0-9_.:-]``, 1 to 64 characters), else ``ProtocolError``."""
    if not 1 <= len(name) <= _MAX_FEATURE_NAME or not all(c.isascii() and (c.islower() or c.isdigit() or c in "_.:-")
                                                          for c in name):
        raise ProtocolError(f"malformed feature name {name[:_MAX_FEATURE_NAME]!r}")
    return name


def _write_features(w: Writer, features: Sequence[str]) -> None:
    w.u32(len(features))
    for feature in features:
        w.string(feature)


def _read_features(r: Reader) -> tuple[str, ...]:
    return tuple(check_feature(r.text(_MAX_FEATURE_NAME)) for _ in range(r.count(4, MAX_FEATURES)))


def write_open_request(w: Writer, revision: int, options: Sequence[tuple[str, str]],
                       features: Sequence[str] = ()) -> None:
    """``u32 revision``, ``list<(str key, str value)> options``; from revision 3 ``list<str> features``."""
    w.u32(revision)
    w.u32(len(options))
    for key, value in options:
        w.string(key)
        w.string(value)
    if revision >= FEATURES_REVISION:
        _write_features(w, features)


def read_open_request(r: Reader) -> tuple[int, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The revision, options and (from revision 3) features asked for of an ``OPEN`` request.

    ``ProtocolError`` for malformed option text or feature names.
    """
    revision = r.u32()
    options = []
    for _ in range(r.count(8, MAX_OPTIONS)):
        key, value = r.text(), r.text()
        try:
            options.append(check_pair(key, value))
        except DriverOptionError as error:
            raise ProtocolError(str(error)) from None
    features = _read_features(r) if revision >= FEATURES_REVISION else ()
    return revision, tuple(options), features


@dataclass(frozen=True, slots=True)
class OpenReply:
    """What ``OPEN`` answers: the agreed revision, the device's name as opened, the options it accepts.

    ``accepted`` None: the driver takes options it does not list (any name).  ``features``: those the
    driver grants of the ones asked for (revision 3; always empty before).
    """

    revision: int
    device_name: str
    accepted: tuple[DriverOption, ...] | None = ()
    features: tuple[str, ...] = ()


def write_open_reply(w: Writer, reply: OpenReply) -> None:
    """``u32 revision``, ``str device_name``, ``bool any_option``, ``list<OptionSpec>``; from revision 3
    ``list<str> features`` (granted)."""
    w.u32(reply.revision)
    w.string(reply.device_name)
    w.boolean(reply.accepted is None)
    accepted = reply.accepted or ()
    w.u32(len(accepted))
    for option in accepted:
        w.string(option.name)
        w.boolean(option.default is not None)
        w.string(option.default or "")
        w.string(option.description)
    if reply.revision >= FEATURES_REVISION:
        _write_features(w, reply.features)


def read_open_reply(r: Reader) -> OpenReply:
    """An ``OPEN`` reply, its texts bounded as every driver text is."""
    revision = r.u32()
    name = r.text()
    any_option = r.boolean()
    accepted = []
    for _ in range(r.count(13, bounds.MAX_LIST_ITEMS)):
        option_name = r.text(bounds.MAX_TYPE_NAME)
        has_default = r.boolean()
        default = r.text()
        accepted.append(DriverOption(option_name, default if has_default else None, r.text()))
    features = _read_features(r) if revision >= FEATURES_REVISION else ()
    return OpenReply(revision, name, None if any_option else tuple(accepted), features)
