"""A reference driver that plants symbolic links where its cache files were (the caching family's files).

After each save it finds the path of every cache descriptor it was handed (``/proc/self/fd``) and replaces
the file there with a link to ``victim`` (a file outside the cache directory, named by
``NNVTS_CACHE_VICTIM``), and plants a link for the names the harness may make next (``model0_mul``): a
harness that writes through a name (bit flips, appended bytes, copied-in caches, a fresh ``open``) writes
into the victim.  The harness must write only through the descriptors of the files it made.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from nnvts.drivers.reference import ReferenceDevice
from vts.hal import PreparedModel


class _PlantsLinks(ReferenceDevice):
    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim = victim

    def prepare_model(self, model: Any, preference: Any = 1, priority: Any = 1, deadline: int | None = None,
                      model_cache: Sequence[int] = (), data_cache: Sequence[int] = (),
                      token: bytes = bytes(32)) -> PreparedModel:
        prepared = super().prepare_model(model, preference, priority, deadline, model_cache, data_cache, token)
        for fd in (*model_cache, *data_cache):
            with contextlib.suppress(OSError):
                path = os.readlink(f"/proc/self/fd/{fd}")
                if not path.startswith("/") or path == os.devnull:
                    continue
                directory = os.path.dirname(path)
                if not os.path.basename(directory).startswith("nnvts-cache-"):
                    continue  # a descriptor the harness opened through an earlier link: the victim itself
                for name in {os.path.basename(path), "model0", "data0", "model0_mul", "data0_mul", "tmp"}:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, name))
                    with contextlib.suppress(OSError):
                        os.symlink(self.victim, os.path.join(directory, name))
        return prepared


def plants_cache_links() -> ReferenceDevice:
    return _PlantsLinks(os.environ.get("NNVTS_CACHE_VICTIM", "/nonexistent"))
