"""Case selection: ``-k`` expressions, expected-failure lists and shards share one matcher.

A term is a substring of the case name, or a glob when it holds ``*``, ``?``
or ``[``; terms combine with ``and``, ``or``, ``not`` and parentheses (the
pytest ``-k`` grammar without keywords), and match case-insensitively, as
pytest's do (``-k quant8`` selects ``channelQuant8`` cases too).  Every
matcher remembers which of its terms matched something, so the CLI can warn
about patterns that matched nothing instead of silently running zero cases;
a ``-k`` term counts as matching when it matches a name on its own, whatever
the expression around it decided (``quant8 and not channelQuant8`` never
asks its second term about a name the first one refused).
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from vts.run.globset import GlobSet
from vts.run.option_checks import OptionValueError, read_input_file

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class SelectionError(ValueError):
    """A malformed ``-k`` expression or shard (a usage error: exit status 2)."""


@dataclass
class Term:
    """One ``-k`` term, asked about case names already folded to lower case."""

    text: str
    hits: int = 0
    #: Whether ``text`` is a glob, decided once: a term is asked about every case name of a run (908,867
    #: for the corpus), and looking for the glob characters each time was a third of its cost.
    glob: bool = field(init=False)
    folded: str = field(init=False)

    def __post_init__(self) -> None:
        self.glob = any(c in self.text for c in "*?[")
        self.folded = self.text.lower()

    def __call__(self, folded_name: str) -> bool:
        hit = fnmatch.fnmatchcase(folded_name, self.folded) if self.glob else self.folded in folded_name
        self.hits += hit
        return hit


@dataclass
class Expression:
    """A parsed ``-k`` expression."""

    source: str
    predicate: Callable[[str], bool]
    terms: list[Term] = field(default_factory=list)
    #: Terms that have matched no name on their own yet (asked about each name until they do).
    pending: list[Term] = field(init=False)

    def __post_init__(self) -> None:
        self.pending = list(self.terms)

    def __call__(self, name: str) -> bool:
        folded = name.lower()
        selected = self.predicate(folded)
        if self.pending:
            self.pending = [t for t in self.pending if not t.hits and not t(folded)]
        return selected

    def unmatched(self) -> list[str]:
        return [t.text for t in self.terms if t.hits == 0]


#: Parentheses and `not`s one -k expression may nest (each level is a Python call when matching).
MAX_NESTING = 64


def parse_expression(source: str) -> Expression:
    tokens = _TOKEN.findall(source)
    terms: list[Term] = []
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise SelectionError(f"-k {source!r}: unexpected end of expression")
        pos += 1
        return tokens[pos - 1]

    # and/or chains are evaluated flat (any/all over their operands), so only parentheses and `not`
    # nest; both are bounded, so a hostile -k is a usage error, never a RecursionError.
    depth = 0

    def nested() -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_NESTING:
            raise SelectionError(f"-k {source[:40]!r}...: nested more than {MAX_NESTING} levels deep")

    def parse_or() -> Callable[[str], bool]:
        parts = [parse_and()]
        while peek() == "or":
            take()
            parts.append(parse_and())
        return parts[0] if len(parts) == 1 else (lambda ps: lambda n: any(p(n) for p in ps))(tuple(parts))

    def parse_and() -> Callable[[str], bool]:
        parts = [parse_not()]
        while peek() == "and":
            take()
            parts.append(parse_not())
        return parts[0] if len(parts) == 1 else (lambda ps: lambda n: all(p(n) for p in ps))(tuple(parts))

    def parse_not() -> Callable[[str], bool]:
        nonlocal depth
        if peek() == "not":
            take()
            nested()
            inner = parse_not()
            depth -= 1
            return lambda n: not inner(n)
        return parse_atom()

    def parse_atom() -> Callable[[str], bool]:
        nonlocal depth
        token = take()
        if token == "(":
            nested()
            inner = parse_or()
            if take() != ")":
                raise SelectionError(f"-k {source!r}: missing ')'")
            depth -= 1
            return inner
        if token in (")", "and", "or"):
            raise SelectionError(f"-k {source!r}: unexpected {token!r}")
        term = Term(token)
        terms.append(term)
        return term

    if not tokens:
        raise SelectionError("-k: empty expression")
    try:
        predicate = parse_or()
    except RecursionError:
        raise SelectionError(f"-k {source[:40]!r}...: the expression is nested too deeply") from None
    if pos != len(tokens):
        raise SelectionError(f"-k {source!r}: unexpected {tokens[pos]!r}")
    return Expression(source, predicate, terms)


@dataclass(frozen=True)
class Shard:
    """``--shard I/N``: a stable partition of cases by a hash of their unit.

    A unit is every case of one model (``SPEC.MODEL``, see ``unit_key``): a shard takes or leaves it
    whole, decided before a family names a single case, so a shard enumerates and builds only its own
    share (a model's validation sweep alone is about 150 names), and checks and parses only the spec files
    and models its units need.
    Device-level cases, which have no model, are their own units (the case name).
    """

    index: int
    count: int

    #: More shards than this is a typo, not a CI matrix (and N beyond 2**32 would select nothing).
    MAX_COUNT = 65536

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"([0-9]{1,9})/([0-9]{1,9})", text.strip())
        if match is None:
            raise SelectionError(f"--shard {text!r}: expected I/N, e.g. 1/4")
        index, count = int(match[1]), int(match[2])
        if not 1 <= index <= count:
            raise SelectionError(f"--shard {text!r}: I must be between 1 and N")
        if count > cls.MAX_COUNT:
            raise SelectionError(f"--shard {text!r}: N may be at most {cls.MAX_COUNT}")
        return cls(index, count)

    def __call__(self, key: str) -> bool:
        return zlib.crc32(key.encode()) % self.count == self.index - 1

    def unit(self, key: str) -> bool:
        return self(key)


def worker_slot(key: str, jobs: int) -> int:
    """The ``-j`` worker slot of a unit (or of a device-level case's name).

    A different hash from ``--shard``'s CRC-32, so that sharding and parallelism combine instead of sending
    a whole shard to one worker.
    """
    return int.from_bytes(hashlib.blake2s(key.encode(), digest_size=4).digest(), "little") % jobs


@dataclass(frozen=True)
class WorkerSlot:
    """One ``-j`` worker's share of the cases: the units that hash to its slot.

    Like a shard, it decides a whole unit before the family names a case, so a worker never names, let
    alone builds, the cases of another worker's units.
    """

    slot: int
    jobs: int

    def __call__(self, key: str) -> bool:
        return worker_slot(key, self.jobs) == self.slot

    def unit(self, key: str) -> bool:
        return self(key)


def unit_key(name: str) -> str:
    """The unit a shard decides at once: every case of one model (``SPEC.MODEL``).

    The unit is the model, not one family's cases of it: a shard then needs a model for all its
    families or for none, so it checks its share of the spec files and parses its share of the models
    (by family, nearly every model had a unit in a 1/8 shard).
    """
    return name


def decide_unit(predicate: Callable[[str], bool], key: str) -> bool | Callable[[str], bool]:
    """How a case filter decides a unit before any of its cases is named.

    ``False``: none of its cases; ``True``: all of them, as far as this filter goes; otherwise the name
    predicate still to apply to each case (a filter without a ``unit`` method decides names only).
    """
    unit = getattr(predicate, "unit", None)
    return predicate if unit is None else unit(key)


def glob_escape(name: str) -> str:
    """A glob that matches exactly ``name`` (``*``, ``?`` and ``[`` wrapped in brackets)."""
    return re.sub(r"([*?\[])", r"[\1]", name)


@dataclass
class Glob:
    """A whole-name glob; a pattern without wildcards matches one name exactly.

    Expected failures match whole names, unlike ``-k`` terms: an entry
    ``add.relu`` must not also expect ``add.relu_quant8`` to fail.
    """

    text: str
    line: int | None = None
    hits: int = 0

    def __call__(self, name: str) -> bool:
        hit = fnmatch.fnmatchcase(name, self.text)
        self.hits += hit
        return hit


class ExpectationList:
    """Expected failures: one case-name glob per line (``#`` comments), compiled once.

    Every case of a run asks ``expects_failure``; the entries are one ``GlobSet`` (exact names in a
    dict, globs in one expression per literal start), so a case costs the same with 40 entries or
    40,000 (``vts/run/globset.py``; bench/expectations_cost.py).
    """

    def __init__(self, patterns: Iterable[str | Glob], path: str = "<list>") -> None:
        self.terms = [p if isinstance(p, Glob) else Glob(p) for p in patterns]
        self.path = path
        self.matcher = GlobSet(t.text for t in self.terms)
        #: The names asked about that some entry matched (for ``unmatched``).
        self._matched: set[str] = set()

    @classmethod
    def from_file(cls, path: str) -> ExpectationList:
        """The list in file ``path``, read without ever blocking (``read_input_file``: a FIFO put in its place
        after the option was checked is refused, not waited on); OSError or UnicodeDecodeError if unreadable."""
        try:
            data = read_input_file(path)
        except OptionValueError as error:
            raise OSError(errno.EINVAL, str(error), path) from None
        lines = data.decode("utf-8").splitlines()
        entries = [(number, line.split("#", 1)[0].strip()) for number, line in enumerate(lines, start=1)]
        return cls([Glob(text, number) for number, text in entries if text], path)

    def expects_failure(self, name: str) -> bool:
        hit = self.matcher(name)
        if hit:
            self._matched.add(name)
        return hit

    def unmatched(self) -> list[str]:
        """The entries that matched none of the names asked about so far."""
        return [t.text for t in self.unmatched_among(self._matched)]

    def unmatched_among(self, names: Iterable[str]) -> list[Glob]:
        """Entries that match none of ``names``, in the list's order: one pass over the names."""
        return [self.terms[i] for i in self.matcher.unmatched_among(names)]


@dataclass(frozen=True)
class NameFilter:
    """A fixed set of case names, used where a shard predicate goes (picklable, for ``-j`` workers).

    Built once from the whole selection: a shard balanced by durations, the
    failures of ``--last-failed``, or both.
    """

    names: frozenset[str]
    label: str = ""

    def __call__(self, name: str) -> bool:
        return name in self.names
