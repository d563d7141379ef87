"""The external NNAPI corpus (../shared/corpus) must load and validate unchanged."""

from __future__ import annotations

import os
import time

import pytest

from vts.spec.loader import iter_spec_paths, load_file, load_paths

CORPUS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpus"))

pytestmark = pytest.mark.skipif(not os.path.isdir(CORPUS), reason="external corpus not present")


def test_whole_corpus_loads_and_validates() -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    files = models = 0
    for spec in load_paths([CORPUS]):
        files += 1
        models += len(spec.models)
        assert "variations" not in spec.models[0]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"\ncorpus: {files} files, {models} models loaded and validated in {wall:.2f}s ({cpu:.2f}s CPU)")
    assert (files, models) == (505, 6140)


def test_corpus_paths_are_sorted_and_complete() -> None:
    paths = iter_spec_paths([CORPUS])
    assert len(paths) == 505
    assert paths == sorted(paths)
    assert all(p.endswith(".json.gz") for p in paths)


def test_concrete_documents_pass_through_expansion_untouched() -> None:
    import gzip
    import json

    path = os.path.join(CORPUS, "V1_2", "conv2d_v1_2.json.gz")
    with gzip.open(path, "rb") as f:
        raw = json.loads(f.read())
    assert load_file(path).document == raw


def test_render_round_trips_corpus_documents() -> None:
    import json

    from vts.spec.writer import render

    for path in iter_spec_paths([CORPUS])[::25]:
        document = load_file(path).document
        assert json.loads(render(document)) == document, path
