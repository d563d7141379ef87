"""The valid models the fuzzer starts from: spec models that pass HAL validation, with one request each.

Each ``SeedModel`` keeps the concrete-layer document of its model (so a
failing input can be saved as a spec that rebuilds exactly this model), the
HAL model with its constant pool, and a request built from the model's first
example.  Mutations work on copies; the pools are shared and never edited.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vts.hal.types import Model
from vts.hal.validation import ValidationError, validate_model, validate_request
from vts.model.casemodel import (
    BuiltRequest,
    CaseModel,
    ConstantPolicy,
    ModelFormatError,
    build_request,
    close_model,
    parse_model,
    to_hal_model,
)


@dataclass
class SeedModel:
    spec_path: str
    spec_hal_version: str
    document: dict[str, Any]  # the concrete-layer model, as loaded
    test_model: CaseModel
    model: Model
    built: BuiltRequest

    @property
    def label(self) -> str:
        return self.test_model.case_name()

    def close(self) -> None:
        self.built.close()
        close_model(self.model)


def build_seed(test_model: CaseModel, pool_kind: str = "ashmem") -> tuple[Model, BuiltRequest] | None:
    """(HAL model, request of example 0), or None when the model cannot serve as a valid seed."""
    if test_model.expect_failure or not test_model.examples:
        return None
    try:
        model = to_hal_model(test_model, ConstantPolicy(pool_kind=pool_kind))
    except (ModelFormatError, ValueError, KeyError):
        return None
    try:
        validate_model(model)
        built = build_request(test_model, test_model.examples[0], pool_kind)
    except (ValidationError, ModelFormatError, ValueError, KeyError):
        close_model(model)
        return None
    try:
        validate_request(built.request, model)
    except ValidationError:
        built.close()
        close_model(model)
        return None
    return model, built


def iter_seed_models(spec_paths: Sequence[str], pool_kind: str = "ashmem") -> Iterator[SeedModel]:
    from vts.spec.loader import load_paths

    for spec_file in load_paths(spec_paths):
        for doc in spec_file.models:
            try:
                test_model = parse_model(spec_file.name, doc, spec_file.hal_version)
            except (ModelFormatError, ValueError, KeyError):
                continue
            seed = build_seed(test_model, pool_kind)
            if seed is not None:
                yield SeedModel(spec_file.path, spec_file.hal_version, doc, test_model, *seed)


def load_seed_models(spec_paths: Sequence[str], limit: int, pool_kind: str = "ashmem",
                     keyword: Any = None) -> list[SeedModel]:
    """Up to ``limit`` seeds (``keyword``: a case-name predicate, as ``-k``)."""
    seeds: list[SeedModel] = []
    for seed in iter_seed_models(spec_paths, pool_kind):
        if keyword is not None and not keyword(seed.label):
            seed.close()
            continue
        seeds.append(seed)
        if len(seeds) >= limit:
            break
    return seeds
