"""Loading spec files: read, parse, validate, check, expand.

``load_file`` is the one door through which a spec reaches the rest of
nnvts: what comes out is schema-valid, semantically checked and expanded to
the concrete layer (docs/spec-format.md), so consumers never see authoring-layer
keys.  Anything wrong raises ``SpecError`` naming the file, line, JSON
pointer and what was expected.  ``load_paths`` is lazy so a corpus of
thousands of models is never held in memory at once.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vts.spec.errors import Problem, ProblemsFound, SpecError
from vts.spec.reading import check_regular
from vts.spec.source import SPEC_SUFFIXES, locate, locate_all, parse, read_text, spec_kind

_NOT_A_SPEC = f"not a spec file name: expected one of {', '.join(SPEC_SUFFIXES)}"


@dataclass(frozen=True, slots=True)
class SpecFile:
    """A loaded spec: its path and its concrete-layer document (authoring layer expanded)."""

    path: str
    document: dict[str, Any]

    @property
    def name(self) -> str:
        return self.document["name"]

    @property
    def models(self) -> list[dict[str, Any]]:
        return self.document["models"]

    @property
    def hal_version(self) -> str:
        return self.document["hal_version"]


#: Digests of the spec texts that passed every check in this process (or in the parent that started
#: it: ``trust_checked``).  A run reads its specs more than once (the check before anything runs, the
#: progress count, the run itself, each -j worker); checking the same bytes again found nothing new
#: and cost as much as parsing them.
_checked: set[bytes] = set()


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def checked_digests() -> frozenset[bytes]:
    """The digests of the spec texts checked so far (to hand to worker processes)."""
    return frozenset(_checked)


def trust_checked(digests: Iterable[bytes]) -> None:
    """Spec texts another process of this run has already checked: loading them only expands them."""
    _checked.update(digests)


def load_file(path: str, text: str | None = None) -> SpecFile:
    """Read, validate, check and expand one spec file (checks skipped for a text already checked);
    ``text``: the file's text, already read."""
    kind = spec_kind(path)
    if kind is None:
        raise SpecError(path, None, "", _NOT_A_SPEC)
    if text is None:
        text = read_text(path)
    document = parse(text, kind, path)
    digest = _digest(text)
    expanded = load_document(document, path, text, kind, checked=digest in _checked)
    _checked.add(digest)
    return SpecFile(path, expanded)


def load_document(document: dict[str, Any], path: str = "<document>", text: str | None = None,
                  kind: str = "json", *, checked: bool = False) -> dict[str, Any]:
    """Validate, check and expand an already parsed document; ``text`` (if given) locates lines.

    ``checked``: these very bytes already passed every check (``load_file``), so only expand.
    """
    from vts.spec.authoring import expand_document, has_variations
    from vts.spec.checks import document_problems
    from vts.spec.schema import schema_problems

    problems = [] if checked else schema_problems(document)
    if not problems and not checked:
        problems = document_problems(document)
    if problems:
        raise _located(problems, path, text, kind)
    try:
        expanded = expand_document(document)
    except ProblemsFound as found:
        raise _located(list(found.problems), path, text, kind) from None
    if has_variations(document) and not checked:
        # A safety net for the transforms: an expanded model must pass the checks its source did.
        problems = document_problems(expanded)
        if problems:
            raise _located([Problem(p.pointer, f"in the expanded document: {p.message}") for p in problems],
                           path, None, kind)
    return expanded


def _located(problems: list[Problem], path: str, text: str | None, kind: str) -> SpecError:
    pointers = [p.pointer for p in problems]
    lines = locate_all(text, kind, pointers) if text is not None else [None] * len(problems)
    errors = [SpecError(path, line, p.pointer, p.message) for p, line in zip(problems, lines, strict=True)]
    errors.sort(key=lambda e: e.line if e.line is not None else math.inf)  # file order; stable
    first = errors[0]
    return SpecError(first.path, first.line, first.pointer, first.message, errors[1:])


def is_spec_name(name: str) -> bool:
    """Whether a file name is one a directory of specs is read for (hidden files never are).

    Public because the pytest plugin collects spec files by the same rule.
    """
    return name.endswith(SPEC_SUFFIXES) and not name.startswith(".")


#: The old private name, for the committed pytest plugin until it imports ``is_spec_name`` (issue 39).
_is_spec_name = is_spec_name


def _unreadable_directory(error: OSError) -> None:
    """os.walk would skip a directory it cannot list, silently dropping its specs from the run."""
    raise SpecError(str(error.filename), None, "", f"cannot list the directory: {error.strerror or error}")


def iter_spec_paths(paths: Sequence[str]) -> list[str]:
    """Spec files named by ``paths``: files as given, directories expanded to every spec file below
    them in sorted path order (hidden files and directories skipped).  A file reached twice is
    listed once, where first reached."""
    out: list[str] = []
    seen: set[str] = set()
    for path in paths:
        if "\0" in path:
            raise SpecError(repr(path), None, "", "not a usable path: it contains a NUL byte")
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path, onerror=_unreadable_directory):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                found += [os.path.join(root, f) for f in files if is_spec_name(f)]
            files_here = sorted(found)
        elif os.path.lexists(path):
            if spec_kind(path) is None:
                raise SpecError(path, None, "", _NOT_A_SPEC)
            files_here = [path]
        else:
            raise SpecError(path, None, "", "no such file or directory")
        for file in files_here:
            check_regular(file)  # a FIFO named x.yaml would block every later read; stat only
            key = os.path.realpath(file)
            if key not in seen:
                seen.add(key)
                out.append(file)
    return out


