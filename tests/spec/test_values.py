"""Value forms: lists, bare scalars and b64 load to identical arrays; checks follow the stored type."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.spec.helpers import write
from vts.spec.errors import SpecError
from vts.spec.loader import load_document, load_file
from vts.spec.values import TYPES, check_value, to_array

# type, list form, the same data as numpy (stored dtype)
SAMPLES: list[tuple[str, list[Any]]] = [
    ("TENSOR_FLOAT32", [0.5, -1.25, 3.0, 1e-3]),
    ("TENSOR_FLOAT16", [0.5, -1.25, 3.0, 0.0999755859375]),
    ("TENSOR_INT32", [-2147483648, 0, 7, 2147483647]),
    ("TENSOR_QUANT8_ASYMM", [0, 1, 128, 255]),
    ("TENSOR_QUANT8_ASYMM_SIGNED", [-128, -1, 0, 127]),
    ("TENSOR_QUANT16_SYMM", [-32768, -1, 0, 32767]),
    ("TENSOR_QUANT16_ASYMM", [0, 1, 40000, 65535]),
    ("TENSOR_BOOL8", [True, False, 1, 0]),
]


def b64_of(type_name: str, values: list[Any]) -> str:
    return base64.b64encode(np.asarray(values, dtype=TYPES[type_name].dtype).tobytes()).decode()


def io_document(type_name: str, value: Any, constant: Any) -> dict[str, Any]:
    quant = {"scale": 0.5} if "QUANT" in type_name else {}
    return {
        "nnvts": 1, "name": "t", "hal_version": "1.3", "source": {"kind": "hand", "detail": "test"},
        "models": [{
            "name": "m",
            "main": {
                "operands": [
                    {"name": "x", "type": type_name, "dims": [2, 2], **quant, "lifetime": "SUBGRAPH_INPUT"},
                    {"name": "c", "type": type_name, "dims": [4], **quant, "lifetime": "CONSTANT_REFERENCE",
                     "value": constant},
                    {"name": "y", "type": type_name, "dims": [0, 0], **quant, "lifetime": "SUBGRAPH_OUTPUT"},
                ],
                "operations": [{"type": "SELECT", "inputs": ["x", "c"], "outputs": ["y"]}],
                "inputs": ["x"], "outputs": ["y"],
            },
            "examples": [{"inputs": {"x": value}, "outputs": {"y": {"dims": [2, 2], "b64": b64_of(
                type_name, [1] * 4) if "BOOL" not in type_name else b64_of(type_name, [True] * 4)}}}],
        }],
    }


@pytest.mark.parametrize(("type_name", "values"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_b64_and_list_forms_load_to_identical_arrays(type_name: str, values: list[Any]) -> None:
    as_list = load_document(io_document(type_name, values, values))
    encoded = {"b64": b64_of(type_name, values)}
    as_b64 = load_document(io_document(type_name, encoded, encoded))
    operand = as_list["models"][0]["main"]["operands"][1]
    from_list = to_array(operand["value"], type_name, operand["dims"])
    from_b64 = to_array(as_b64["models"][0]["main"]["operands"][1]["value"], type_name, [4])
    assert from_list.dtype == from_b64.dtype == np.dtype(TYPES[type_name].dtype)
    assert from_list.tobytes() == from_b64.tobytes()
    example_list = to_array(as_list["models"][0]["examples"][0]["inputs"]["x"], type_name, [2, 2])
    example_b64 = to_array(as_b64["models"][0]["examples"][0]["inputs"]["x"], type_name, [2, 2])
    assert example_list.shape == (2, 2) and np.array_equal(example_list, example_b64)
    long_form = as_list["models"][0]["examples"][0]["outputs"]["y"]
    assert to_array(long_form, type_name).shape == (2, 2)


def test_bare_scalar_equals_one_element_list() -> None:
    assert to_array(3, "INT32").tolist() == to_array([3], "INT32").tolist() == [3]


@pytest.mark.parametrize(("type_name", "value", "words"), [
    ("TENSOR_QUANT8_ASYMM", [0, -1], "out of range"),
    ("TENSOR_QUANT8_ASYMM_SIGNED", [128], "out of range"),
    ("TENSOR_QUANT16_ASYMM", [65536], "out of range"),
    ("UINT32", [-1], "out of range"),
    ("TENSOR_INT32", [2**31], "out of range"),
    ("TENSOR_INT32", [1.5], "expected an integer"),
    ("TENSOR_BOOL8", [2], "expected true/false"),
    ("TENSOR_BOOL8", [0.5], "expected true/false"),
    ("TENSOR_FLOAT32", [1e39], "overflows TENSOR_FLOAT32"),
    ("TENSOR_FLOAT16", [65520.0], "overflows TENSOR_FLOAT16"),
    ("TENSOR_FLOAT16", [0.0] * 40 + [-1e6], "overflows TENSOR_FLOAT16"),
    ("TENSOR_BOOL8", {"b64": base64.b64encode(b"\x00\x02").decode()}, "expected bytes 0 or 1"),
    ("TENSOR_FLOAT32", {"b64": "AAA"}, "not a multiple of 4"),
])
def test_value_problems(type_name: str, value: Any, words: str) -> None:
    problem = check_value(value, TYPES[type_name], None, "/v", None)
    assert problem is not None and words in problem.message, problem


@pytest.mark.parametrize(("type_name", "value"), [
    ("TENSOR_FLOAT16", [65504.0, -65504.0, 65519.0, float("inf"), float("nan")]),
    ("TENSOR_FLOAT32", [float("-inf"), 3.4e38] * 20),
    ("TENSOR_INT32", [1.0, -2.0]),
    ("TENSOR_BOOL8", [0, 1, True]),
    ("TENSOR_QUANT8_ASYMM", []),
])
def test_values_accepted(type_name: str, value: Any) -> None:
    assert check_value(value, TYPES[type_name], None, "/v", None) is None


def test_unknown_dims_accept_any_count_and_long_form_sets_it(tmp_path: Path) -> None:
    doc = io_document("TENSOR_FLOAT32", [1.0, 2.0, 3.0, 4.0], [0.0] * 4)
    doc["models"][0]["main"]["operands"][0]["dims"] = [0, 2]
    doc["models"][0]["examples"][0]["inputs"]["x"] = [1.0, 2.0]  # unknown dims: any count
    load_document(doc)
    doc["models"][0]["examples"][0]["inputs"]["x"] = {"dims": [3, 2], "value": [1.0] * 5}
    with pytest.raises(SpecError, match="expected 6 value"):
        load_document(doc)
    doc["models"][0]["examples"][0]["outputs"]["y"] = {"dims": [0], "value": []}  # zero-sized output
    doc["models"][0]["examples"][0]["inputs"]["x"] = {"dims": [3, 2], "value": [1.0] * 6}
    load_document(doc)


def test_yaml_and_json_forms_are_equivalent(tmp_path: Path) -> None:
    import json

    doc = io_document("TENSOR_FLOAT32", [0.5, 1e-5, -2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
    from_json = load_file(write(tmp_path, "a.json", json.dumps(doc))).document
    yaml_text = json.dumps(doc).replace("1e-05", "1e-5")  # YAML 1.2 floats without a dot
    from_yaml = load_file(write(tmp_path, "a.yaml", yaml_text)).document
    assert from_json == from_yaml
