"""Driver options (``--driver-option KEY=VALUE``): their text, what a driver accepts, and their conversion.

A Python driver declares its options as the keyword parameters of its
factory (``def create_device(argv=(), backend: str | None = None)``); a
program speaking the protocol lists them in the opening exchange
(docs/protocol.md §5.3).  Options are text where they enter and stay text in
the driver reference (so a reference is hashable, picklable and the same
for an in-process and an out-of-process driver); a Python factory gets them
converted to its parameters' types.  Every problem is a ``DriverOptionError``,
a usage error (exit status 2) raised before anything runs.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vts.hal.interfaces import Device
from vts.ipc.driver_errors import DriverNotFound

if TYPE_CHECKING:
    from vts.ipc.drivers import DriverRef

__all__ = [
    "LEGACY_PARAMETERS",
    "MAX_OPTIONS",
    "MAX_OPTION_TEXT",
    "DriverOption",
    "DriverOptionError",
    "accepted_options",
    "check_against",
    "check_options",
    "describe_accepted",
    "documented_options",
    "factory_arguments",
    "normalise_options",
    "options_of",
    "parse_driver_option",
]

#: An option's name: a Python-like identifier, dots and dashes allowed after the first character.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
#: The longest ``KEY=VALUE`` text (a path or a short list fits; a file's contents do not belong here).
MAX_OPTION_TEXT = 4096
#: The most options one driver reference carries.
MAX_OPTIONS = 64
#: Factory parameters that are not options: every factory in nnvts/drivers/ takes ``argv`` (its own command
#: line, from before options existed).
LEGACY_PARAMETERS = frozenset({"argv"})
_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"0", "false", "no"})


class DriverOptionError(DriverNotFound):
    """A driver option that is malformed, unknown to the driver, missing, or not of the driver's type."""


@dataclass(frozen=True, slots=True)
class DriverOption:
    """One option a driver accepts: its name, its default as text (None: required), what it does."""

    name: str
    default: str | None = None
    description: str = ""

    def __str__(self) -> str:
        if self.default is None:
            return f"{self.name}=<required>"
        return f"{self.name}={self.default if self.default else '<none>'}"


def _check_text(what: str, text: str) -> None:
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        raise DriverOptionError(f"driver option {what!r} contains a control character")


def check_pair(key: object, value: object) -> tuple[str, str]:
    """``(key, value)`` if both are well-formed option text, else ``DriverOptionError``."""
    if not isinstance(key, str) or not isinstance(value, str):
        raise DriverOptionError(f"a driver option is text, not {type(key).__name__}={type(value).__name__}")
    if len(key) + 1 + len(value) > MAX_OPTION_TEXT:
        raise DriverOptionError(f"driver option {key[:40]!r} is longer than {MAX_OPTION_TEXT} characters")
    _check_text(key, key)
    _check_text(key, value)
    if not _NAME.match(key):
        raise DriverOptionError(f"driver option name {key!r} is not a name "
                                "(a letter or _, then letters, digits, _, . or -)")
    return key, value


