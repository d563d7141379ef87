"""``nnvts corpus import aosp``: every ``.mod.py`` of a frameworks/ml tree as a gzip'ed concrete spec.

Per version folder, the specs that changed since the last import (index.py)
run through the tree's own generator in a bounded child (sandbox.py); each
spec's cases become one concrete spec (convert.py), rendered canonically by
the spec writer, gzip-compressed and written atomically to
``DIR/FOLDER/SPEC.json.gz``.  Folders run in parallel worker processes
(``jobs``); a spec that fails is reported and the others are imported.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from vts.bounds import shown
from vts.spec.aosp.convert import BadCase, to_document
from vts.spec.aosp.index import (
    INDEX_NAME,
    Entry,
    file_hash,
    read_index,
    remove_output,
    spec_hash,
    write_atomically,
    write_index,
)
from vts.spec.aosp.layout import FRAMEWORKS_ML, LayoutError, Tree, open_tree
from vts.spec.aosp.sandbox import Limits, Outcome, run_specs
from vts.spec.errors import SpecError
from vts.spec.loader import load_document
from vts.spec.writer import render

OUTPUT_SUFFIX = ".json.gz"


@dataclass(frozen=True, slots=True)
class Failure:
    """A spec file that gave no spec, and why (one line)."""

    key: str  # FOLDER/FILE.mod.py
    reason: str


@dataclass(slots=True)
class ImportResult:
    """What an import did; ``failures`` non-empty makes the command exit 1."""

    imported: list[str] = field(default_factory=list)  # FOLDER/FILE.mod.py run through the generator this time
    written: list[str] = field(default_factory=list)  # ... whose spec file was (re)written: its content changed
    skipped: list[str] = field(default_factory=list)  # not run: input and output unchanged since the last import
    removed: list[str] = field(default_factory=list)  # outputs of specs gone from the tree
    failures: list[Failure] = field(default_factory=list)
    cases: dict[str, int] = field(default_factory=dict)  # version folder -> cases in DIR after the import


@dataclass(frozen=True, slots=True)
class _FolderJob:
    folder: str
    generator: Path
    specs: tuple[Path, ...]
    hashes: tuple[str, ...]
    out_dir: Path
    commit: str | None
    limits: Limits
    home: str = FRAMEWORKS_ML


def detail(folder: str, file: str, commit: str | None, home: str = FRAMEWORKS_ML) -> str:
    """The provenance in each spec's ``source.detail`` (``home``: which Android tree, ``Tree.home``)."""
    at = f" at commit {commit}" if commit else ""
    return (f"Android NNAPI CTS/VTS generated tests: {home}/runtime/test/specs/{folder}/{file}{at}, "
            "expanded by the test generator of that tree (nnvts corpus import aosp); "
            "Copyright The Android Open Source Project, Apache License 2.0")


def import_tree(src: Path, out_dir: Path, versions: list[str] | None = None, jobs: int = 1,
                limits: Limits | None = None, progress: Callable[[str], None] | None = None) -> ImportResult:
    """Import ``src`` (an ``nn/`` folder) into ``out_dir``; raises LayoutError for an unusable ``src``."""
    tree = open_tree(src, versions)
    out_dir = Path(os.path.realpath(out_dir))  # --out itself may be a link; nothing below it may
    _check_out_dir(out_dir)
    limits = limits or Limits()
    index = read_index(out_dir)
    result = ImportResult()
    todo = _plan(tree, out_dir, index, limits, result)
    new_index = dict(index)
    for key in result.removed:
        new_index.pop(key, None)
    folder_results = _run_jobs(todo, jobs, progress)
    for entries, failures in folder_results:
        for key, entry, changed in entries:
            new_index[key] = entry
            result.imported.append(key)
            if changed:
                result.written.append(key)
        for failure in failures:
            result.failures.append(failure)
            stale = new_index.pop(failure.key, None)
            if stale is not None and all(e.output != stale.output for e in new_index.values()):
                remove_output(out_dir / stale.output)  # no longer what the tree gives
    if new_index != index or not (out_dir / INDEX_NAME).exists():
        write_index(out_dir, new_index)
    for folder in tree.folders:
        result.cases[folder] = sum(e.cases for k, e in new_index.items() if k.split("/")[0] == folder)
    result.imported.sort()
    result.written.sort()
    result.skipped.sort()
    result.failures.sort(key=lambda f: f.key)
    return result


