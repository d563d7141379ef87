"""Case selection: ``-k`` expressions, expected-failure lists and shards share one matcher.

A term is a substring of the case name, or a glob when it holds ``*``, ``?``
or ``[``; terms combine with ``and``, ``or``, ``not`` and parentheses (the
pytest ``-k`` grammar without keywords).  Every matcher remembers which of
its terms matched something, so the CLI can warn about patterns that
matched nothing instead of silently running zero cases.
"""

from __future__ import annotations

import fnmatch
import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class SelectionError(ValueError):
    """A malformed ``-k`` expression or shard (a usage error: exit status 2)."""


@dataclass
class Term:
    text: str
    hits: int = 0

    def __call__(self, name: str) -> bool:
        hit = fnmatch.fnmatchcase(name, self.text) if any(c in self.text for c in "*?[") else self.text in name
        self.hits += hit
        return hit


@dataclass
class Expression:
    """A parsed ``-k`` expression."""

    source: str
    predicate: Callable[[str], bool]
    terms: list[Term] = field(default_factory=list)

    def __call__(self, name: str) -> bool:
        return self.predicate(name)

    def unmatched(self) -> list[str]:
        return [t.text for t in self.terms if t.hits == 0]


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

    def parse_or() -> Callable[[str], bool]:
        left = parse_and()
        while peek() == "or":
            take()
            right = parse_and()
            left = (lambda a, b: lambda n: a(n) or b(n))(left, right)
        return left

    def parse_and() -> Callable[[str], bool]:
        left = parse_not()
        while peek() == "and":
            take()
            right = parse_not()
            left = (lambda a, b: lambda n: a(n) and b(n))(left, right)
        return left

    def parse_not() -> Callable[[str], bool]:
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda n: not inner(n)
        return parse_atom()

    def parse_atom() -> Callable[[str], bool]:
        token = take()
        if token == "(":
            inner = parse_or()
            if take() != ")":
                raise SelectionError(f"-k {source!r}: missing ')'")
            return inner
        if token in (")", "and", "or"):
            raise SelectionError(f"-k {source!r}: unexpected {token!r}")
        term = Term(token)
        terms.append(term)
        return term

    if not tokens:
        raise SelectionError("-k: empty expression")
    predicate = parse_or()
    if pos != len(tokens):
        raise SelectionError(f"-k {source!r}: unexpected {tokens[pos]!r}")
    return Expression(source, predicate, terms)


@dataclass(frozen=True)
class Shard:
    """``--shard I/N``: a stable partition of cases by a hash of their names."""

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

    def __call__(self, name: str) -> bool:
        return zlib.crc32(name.encode()) % self.count == self.index - 1


class ExpectationList:
    """Expected failures: one case-name glob per line (``#`` comments)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.terms = [Term(p) for p in patterns]

    @classmethod
    def from_file(cls, path: str) -> ExpectationList:
        with open(path, encoding="utf-8") as handle:
            lines = [line.split("#", 1)[0].strip() for line in handle]
        return cls([line for line in lines if line])

    def expects_failure(self, name: str) -> bool:
        return any(term(name) for term in self.terms)

    def unmatched(self) -> list[str]:
        return [t.text for t in self.terms if t.hits == 0]
