"""Finding drivers: by entry point name, by ``module:attr``, or ``exec:COMMAND``, with their options.

Entry points of the group ``nnvts.drivers`` name installed drivers
(``reference`` is ours).  ``module:attr`` names a ``Device`` instance, a
``Device`` subclass, or a factory called with the driver's options as
keyword arguments (``vts.ipc.driver_options``).  ``exec:COMMAND`` runs any
program speaking the nnvts protocol (see docs/protocol.md).
"""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata

from vts.hal.interfaces import Device
from vts.ipc.driver_errors import DriverNotFound, DriverSyntaxError, DriverUnavailable
from vts.ipc.driver_options import DriverOptionError, factory_arguments, normalise_options

__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "DriverNotFound",
    "DriverOptionError",
    "DriverRef",
    "DriverSyntaxError",
    "DriverUnavailable",
    "available_drivers",
    "load_device",
    "missing_extra_message",
    "resolve_target",
    "unavailable_drivers",
]

ENTRY_POINT_GROUP = "nnvts.drivers"

#: Drivers bundled with nnvts, usable even when the package metadata is absent
#: (running from a source tree without ``pip install``).
BUILTIN = {"reference": "nnvts.drivers.reference:create_device",
           # Over optional engines: their factories name the extra to install when the engine is missing.
           "litert": "nnvts.drivers.litert:create_device", "onnxruntime": "nnvts.drivers.onnxruntime:create_device",
           "xla": "nnvts.drivers.xla:create_device"}


def _target(entry: metadata.EntryPoint) -> str:
    """``module:attr`` of an entry point (its value may end in ``[extra]``)."""
    return f"{entry.module}:{entry.attr}"


def _missing_extra(entry: metadata.EntryPoint) -> str | None:
    """One line saying what to install when the entry point's extras are missing, or None.

    An entry point declared ``name = "module:attr [extra]"`` needs the
    distributions its package lists under that extra; a driver over an
    optional engine (``litert``, ``onnxruntime``) is found without them and
    said unavailable, rather than failing with an import traceback.
    """
    if not entry.extras or entry.dist is None:
        return None
    return missing_extra_message(entry.name, entry.extras, entry.dist.name, entry.dist.requires or [])


def missing_extra_message(driver: str, extras: Sequence[str], package: str, requires: Sequence[str]) -> str | None:
    """What to install for driver ``driver``: the ``extras`` requirements of ``package`` not installed, or None."""
    missing = []
    for requirement in requires:
        name, _, marker = requirement.partition(";")
        if not any(re.search(rf"extra\s*==\s*[\"']{re.escape(extra)}[\"']", marker) for extra in extras):
            continue
        distribution = re.split(r"[\s<>=!~;\[(]", name.strip(), maxsplit=1)[0]
        try:
            metadata.version(distribution)
        except metadata.PackageNotFoundError:
            missing.append(distribution)
    if not missing:
        return None
    return (f"driver {driver!r} needs {', '.join(sorted(set(missing)))}, not installed: "
            f"pip install '{package}[{','.join(extras)}]'")


