"""What the harness knows about vendor extensions, and which clients may use them.

A spec names an extension type as ``EXTENSION_NAME:TYPE_NAME``; the HAL sees
a 32-bit number whose high 16 bits are a per-model prefix and whose low 16
bits are the type's id inside the extension (``Model.extensionNameToPrefix``,
``ExtensionTypeEncoding`` in NN HAL 1.2 types.hal).  Turning one into the other needs the extension's
definition -- the id of each operand and operation type, whether an operand
type is a tensor, how many bytes one element takes and how to read it --
which on Android lives in the vendor's header (``FibonacciExtension.h``).
``ExtensionRegistry`` is that knowledge for nnvts: the runner hands it to
every family as ``RunOptions.extensions`` and to the spec parser.

The registry also carries the runtime's **allowlist** (Android:
``/vendor/etc/nnapi_extensions_app_allowlist``): when one is configured and
the harness's client identity is not on it, looking up an extension's types
raises ``ExtensionNotAllowed`` -- the NNAPI runtime answers BAD_DATA to
``ANeuralNetworksModel_getExtensionOperandType`` in the same situation -- so
a case that would build an extension model is skipped before the driver sees
anything.  Parsing specs is not gated (it only decodes values); encoding a
model for the driver is.  See docs/extensions.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from vts.hal.types import Extension, OperandTypeInformation
from vts.model.casemodel import ModelFormatError


@dataclass(frozen=True, slots=True)
class OperandTypeDef:
    """One operand type of an extension (``OperandTypeInformation`` plus how nnvts reads it)."""

    name: str
    id: int
    is_tensor: bool
    byte_size: int
    dtype: str | None  # numpy dtype of one element; None: opaque bytes


@dataclass(frozen=True, slots=True)
class ExtensionDef:
    name: str
    operand_types: tuple[OperandTypeDef, ...] = ()
    operation_types: tuple[tuple[str, int], ...] = ()

    def operand(self, type_name: str) -> OperandTypeDef:
        for entry in self.operand_types:
            if entry.name == type_name:
                return entry
        raise KeyError(f"extension {self.name!r} has no operand type {type_name!r}")

    def operation(self, type_name: str) -> int:
        return dict(self.operation_types)[type_name]

    def to_hal(self) -> Extension:
        """What a driver supporting this extension answers in ``getSupportedExtensions``."""
        infos = tuple(OperandTypeInformation(t.id, t.is_tensor, t.byte_size) for t in self.operand_types)
        return Extension(self.name, infos)


#: Android's sample extension (frameworks/ml/nn/extensions/example/fibonacci): a scalar int64
#: and a tensor of uint64 whose scale and zero point travel as extension parameters
#: (``struct {double scale; int64_t zeroPoint;}``), and an operation computing the first n
#: Fibonacci numbers.
FIBONACCI = ExtensionDef(
    "com.example.fibonacci",
    (
        OperandTypeDef("EXAMPLE_INT64", 0, False, 8, "<i8"),
        OperandTypeDef("EXAMPLE_TENSOR_QUANT64_ASYMM", 1, True, 8, "<u8"),
    ),
    (("EXAMPLE_FIBONACCI", 0),),
)

BUILTIN_EXTENSIONS = (FIBONACCI,)


class ExtensionNotAllowed(ModelFormatError):
    """The client is not on the extension allowlist: the runtime refuses extension types.

    The runner reports the case as skipped (a configuration choice, not a driver fault).
    """


@dataclass(frozen=True, slots=True)
class ExtensionAllowlist:
    """Client identities allowed to use extensions (Android's nnapi_extensions_app_allowlist).

    One entry per line; ``#`` starts a comment.  An entry starting with
    ``/`` names a native binary by absolute path, any other entry a package
    name -- the harness's package name is ``nnvts``.
    """

    entries: frozenset[str]
    source: str = ""

    @classmethod
    def from_file(cls, path: str) -> ExtensionAllowlist:
        with open(path, encoding="utf-8") as handle:
            return cls.parse(handle.read().splitlines(), path)

    @classmethod
    def parse(cls, lines: Iterable[str], source: str = "") -> ExtensionAllowlist:
        entries = {line.split("#", 1)[0].strip() for line in lines}
        return cls(frozenset(e for e in entries if e), source)

    def allows(self, identities: Iterable[str]) -> bool:
        return any(identity in self.entries for identity in identities)


def harness_identities() -> tuple[str, ...]:
    """Who nnvts is, in the allowlist's two forms: package name and binary path."""
    return ("nnvts", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "nnvts")


TypeTables = tuple[Mapping[str, tuple[int, str | None]], Mapping[str, int]]


class ExtensionRegistry(Mapping[str, TypeTables]):
    """Extension name -> (operand types: name -> (id, dtype), operation types: name -> id).

    This mapping is the ``ExtensionTypes`` that ``vts.model.casemodel`` encodes
    models with.  With ``denied`` set, every lookup raises
    ``ExtensionNotAllowed`` (so encoding an extension model fails while
    models without extensions are untouched); ``for_parsing`` is the ungated
    view the spec parser uses to decode values.
    """

    def __init__(self, extensions: Iterable[ExtensionDef] = BUILTIN_EXTENSIONS, denied: str = "") -> None:
        self._defs = {e.name: e for e in extensions}
        self.denied = denied

    def definition(self, name: str) -> ExtensionDef | None:
        return self._defs.get(name)

    def definitions(self) -> tuple[ExtensionDef, ...]:
        return tuple(self._defs[name] for name in sorted(self._defs))

    def __getitem__(self, name: str) -> TypeTables:
        if self.denied:
            raise ExtensionNotAllowed(self.denied)
        ext = self._defs[name]
        operands = {t.name: (t.id, t.dtype) for t in ext.operand_types}
        return operands, dict(ext.operation_types)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._defs))

    def __len__(self) -> int:
        return len(self._defs)

    def for_parsing(self) -> ExtensionRegistry:
        return ExtensionRegistry(self._defs.values())

    def with_allowlist(self, allowlist: ExtensionAllowlist | None,
                       identities: Iterable[str] | None = None) -> ExtensionRegistry:
        """This registry gated by ``allowlist`` for the harness's (or the given) identities."""
        if allowlist is None:
            return self
        identities = tuple(identities or harness_identities())
        if allowlist.allows(identities):
            return ExtensionRegistry(self._defs.values())
        where = f" ({allowlist.source})" if allowlist.source else ""
        return ExtensionRegistry(self._defs.values(), denied=(
            f"client {identities[0]!r} is not on the extension allowlist{where}: the runtime refuses "
            "vendor extension types, as NNAPI does for apps missing from nnapi_extensions_app_allowlist"))


def default_registry(allowlist_path: str | None = None) -> ExtensionRegistry:
    """The built-in extensions, gated by the allowlist file if one is given."""
    registry = ExtensionRegistry()
    if allowlist_path:
        return registry.with_allowlist(ExtensionAllowlist.from_file(allowlist_path))
    return registry
