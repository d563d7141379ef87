"""A driver that replaces its cache files with links to a file outside cannot make the harness write it."""

from __future__ import annotations

import os

import pytest

from tests.fakes.cache_links import _PlantsLinks
from vts.families.base import RunOptions
from vts.families.caching import family as caching
from vts.families.caching.cache_files import CacheDir
from vts.families.registry import families
from vts.model.extensions import default_registry
from vts.results import Verdict
from vts.run.runner import Runner

#: The cases that write into cache files after the driver saw them: bit flips, appended bytes, copies,
#: and fresh descriptors opened for a retrieval.
WRITING = ("caching/mobilenet_float32.corrupted_model_cache.seed0",
           "caching/mobilenet_float32.wrong_length_data_cache.seed0",
           "caching/chain_float32.replace_security_sensitive_cache",
           "caching/chain_float32.prepare_from_cache_toctou")

VICTIM_TEXT = b"the harness must never write here\n"


def test_links_planted_by_the_driver_are_never_written_through(tmp_path, monkeypatch):
    monkeypatch.setattr(caching, "TOCTOU_ITERATIONS", 2)
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM_TEXT)
    family = families()["caching"]()
    runner = Runner(_PlantsLinks(str(victim)), RunOptions(case_timeout=300, extensions=default_registry()))
    results = {case.name: runner.run_case(family, case) for case in family.device_cases() if case.name in WRITING}
    assert set(results) == set(WRITING)
    assert victim.read_bytes() == VICTIM_TEXT, {n: (r.verdict.name, r.reason) for n, r in results.items()}
    assert victim.stat().st_nlink == 1
    # The harness went on with its own files: the reference's checks still pass where nothing was planted first.
    assert results["caching/mobilenet_float32.corrupted_model_cache.seed0"].verdict is Verdict.PASSED


def test_a_name_the_driver_made_first_is_refused(tmp_path):
    from vts.families.caching.cache_files import CacheTampered

    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM_TEXT)
    with CacheDir(1, 1) as files:
        os.symlink(victim, os.path.join(files.root, "model0_mul"))
        with pytest.raises(CacheTampered, match="model0_mul"):
            files.handles("_mul")
        os.unlink(os.path.join(files.root, "model0"))
        os.symlink(victim, os.path.join(files.root, "model0"))
        fd = files.open("model0")  # the harness's file, not the link's
        os.write(fd, b"cache")
        files.close_fds()
    assert victim.read_bytes() == VICTIM_TEXT