@dataclass(frozen=True, slots=True)
class ModelOutline:
    """What the names pass reads of one model: its name, and its size as written (the operands plus the
    operations of its main graph), by which a ``-j`` run shares a heavy model's validation sweep between
    its workers (``vts.run.runner.WantedModels``)."""

    name: str
    size: int


#: ``keep(spec_name, models)``: whether a run needs a spec file, from each model's outline alone.
KeepSpec = Callable[[str, list[ModelOutline]], bool]


def load_paths(paths: Sequence[str], keep: KeepSpec | None = None) -> Iterator[SpecFile]:
    """Load the spec files named by ``paths`` one at a time (see ``iter_spec_paths``).

    Case names start with the spec name, so two files with the same spec name
    (``a/x.yaml`` and ``b/x.yaml``, or ``x.yaml`` and ``x.json.gz``) would give
    cases with equal names: the second is an error naming both files.

    With ``keep`` (a shard, a ``-j`` worker), a spec file it does not need is read for its names only:
    neither checked nor expanded nor yielded.  Checking it is the business of the run that needs it
    (a shard costs its share); a file whose names cannot be read that way is loaded, and so checked.
    """
    first_path: dict[str, str] = {}
    for path in iter_spec_paths(paths):
        text = None
        if keep is not None:
            name, text = _unneeded_spec_name(path, keep)
            if name is not None and first_path.setdefault(name, path) == path:
                continue
        spec = load_file(path, text)
        other = first_path.setdefault(spec.name, path)
        if other != path:
            raise duplicate_name_error(spec, other)
        yield spec


#: The names pass's outlines of the files it read, by path, each with the file's identity when read
#: (``_identity``).  A shard reads the names of every spec file twice, in the check before the run and
#: in the run, and most of them only for their names: reading, unzipping and parsing each again was
#: about 0.8 s of a 1/80 shard of the corpus.  A file whose identity changed is read again.  Bounded by
#: ``_OUTLINES_KEPT`` models in all; past that, files are simply read again.
_outlines: dict[str, tuple[tuple[int, int, int], str, list[ModelOutline]]] = {}
_OUTLINES_KEPT = 200_000
_outlines_held = 0


def _identity(path: str) -> tuple[int, int, int] | None:
    """(inode, size, modification time in ns) of ``path``, or None when it cannot be stat'ed."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def _unneeded_spec_name(path: str, keep: KeepSpec) -> tuple[str | None, str | None]:
    """(the spec name of a concrete-layer JSON spec ``keep`` does not need, else None; the text, if read).

    Plain ``json.loads`` (no duplicate-key or number checks: a file skipped here is not judged here),
    and only for a document whose names are where the concrete layer puts them.
    """
    if spec_kind(path) != "json":
        return None, None  # YAML is the authoring layer: its models' names may come from variations
    identity = _identity(path)
    known = _outlines.get(path)
    if known is not None and identity is not None and known[0] == identity:
        _, name, outlines = known
        return (None if keep(name, outlines) else name), None
    try:
        text = read_text(path)
    except SpecError:
        return None, None  # loading it says what is wrong
    named = _outline(text)
    if named is None:
        return None, text
    name, outlines = named
    _remember_outline(path, identity, name, outlines)
    return (None if keep(name, outlines) else name), text


def _outline(text: str) -> tuple[str, list[ModelOutline]] | None:
    """The spec name and model outlines of a concrete-layer JSON text; None for anything else."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("name"), str):
        return None
    models = document.get("models")
    if not isinstance(models, list) or not models:
        return None
    outlines = []
    for model in models:
        if not isinstance(model, dict) or "variations" in model or not isinstance(model.get("name", ""), str):
            return None
        outlines.append(ModelOutline(model.get("name", ""), _written_size(model.get("main"))))
    return document["name"], outlines


def _remember_outline(path: str, identity: tuple[int, int, int] | None, name: str,
                      outlines: list[ModelOutline]) -> None:
    """Keep ``path``'s outline, replacing the one read before it changed (dropped even when this one is not
    kept: it would never match again)."""
    global _outlines_held
    previous = _outlines.pop(path, None)
    if previous is not None:
        _outlines_held -= len(previous[2])
    if identity is None or _outlines_held + len(outlines) > _OUTLINES_KEPT:
        return
    _outlines[path] = (identity, name, outlines)
    _outlines_held += len(outlines)


def _written_size(main: Any) -> int:
    """The operands plus the operations of a main graph as written (0 where they are not lists)."""
    if not isinstance(main, dict):
        return 0
    return sum(len(part) for part in (main.get("operands"), main.get("operations")) if isinstance(part, list))


def duplicate_name_error(spec: SpecFile, other_path: str) -> SpecError:
    """``spec`` has the same spec name as the file at ``other_path``."""
    try:
        line = locate(read_text(spec.path), spec_kind(spec.path) or "json", "/name")
    except SpecError:
        line = None
    return SpecError(spec.path, line, "/name", f"spec name {spec.name!r} is already the name of {other_path}: "
                     "case names start with the spec name, so spec names must be unique across the files of a run")