def _check_out_dir(out_dir: Path) -> None:
    """DIR is new, empty, or an earlier import's: never someone else's specs (a shared corpus) to overwrite."""
    if out_dir.exists() and not out_dir.is_dir():
        raise LayoutError(f"--out {out_dir}: not a folder")
    if out_dir.is_dir() and not (out_dir / INDEX_NAME).exists() and any(out_dir.iterdir()):
        raise LayoutError(f"--out {out_dir}: a folder that is not empty and holds no {INDEX_NAME}: "
                          "import into a new folder or one an earlier import wrote")
    if out_dir.is_dir():
        for entry in out_dir.iterdir():
            inside = [entry] if entry.is_symlink() or not entry.is_dir() else [entry, *entry.iterdir()]
            link = next((p for p in inside if p.is_symlink()), None)
            if link is not None:
                raise LayoutError(f"--out {shown(str(out_dir))}: {shown(str(link.relative_to(out_dir)))} is a "
                                  "symbolic link: the import writes and deletes only in real folders of its own")


def _plan(tree: Tree, out_dir: Path, index: dict[str, Entry], limits: Limits,
          result: ImportResult) -> list[_FolderJob]:
    """One job per folder with the specs whose input or output changed; stale outputs removed."""
    generator_digest = tree.generator_digest()
    todo = []
    for folder, specs in tree.folders.items():
        present = {f"{folder}/{s.name}" for s in specs}
        for key, entry in sorted(index.items()):
            if key.split("/")[0] == folder and key not in present:
                remove_output(out_dir / entry.output)
                result.removed.append(key)
        run, hashes = [], []
        for spec in specs:
            key = f"{folder}/{spec.name}"
            digest = spec_hash(spec, folder, generator_digest)
            entry = index.get(key)
            if entry is not None and entry.hash == digest and file_hash(out_dir / entry.output) == entry.output_hash:
                result.skipped.append(key)
                continue
            run.append(spec)
            hashes.append(digest)
        if run:
            todo.append(_FolderJob(folder, tree.generator, tuple(run), tuple(hashes), out_dir, tree.commit, limits,
                                    tree.home))
    return todo


_Done = tuple[list[tuple[str, Entry, bool]], list[Failure]]


def _run_jobs(todo: list[_FolderJob], jobs: int, progress: Callable[[str], None] | None) -> list[_Done]:
    # The biggest folder first, so that it does not start last on a busy worker.
    todo = sorted(todo, key=lambda j: -len(j.specs))
    if jobs <= 1 or len(todo) <= 1:
        done = []
        for job in todo:
            done.append(_import_folder(job))
            if progress:
                progress(job.folder)
        return done
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
        futures = [(job, pool.submit(_import_folder, job)) for job in todo]
        done = []
        for job, future in futures:
            done.append(future.result())
            if progress:
                progress(job.folder)
        return done


def _import_folder(job: _FolderJob) -> _Done:
    """Run the folder's specs in the generator and write one spec per ``.mod.py`` that succeeded.

    Each spec is converted and written as soon as the child hands it over,
    while the child goes on generating the next one.
    """
    hashes = {spec.name: digest for spec, digest in zip(job.specs, job.hashes, strict=True)}
    entries: list[tuple[str, Entry, bool]] = []
    failures: list[Failure] = []
    owners: dict[str, str] = {}

    def take(outcome: Outcome) -> None:
        key = f"{job.folder}/{outcome.file}"
        name = spec_name(outcome.file)
        problem = outcome.reason or _spec_problem(outcome, name, owners)
        if problem is not None:
            failures.append(Failure(key, problem))
            return
        owners[name] = outcome.file
        try:
            document = to_document(name, job.folder, outcome.cases, detail(job.folder, outcome.file, job.commit,
                                                                           job.home))
        except (BadCase, KeyError, TypeError, ValueError, IndexError) as error:
            failures.append(Failure(key, f"gave the importer malformed cases ({type(error).__name__})"))
            return
        try:
            load_document(document, key)
        except SpecError as error:
            failures.append(Failure(key, f"generated an invalid spec: {error}".splitlines()[0]))
            return
        data = gzip.compress(render(document).encode("utf-8"), compresslevel=6, mtime=0)
        output = f"{job.folder}/{name}{OUTPUT_SUFFIX}"
        path = job.out_dir / output
        changed = _read(path) != data
        if changed:
            write_atomically(path, data)
        entries.append((key, Entry(hashes[outcome.file], output, _sha256(data), len(outcome.cases)), changed))

    run_specs(job.generator, job.folder, list(job.specs), job.limits, take)
    return entries, failures


def spec_name(file: str) -> str:
    """The spec name Android's generator gives a file: its name up to the first dot."""
    return file.split(".", 1)[0]


def _spec_problem(outcome: Outcome, name: str, owners: dict[str, str]) -> str | None:
    if outcome.spec_name != name:
        return f"the generator named it {str(outcome.spec_name)[:80]!r}, not {name!r}"
    if not outcome.cases:
        return "generated no case"
    if name in owners:
        return f"spec name {name!r} is also that of {owners[name]}"
    return None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


__all__ = ["Failure", "ImportResult", "detail", "import_tree"]