@dataclass(frozen=True)
class DriverRef:
    """How to obtain a driver, parsed once where the text enters (the command line, a pytest option).

    Three kinds: an installed name (entry point or built-in), ``module:attr``,
    or ``exec:COMMAND`` (a program speaking the nnvts protocol).  The text is
    checked when the reference is made, so everything downstream holds a
    well-formed value; picklable, so ``-j`` workers receive it as is.

    ``options`` are the driver's options (``--driver-option KEY=VALUE``) as
    text, sorted by key; a key given twice or malformed is a
    ``DriverOptionError``.  ``str(ref)`` is the spec alone.
    """

    spec: str
    options: tuple[tuple[str, str], ...] = ()
    kind: str = field(init=False, compare=False)
    #: The program and its arguments of an ``exec:`` driver (empty for the others).
    argv: tuple[str, ...] = field(init=False, compare=False, default=())

    def __post_init__(self) -> None:
        spec = self.spec
        if not isinstance(spec, str):
            raise TypeError(f"a driver reference is made from text, not {type(spec).__name__}")
        object.__setattr__(self, "options", normalise_options(self.options))
        if spec.startswith("exec:"):
            try:
                words = tuple(shlex.split(spec[len("exec:"):]))
            except ValueError as error:
                raise DriverSyntaxError(f"{spec!r}: bad shell quoting in the command ({error})") from None
            if not words:
                raise DriverSyntaxError(f"{spec!r}: expected a command after exec:")
            object.__setattr__(self, "kind", "exec")
            object.__setattr__(self, "argv", words)
        elif ":" in spec:
            module, _, attr = spec.partition(":")
            if not module or not attr or not all(p.isidentifier() for p in module.split(".") + attr.split(".")):
                raise DriverSyntaxError(
                    f"{spec!r}: expected module:attr (dotted Python names), an installed name, or exec:COMMAND")
            object.__setattr__(self, "kind", "module")
        else:
            object.__setattr__(self, "kind", "installed")

    @classmethod
    def of(cls, value: DriverRef | str) -> DriverRef:
        """``value`` itself, or the reference its text names (for library callers that hold text)."""
        return value if isinstance(value, DriverRef) else cls(value)

    def __str__(self) -> str:
        return self.spec

    def with_options(self, options: Mapping[str, str] | Iterable[tuple[str, str]]) -> DriverRef:
        """The same driver with ``options`` instead of its own (``DriverOptionError`` if malformed)."""
        return DriverRef(self.spec, tuple(options.items()) if isinstance(options, Mapping) else tuple(options))

    @property
    def options_dict(self) -> dict[str, str]:
        """The options as a new dict (key -> value text)."""
        return dict(self.options)

    @property
    def is_exec(self) -> bool:
        return self.kind == "exec"

    @property
    def command(self) -> str:
        """The program of an ``exec:`` driver (run out of process by ``vts.ipc.process``)."""
        if not self.is_exec:
            raise ValueError(f"{self.spec!r} is not an exec: driver")
        return self.spec[len("exec:"):]

    @property
    def target(self) -> str:
        """``module:attr`` of the Python driver."""
        if self.is_exec:
            raise DriverNotFound(f"{self.spec!r} is a program speaking the nnvts protocol: it runs in its own "
                                 "process, not as a Python object (see docs/protocol.md)")
        if self.kind == "module":
            return self.spec
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if entry.name == self.spec:
                problem = _missing_extra(entry)
                if problem:
                    raise DriverUnavailable(problem)
                return _target(entry)
        if self.spec in BUILTIN:
            return BUILTIN[self.spec]
        known = ", ".join(sorted(available_drivers())) or "none"
        raise DriverNotFound(f"driver {self.spec!r} not found (installed: {known}; or give module:attr)")

    def factory(self) -> object:
        """The Python object the reference names (a ``Device``, a ``Device`` class or a factory), not called."""
        return resolve_target(self.target)

    def load(self) -> Device:
        """The device, its factory called with the options (converted to its parameters' types)."""
        return load_device(self.target, self.options, str(self))


def resolve_target(target: str) -> object:
    """The object ``module:attr`` names (``DriverNotFound`` if the module or attribute is missing)."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise DriverNotFound(f"cannot import driver module {module_name!r}: {error}") from None
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise DriverNotFound(f"driver module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def load_device(target: str, options: Iterable[tuple[str, str]] = (), driver: str | None = None) -> Device:
    """The device ``module:attr`` names, its factory called with ``options`` as keyword arguments."""
    obj = resolve_target(target)
    arguments = factory_arguments(driver or target, obj, options)
    if isinstance(obj, Device):
        return obj
    if callable(obj):
        try:
            device = obj(**arguments)
        except ImportError as error:  # a driver over an optional engine says what to install
            raise DriverUnavailable(f"{target}: {error}") from None
        except ValueError as error:
            if not arguments:
                raise
            # A factory refusing an option's value (``hal=9``) says why: a usage error, not a traceback.
            raise DriverOptionError(f"{target}: {error}") from None
        if isinstance(device, Device):
            return device
        raise DriverNotFound(f"{target} returned {type(device).__name__}, not a nnvts Device")
    raise DriverNotFound(f"{target} is neither a Device nor a factory of one")


def available_drivers() -> dict[str, str]:
    """Installed driver names -> ``module:attr`` (entry points, then built-ins)."""
    found = dict(BUILTIN)
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found[entry.name] = _target(entry)
    return dict(sorted(found.items()))


def unavailable_drivers() -> dict[str, str]:
    """Installed driver names whose package extra is missing -> what to install."""
    found = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        problem = _missing_extra(entry)
        if problem:
            found[entry.name] = problem
    return found
