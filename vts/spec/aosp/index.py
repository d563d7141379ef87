"""The small index that makes a re-import incremental.

``DIR/.nnvts-import.json`` (hidden, so ``nnvts run --specs DIR`` never reads
it as a spec) maps each imported ``FOLDER/FILE.mod.py`` to the content hash
it was imported from -- the spec's bytes, the generator's sources and the
importer's own format version -- and to the output it produced.  A spec
whose hash and output are unchanged is not run again; anything else is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX_NAME = ".nnvts-import.json"

#: Bumped whenever the importer would write a different spec for the same input.
IMPORTER_VERSION = 2  # 2: AIDL_Vn folders are feature levels (FL5..FL8), no longer 1.3


@dataclass(frozen=True, slots=True)
class Entry:
    """What one spec file produced when it was last imported."""

    hash: str  # of the input: see spec_hash
    output: str  # path of the written spec, relative to DIR
    output_hash: str  # sha256 of the written file's bytes
    cases: int

    def as_json(self) -> dict[str, Any]:
        return {"hash": self.hash, "output": self.output, "output_hash": self.output_hash, "cases": self.cases}


def spec_hash(spec: Path, folder: str, generator_digest: str) -> str:
    """The input identity of one spec: its bytes, its folder, the generator and the importer."""
    digest = hashlib.sha256(f"nnvts-aosp-import {IMPORTER_VERSION}\0{generator_digest}\0{folder}\0".encode())
    digest.update(spec.read_bytes())
    return digest.hexdigest()


def file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


#: What the importer itself writes: FOLDER/FILE.mod.py -> FOLDER/SPEC.json.gz.  Anything else in an
#: index was not written by it, and is ignored rather than trusted (it names files the importer deletes).
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*/[^/\0]+\.mod\.py")
_OUTPUT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_]+\.json\.gz")


def read_index(out_dir: Path) -> dict[str, Entry]:
    """The index in ``out_dir``; empty when absent or unreadable (everything is then re-imported)."""
    try:
        data = json.loads((out_dir / INDEX_NAME).read_text(encoding="utf-8"))
        entries = {key: Entry(**value) for key, value in data["specs"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    return {key: entry for key, entry in entries.items()
            if isinstance(key, str) and _KEY.fullmatch(key) and isinstance(entry.output, str)
            and _OUTPUT.fullmatch(entry.output) and entry.output.split("/")[0] == key.split("/")[0]
            and isinstance(entry.cases, int)}


def write_index(out_dir: Path, entries: dict[str, Entry]) -> None:
    """Replace the index atomically (temp file, then os.replace)."""
    text = json.dumps({"format": 1, "importer": IMPORTER_VERSION,
                       "specs": {k: entries[k].as_json() for k in sorted(entries)}}, indent=1) + "\n"
    write_atomically(out_dir / INDEX_NAME, text.encode("utf-8"))


class LinkInOutput(OSError):
    """A folder or file of DIR that the import would write or delete is a symbolic link: refused (an earlier
    import's ``V1_0`` made a link to another folder would have the import delete and overwrite that folder's
    files)."""


def unlinked(path: Path) -> Path:
    """``path`` (DIR/FOLDER/FILE or DIR/FILE, DIR resolved) when neither it nor its folder is a symbolic link."""
    for part in (path.parent, path):
        if part.is_symlink():
            raise LinkInOutput(f"{part} is a symbolic link: the import writes and deletes only in real folders")
    return path


def remove_output(path: Path) -> None:
    """Delete an output the import wrote, never through a link."""
    unlinked(path).unlink(missing_ok=True)


def write_atomically(path: Path, data: bytes) -> None:
    """DIR never holds a half-written file: write a hidden temp file beside it, then rename (never through a
    link: ``unlinked``)."""
    unlinked(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    unlinked(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
