"""The authoring layer: model variations, expanded into concrete-layer models.

A model may carry ``variations``: a list of groups, each a list of
variations.  Expansion replaces the model by one concrete model per element
of the groups' cross product (first group varying slowest, as Android's test
generator does with ``itertools.product``), named ``MODEL_VAR1_VAR2`` with
empty variation names left out.  A document without ``variations`` is
returned unchanged (the very same object), so the concrete layer passes
through untouched.  The format is specified for users in docs/spec-format.md.

Expansion is deterministic: it depends only on the document, applies the
variations of a combination in group order, and the transforms of one
variation in the fixed order of ``transforms.TRANSFORMS``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vts.spec.errors import Problem, ProblemsFound
from vts.spec.transforms import TRANSFORMS, Skip, Target, copy_json


@dataclass(frozen=True, slots=True)
class Variation:
    """One member of a variation group: a name for the case and the transforms it applies."""

    name: str
    transforms: tuple[tuple[str, Any, str], ...]  # (transform, parameters, pointer of the parameters)
    pointer: str

    def apply(self, target: Target) -> None:
        for key, params, pointer in self.transforms:
            TRANSFORMS[key](target, params, pointer)


def parse_variation(raw: Any, pointer: str) -> Variation:
    """A schema-valid variation (a shorthand string or a mapping) as a ``Variation``."""
    if isinstance(raw, str):
        if raw == "none":
            return Variation("", (), pointer)
        return Variation(raw, ((raw, True, pointer),), pointer)
    keys = [k for k in raw if k != "name"]
    order = list(TRANSFORMS)
    transforms = tuple(
        (k, raw[k], f"{pointer}/{k}") for k in sorted(keys, key=order.index)
    )
    return Variation(raw.get("name", "_".join(keys)), transforms, pointer)


def parse_groups(model: Mapping[str, Any], base: str) -> list[list[Variation]]:
    groups = []
    for g, group in enumerate(model["variations"]):
        groups.append([parse_variation(raw, f"{base}/variations/{g}/{v}") for v, raw in enumerate(group)])
    return groups


def has_variations(document: Mapping[str, Any]) -> bool:
    return any("variations" in model for model in document["models"])


def expand_document(document: dict[str, Any]) -> dict[str, Any]:
    """The concrete-layer document: every model with variations replaced by its expansion.

    Raises ``ProblemsFound`` for variations that cannot apply (an unknown
    operand, a variation that fits no combination, clashing model names).
    """
    if not has_variations(document):
        return document
    models: list[dict[str, Any]] = []
    origin: dict[str, str] = {}  # model name -> pointer it came from
    problems: list[Problem] = []
    for i, model in enumerate(document["models"]):
        base = f"/models/{i}"
        expanded = [(model, base + "/name")] if "variations" not in model else [
            (m, base + "/variations") for m in expand_model(model, document["hal_version"], base)
        ]
        for m, pointer in expanded:
            if m["name"] in origin:
                problems.append(Problem(pointer, f"model name {m['name']!r} is produced twice (also at "
                                        f"{origin[m['name']]}): rename a model or a variation"))
            else:
                origin[m["name"]] = pointer
            models.append(m)
    if problems:
        raise ProblemsFound(problems)
    return {**document, "models": models}


def expand_model(model: Mapping[str, Any], document_hal: str, base: str) -> list[dict[str, Any]]:
    """The concrete models of one model's variation cross product, in product order."""
    groups = parse_groups(model, base)
    applied: set[int] = set()
    skipped: dict[int, str] = {}
    out: list[dict[str, Any]] = []
    for combination in itertools.product(*groups):
        concrete = copy_json({k: v for k, v in model.items() if k != "variations"})
        target = Target(concrete, document_hal)
        try:
            for variation in combination:
                try:
                    variation.apply(target)
                except Skip as why:
                    skipped[id(variation)] = str(why)
                    raise
        except Skip:
            continue
        applied.update(id(v) for v in combination)
        concrete["name"] = "_".join([model["name"]] + [v.name for v in combination if v.name])
        out.append(concrete)
    never = [v for group in groups for v in group if id(v) in skipped and id(v) not in applied]
    if never:
        raise ProblemsFound([
            Problem(v.pointer, f"variation {v.name or 'none'!r} applies to no combination of model "
                    f"{model['name']!r}: {skipped[id(v)]}")
            for v in never
        ])
    return out
