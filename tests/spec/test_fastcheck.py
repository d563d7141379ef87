"""The compiled fast check and jsonschema must give the same verdict on every document.

The loader trusts the fast check for the verdict and asks jsonschema only for
the details, so a disagreement would either let a bad file through or report
a good one with no detail.  Mutate a document that uses every part of the
schema in many deterministic ways and compare.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from tests.spec.helpers import base_document
from vts.spec.fastcheck import UnsupportedSchema, compile_schema
from vts.spec.schema import schema

REPLACEMENTS: list[Any] = [None, "x", -1, 2, 1.5, True, [], {}, [1, "a"], {"b64": "AA=="},
                           {"dims": [1], "value": [1]}, [0.5, 1], "SUBGRAPH"]


def rich_document() -> dict[str, Any]:
    doc = base_document()
    model = doc["models"][0]
    model.update({
        "hal_version": "1.2", "relaxed": False, "expect_failure": False, "tolerance": {"quant": 2},
        "multinomial_tolerance": 0.1, "extensions": ["com.example.ext"], "referenced": [],
    })
    operands = model["main"]["operands"]
    operands.append({"name": "w", "type": "TENSOR_QUANT8_SYMM_PER_CHANNEL", "dims": [2, 1], "lifetime":
                     "CONSTANT_REFERENCE", "channel_quant": {"dim": 0, "scales": [0.5, 0.25]},
                     "value": {"b64": "AQI="}, "extension_params": ""})
    operands.append({"name": "s", "type": "SUBGRAPH", "lifetime": "SUBGRAPH", "value": 0})
    model["examples"][0]["name"] = "first"
    model["examples"][0]["outputs"]["out"] = {"dims": [2], "value": [2, 4]}
    model["variations"] = [
        ["none", {"name": "nchw", "nchw": ["a"]}],
        ["float16", {"quant8": {"a": [0.5, 0], "b": {"type": "TENSOR_QUANT8_ASYMM", "scale": 0.5,
                                                      "zero_point": 1}}},
         {"quant8_signed": True}, {"all_tensors_as_inputs": True, "name": ""}],
    ]
    return doc


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from paths(value, (*prefix, i))


def mutations(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path in list(paths(doc)):
        if not path:
            continue
        *parent_path, last = path
        for replacement in [*REPLACEMENTS, "<delete>", "<extra key>"]:
            mutated = copy.deepcopy(doc)
            parent = mutated
            for part in parent_path:
                parent = parent[part]
            if replacement == "<delete>":
                del parent[last]
            elif replacement == "<extra key>":
                if not isinstance(parent[last], dict):
                    continue
                parent[last]["zzz"] = 1
            else:
                parent[last] = copy.deepcopy(replacement)
            yield mutated


def test_fast_check_agrees_with_jsonschema() -> None:
    fast = compile_schema(schema())
    slow = jsonschema.Draft202012Validator(schema())
    doc = rich_document()
    assert fast(doc) and slow.is_valid(doc)
    count = invalid = 0
    for mutated in mutations(doc):
        count += 1
        verdict = slow.is_valid(mutated)
        invalid += not verdict
        assert fast(mutated) == verdict, mutated
    assert count > 1000 and invalid > count // 2


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())


def test_unknown_keywords_are_refused() -> None:
    with pytest.raises(UnsupportedSchema):
        compile_schema({"type": "object", "dependentRequired": {"a": ["b"]}})
