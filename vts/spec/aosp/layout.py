"""Finding the generator and the version folders in the ``nn/`` folder of a frameworks/ml tree, or in a
``packages/modules/NeuralNetworks`` tree (where it moved in Android 12: the same layout, with ``AIDL_Vn`` folders).

Only the layout is assumed (``tools/test_generator/test_generator.py`` and
``runtime/test/specs/<FOLDER>/*.mod.py``), never the folder names: a version
folder Android adds later (``V1_3``, ``V1_3_cts_only``) is found like the
others.  A tree that does not look like this is an input error, said in one
line.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

GENERATOR = Path("tools/test_generator")
SPECS = Path("runtime/test/specs")
SPEC_SUFFIX = ".mod.py"
#: How provenance names each kind of tree (``Tree.home``).
FRAMEWORKS_ML = "frameworks/ml nn"
PACKAGES_MODULES = "packages/modules/NeuralNetworks"


class LayoutError(Exception):
    """SRC is neither the ``nn/`` folder of a frameworks/ml tree nor a packages/modules/NeuralNetworks tree (one
    line, exit status 2)."""


@dataclass(frozen=True, slots=True)
class Tree:
    """An ``nn/`` folder: its generator, its version folders, and where it came from."""

    root: Path
    folders: dict[str, list[Path]]  # version folder name -> its .mod.py files, sorted
    commit: str | None
    #: ``PACKAGES_MODULES`` where the tree has AIDL version folders (only Android 12's tree has), else
    #: ``FRAMEWORKS_ML``.
    home: str = FRAMEWORKS_ML

    @property
    def generator(self) -> Path:
        return self.root / GENERATOR

    def generator_digest(self) -> str:
        """A hash of the generator's sources: a change to them re-imports every spec."""
        digest = hashlib.sha256()
        for source in sorted(self.generator.glob("*.py")):
            digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
        return digest.hexdigest()


def open_tree(src: Path, versions: list[str] | None) -> Tree:
    """The tree at ``src``, limited to ``versions`` (all version folders when None)."""
    if not src.is_dir():
        raise LayoutError(f"{src}: not a folder")
    if not (src / GENERATOR / "test_generator.py").is_file():
        raise LayoutError(f"{src}: no {GENERATOR / 'test_generator.py'}: expected the nn/ folder of a "
                          "frameworks/ml checkout or a packages/modules/NeuralNetworks checkout")
    specs = src / SPECS
    if not specs.is_dir():
        raise LayoutError(f"{src}: no {SPECS}/ folder of version folders")
    found = {d.name: sorted(d.glob("*" + SPEC_SUFFIX)) for d in sorted(specs.iterdir())
             if d.is_dir() and not d.name.startswith(".")}
    found = {name: files for name, files in found.items() if files}
    home = PACKAGES_MODULES if any(name.startswith("AIDL_") for name in found) else FRAMEWORKS_ML
    if not found:
        raise LayoutError(f"{src / SPECS}: no version folder holds a {SPEC_SUFFIX} spec")
    if versions is not None:
        unknown = [v for v in versions if v not in found]
        if unknown:
            raise LayoutError(f"{src / SPECS}: no version folder {', '.join(unknown)} with specs "
                              f"(found {', '.join(found)})")
        found = {v: found[v] for v in versions}
    return Tree(src, found, _git_commit(src), home)


def _git_commit(src: Path) -> str | None:
    """``git -C SRC rev-parse HEAD`` where SRC's generator is tracked by a git work tree; None otherwise.

    The generator must be tracked there, or the commit would be that of some
    enclosing repository that does not hold the tree; uncommitted changes
    under SRC are said, since the commit alone would not reproduce them.
    """
    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, timeout=60,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None

    tracked = git("ls-files", "--error-unmatch", str(GENERATOR / "test_generator.py"))
    head = git("rev-parse", "HEAD")
    if tracked is None or tracked.returncode != 0 or head is None or head.returncode != 0:
        return None
    commit = head.stdout.strip()
    if len(commit) not in (40, 64):
        return None
    status = git("status", "--porcelain", "--", ".")
    dirty = status is None or status.returncode != 0 or bool(status.stdout.strip())
    return commit + (" (with uncommitted changes)" if dirty else "")