def parse_driver_option(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as ``(key, value)`` (the value may be empty or contain ``=``); ``DriverOptionError`` else."""
    if not isinstance(text, str):
        raise DriverOptionError(f"a driver option is text, not {type(text).__name__}")
    if len(text) > MAX_OPTION_TEXT:
        raise DriverOptionError(f"driver option {text[:40]!r}... is longer than {MAX_OPTION_TEXT} characters")
    key, equals, value = text.partition("=")
    if not equals:
        raise DriverOptionError(f"driver option {text!r}: expected KEY=VALUE")
    if not key:
        raise DriverOptionError(f"driver option {text!r}: the name before '=' is empty")
    return check_pair(key, value)


def normalise_options(options: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Options as a tuple of ``(key, value)`` sorted by key; a key given twice is a ``DriverOptionError``."""
    pairs = list(options.items()) if isinstance(options, Mapping) else list(options)
    if len(pairs) > MAX_OPTIONS:
        raise DriverOptionError(f"{len(pairs)} driver options (at most {MAX_OPTIONS})")
    checked: dict[str, str] = {}
    for pair in pairs:
        if isinstance(pair, str) or not isinstance(pair, tuple | list) or len(pair) != 2:
            raise DriverOptionError(f"a driver option is a (key, value) pair, not {pair!r}")
        key, value = check_pair(*pair)
        if key in checked:
            raise DriverOptionError(f"driver option {key!r} given twice")
        checked[key] = value
    return tuple(sorted(checked.items()))


def _signature(factory: Any) -> inspect.Signature | None:
    for eval_str in (True, False):
        try:
            return inspect.signature(factory, eval_str=eval_str)
        except (NameError, SyntaxError, TypeError):  # an annotation that does not evaluate here
            continue
        except ValueError:  # no signature (a builtin)
            return None
    return None


def _described(factory: Any) -> dict[str, str]:
    """Option descriptions from a ``Driver options:`` section of the factory's docstring (``name: text`` lines)."""
    lines = (inspect.getdoc(factory) or "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().lower() == "driver options:")
    except StopIteration:
        return {}
    found: dict[str, str] = {}
    last = None
    for line in lines[start + 1:]:
        if not line.strip():
            break
        match = re.match(r"\s*[-*]?\s*`{0,2}([A-Za-z_][A-Za-z0-9_.-]*)`{0,2}\s*:\s*(.*)", line)
        if match:
            last = match.group(1)
            found[last] = match.group(2).strip()
        elif last is not None:
            found[last] = f"{found[last]} {line.strip()}".strip()
    return found


def documented_options(obj: object) -> dict[str, str]:
    """The ``Driver options:`` section of a factory's docstring (name -> text), for a factory taking ``**options``.

    Such a factory accepts any name (an engine's ``ep.KEY`` provider options cannot be listed), so its
    signature says nothing; what it documents is what ``nnvts drivers`` and ``nnvts info`` can show.
    """
    return _described(obj) if callable(obj) else {}


def _is_device_class(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, Device)


def options_of(obj: object) -> tuple[DriverOption, ...] | None:
    """The options a driver object accepts: its factory's keyword parameters (None: ``**kwargs``, any).

    A ``Device`` instance or class takes none; neither does a factory whose
    signature cannot be read.  ``argv`` is not an option (``LEGACY_PARAMETERS``).
    """
    if isinstance(obj, Device) or _is_device_class(obj) or not callable(obj):
        return ()
    signature = _signature(obj)
    if signature is None:
        return ()
    described = _described(obj)
    found = []
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            continue
        if parameter.name in LEGACY_PARAMETERS:
            continue
        default = parameter.default
        text = None if default is inspect.Parameter.empty else ("" if default is None else _as_text(default))
        found.append(DriverOption(parameter.name, text, described.get(parameter.name, "")))
    return tuple(sorted(found, key=lambda option: option.name))


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def describe_accepted(accepted: tuple[DriverOption, ...] | None) -> str:
    """``accepted: a=1, b=<none>`` for a message, or ``accepts no options``."""
    if accepted is None:
        return "accepts any option"
    if not accepted:
        return "accepts no options"
    return "accepted: " + ", ".join(str(option) for option in accepted)


def check_against(driver: str, accepted: tuple[DriverOption, ...] | None,
                  options: Iterable[tuple[str, str]]) -> None:
    """Raise ``DriverOptionError`` for an option ``driver`` does not accept, or a required one not given."""
    given = dict(options)
    if accepted is None:
        return
    names = {option.name for option in accepted}
    unknown = sorted(set(given) - names)
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        why = "it accepts no options" if not accepted else describe_accepted(accepted)
        raise DriverOptionError(f"driver {driver!r} does not accept option{'s' if len(unknown) > 1 else ''} "
                                f"{listed} ({why})")
    missing = [option.name for option in accepted if option.default is None and option.name not in given]
    if missing:
        raise DriverOptionError(f"driver {driver!r} needs option{'s' if len(missing) > 1 else ''} "
                                f"{', '.join(missing)} ({describe_accepted(accepted)})")


def _target_type(parameter: inspect.Parameter) -> type:
    """The type an option's text becomes: the annotation's (``X | None`` counts as ``X``), else the default's."""
    annotation = parameter.annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        annotation = members[0] if len(members) == 1 else str
    if annotation in (bool, int, float, str):
        return annotation  # type: ignore[no-any-return]
    default = parameter.default
    if default is not inspect.Parameter.empty and type(default) in (bool, int, float, str):
        return type(default)
    return str


def convert(driver: str, name: str, text: str, kind: type) -> Any:
    """``text`` as a ``kind`` (bool from 1/0/true/false/yes/no); ``DriverOptionError`` when it is not one."""
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise DriverOptionError(f"driver {driver!r} option {name}={text!r}: expected a boolean "
                                "(1/0, true/false, yes/no)")
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise DriverOptionError(f"driver {driver!r} option {name}={text!r}: expected "
                                    f"{'an integer' if kind is int else 'a number'}") from None
    return text


def factory_arguments(driver: str, obj: object, options: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The keyword arguments to call ``obj`` with: ``options`` checked and converted to its parameters' types."""
    options = tuple(options)
    accepted = options_of(obj)
    check_against(driver, accepted, options)
    if not options:
        return {}
    signature = _signature(obj)
    parameters = {} if signature is None else dict(signature.parameters)
    arguments = {}
    for name, text in options:
        parameter = parameters.get(name)
        kind = str if parameter is None else _target_type(parameter)
        arguments[name] = convert(driver, name, text, kind)
    return arguments


def accepted_options(ref: DriverRef) -> tuple[DriverOption, ...] | None:
    """The options the Python driver ``ref`` names accepts (None: any, a factory taking ``**kwargs``).

    Read from the factory's signature, without calling it (the driver's module
    is imported).  An ``exec:`` driver says which it accepts only once it runs
    (``ProxyDevice.accepted_options``, from the opening exchange): None here.
    """
    if ref.is_exec:
        return None
    return options_of(ref.factory())


def check_options(ref: DriverRef) -> None:
    """Raise ``DriverOptionError`` unless the Python driver ``ref`` accepts its options (before anything runs).

    Unknown names, missing required ones and values that do not convert to
    the parameter's type are all found here.  Without options nothing is imported.  An ``exec:`` driver's options are
    checked by the driver itself in the opening exchange, when it starts.
    """
    if not ref.options or ref.is_exec:
        return
    factory_arguments(str(ref), ref.factory(), ref.options)  # checked and converted, not called
