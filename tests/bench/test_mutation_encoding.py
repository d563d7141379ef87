"""bench.mutation_encoding compares two ways of making the same bytes: they must be the same bytes."""

from __future__ import annotations

import glob

from bench.mutation_encoding import run_copied, run_shared
from vts.families.validation.family import BUILTIN_REGISTRY
from vts.families.validation.mutations import enumerate_mutations
from vts.model.casemodel import close_model, parse_spec, to_hal_model
from vts.spec.loader import load_file


def test_copied_and_shared_mutations_encode_alike() -> None:
    models = [to_hal_model(m, None, BUILTIN_REGISTRY)
              for path in sorted(glob.glob("generated_tests/*.json"))[:12]
              for m in parse_spec(load_file(path).document)]
    try:
        work = [(model, list(enumerate_mutations(model))) for model in models]
        encoded = run_shared(work)
        assert len(encoded) > 500
        assert run_copied(work) == encoded
    finally:
        for model in models:
            close_model(model)
