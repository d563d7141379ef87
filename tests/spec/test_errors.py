"""Malformed specs raise SpecError naming the file, the line, the JSON pointer and the expectation."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from tests.spec.helpers import BASE, base_document, write
from vts.spec.errors import SpecError
from vts.spec.loader import iter_spec_paths, load_file


def load_error(path: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_file(path)
    return info.value


def yaml_error(tmp_path: Path, old: str, new: str) -> SpecError:
    assert old in BASE, old
    return load_error(write(tmp_path, "bad.yaml", BASE.replace(old, new, 1)))


def test_base_spec_is_valid(tmp_path: Path) -> None:
    spec = load_file(write(tmp_path, "ok.yaml", BASE))
    assert spec.name == "t" and [m["name"] for m in spec.models] == ["add"]


# (replace this, with that) -> (line, pointer, words the message must contain)
CASES = {
    "bad YAML syntax": (
        ("models:\n", "models: oops: [\n"), 5, "", "invalid YAML"),
    "unknown key": (
        ("lifetime: CONSTANT_COPY, value: [1, 2]}", "lifetime: CONSTANT_COPY, value: [1, 2], colour: red}"),
        10, "/models/0/main/operands/1/colour", "unknown key 'colour'"),
    "missing required key": (
        ("{name: out, type: TENSOR_FLOAT32, dims: [2], lifetime: SUBGRAPH_OUTPUT}",
         "{name: out, type: TENSOR_FLOAT32, dims: [2]}"),
        12, "/models/0/main/operands/3", "missing required key 'lifetime'"),
    "wrong value count": (
        ("value: [1, 2]}", "value: [1, 2, 3]}"),
        10, "/models/0/main/operands/1/value", "expected 2 value(s) for TENSOR_FLOAT32 of dims [2], got 3"),
    "wrong example value count": (
        ("outputs: {out: [2, 4]}", "outputs: {out: [2]}"),
        19, "/models/0/examples/0/outputs/out", "expected 2 value(s)"),
    "unknown operand name in an operation": (
        ("inputs: [a, b, act]", "inputs: [a, bb, act]"),
        14, "/models/0/main/operations/0/inputs/1", "no operand is named 'bb'"),
    "operand index out of range": (
        ("outputs: [out]}", "outputs: [7]}"),
        14, "/models/0/main/operations/0/outputs/0", "operand index 7 is out of range"),
    "duplicate operand names": (
        ("{name: act,", "{name: b,"),
        11, "/models/0/main/operands/2/name", "duplicate operand name 'b'"),
    "bad type name": (
        ("{name: a, type: TENSOR_FLOAT32,", "{name: a, type: TENSOR_FLAOT32,"),
        9, "/models/0/main/operands/0/type", "did you mean 'TENSOR_FLOAT32'"),
    "bad operation type": (
        ("{type: ADD,", "{type: ADDD,"),
        14, "/models/0/main/operations/0/type", "unknown operation type 'ADDD'"),
    "undeclared extension type": (
        ("{name: a, type: TENSOR_FLOAT32,", "{name: a, type: \"com.example.ext:FANCY\","),
        9, "/models/0/main/operands/0/type", "does not declare"),
    "unsupported format version": (
        ("nnvts: 1\n", "nnvts: 2\n"), 1, "/nnvts", "unsupported format version 2"),
    "bad name pattern": (
        ("  - name: add\n", "  - name: add-1\n"), 6, "/models/0/name", "[A-Za-z0-9_]"),
    "example key that is not an input": (
        ("inputs: {a: [1, 2]}", "inputs: {a: [1, 2], out: [1, 2]}"),
        18, "/models/0/examples/0/inputs/out", "is not one of the main subgraph's inputs"),
    "example key naming no operand": (
        ("inputs: {a: [1, 2]}", "inputs: {z: [1, 2]}"),
        18, "/models/0/examples/0/inputs/z", "no operand of the main subgraph is named 'z'"),
    "value on an input": (
        ("dims: [2], lifetime: SUBGRAPH_INPUT}", "dims: [2], lifetime: SUBGRAPH_INPUT, value: [1, 2]}"),
        9, "/models/0/main/operands/0/value", "expected no value"),
    "constant without a value": (
        ("lifetime: CONSTANT_COPY, value: 0}", "lifetime: CONSTANT_COPY}"),
        11, "/models/0/main/operands/2", "missing required key 'value'"),
    "non-number in a value list": (
        ("value: [1, 2]}", "value: [1, x]}"),
        10, "/models/0/main/operands/1/value/1", "expected a number or a boolean"),
    "quantized value out of range": (
        ("{name: b, type: TENSOR_FLOAT32, dims: [2], lifetime: CONSTANT_COPY, value: [1, 2]}",
         "{name: b, type: TENSOR_QUANT8_ASYMM, dims: [2], scale: 0.5, lifetime: CONSTANT_COPY, "
         "value: [1, 256]}"),
        10, "/models/0/main/operands/1/value/1",
        "256 is out of range for TENSOR_QUANT8_ASYMM (stored values are 0..255)"),
    "float16 overflow": (
        ("{name: b, type: TENSOR_FLOAT32, dims: [2], lifetime: CONSTANT_COPY, value: [1, 2]}",
         "{name: b, type: TENSOR_FLOAT16, dims: [2], lifetime: CONSTANT_COPY, value: [1, 70000]}"),
        10, "/models/0/main/operands/1/value/1", "overflows TENSOR_FLOAT16"),
    "non-integer for INT32": (
        ("value: 0}", "value: 0.5}"), 11, "/models/0/main/operands/2/value", "expected an integer for INT32"),
    "boolean in a float tensor": (
        ("value: [1, 2]}", "value: [1, true]}"),
        10, "/models/0/main/operands/1/value/1", "expected a number"),
    "b64 of the wrong size": (
        ("value: [1, 2]}", "value: {b64: AACAPw==}}"),
        10, "/models/0/main/operands/1/value/b64", "expected 8 bytes (2 value(s) of TENSOR_FLOAT32"),
    "duplicate model names": (
        ("      - inputs: {a: [1, 2]}\n        outputs: {out: [2, 4]}\n",
         "      - inputs: {a: [1, 2]}\n        outputs: {out: [2, 4]}\n"
         "  - {name: add, main: {operands: [], operations: [], inputs: [], outputs: []},"
         " examples: [{inputs: {}, outputs: {}}]}\n"),
        20, "/models/1/name", "duplicate model name 'add'"),
    "duplicate YAML key": (
        ("hal_version: \"1.0\"\n", "hal_version: \"1.0\"\nname: u\n"),
        4, "/name", "duplicate key 'name' (first at line 2)"),
    "unquoted HAL version": (
        ("hal_version: \"1.0\"\n", "hal_version: 1.0\n"), 3, "/hal_version", "a quoted NN HAL version"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_malformed_yaml(tmp_path: Path, case: str) -> None:
    (old, new), line, pointer, words = CASES[case]
    error = yaml_error(tmp_path, old, new)
    assert error.path.endswith("bad.yaml")
    assert (error.line, error.pointer) == (line, pointer), str(error)
    assert words in error.message, error.message
    assert str(error).startswith(f"{error.path}:{line}: ")


def test_json_errors_are_located(tmp_path: Path) -> None:
    document = base_document()
    document["models"][0]["main"]["operands"][1]["colour"] = "red"
    text = json.dumps(document, indent=2)
    error = load_error(write(tmp_path, "bad.json", text))
    assert error.pointer == "/models/0/main/operands/1/colour"
    assert text.splitlines()[error.line - 1].strip().startswith('"colour"')


def test_json_syntax_error(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, "bad.json", '{\n  "nnvts": 1,\n  "name": oops\n}\n'))
    assert error.line == 3 and "invalid JSON" in error.message


def test_gzip_json_error_located(tmp_path: Path) -> None:
    document = base_document()
    document["models"][0]["main"]["operations"][0]["inputs"][1] = "nope"
    text = json.dumps(document, indent=1)
    error = load_error(write(tmp_path, "bad.json.gz", text, gz=True))
    assert error.pointer == "/models/0/main/operations/0/inputs/1"
    assert text.splitlines()[error.line - 1].strip().startswith('"nope"')


@pytest.mark.parametrize(("name", "content", "gz", "words"), [
    ("empty.yaml", "", False, "empty"),
    ("blank.yaml", "\n  \n", False, "empty"),
    ("comment.yaml", "# nothing\n", False, "no document"),
    ("list.yaml", "- 1\n- 2\n", False, "expected a mapping at the top level, got a list"),
    ("scalar.json", "3", False, "expected a mapping at the top level, got a number"),
    ("notgz.json.gz", "{}", False, "cannot decompress"),
    ("empty.json.gz", "", True, "empty"),
    ("latin1.yaml", b"name: caf\xe9\n", False, "expected UTF-8"),
])
def test_unusable_files(tmp_path: Path, name: str, content: str | bytes, gz: bool, words: str) -> None:
    error = load_error(write(tmp_path, name, content, gz=gz))
    assert error.path.endswith(name) and words in error.message, str(error)


def test_not_a_spec_name_and_missing_path(tmp_path: Path) -> None:
    assert "not a spec file name" in load_error(write(tmp_path, "x.txt", BASE)).message
    with pytest.raises(SpecError, match="no such file"):
        iter_spec_paths([str(tmp_path / "missing")])


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    text = BASE.replace("inputs: [a, b, act]", "inputs: [a, bb, cc]").replace("{name: act,", "{name: b,")
    error = load_error(write(tmp_path, "bad.yaml", text))
    assert error.count == 3
    rendered = str(error).splitlines()
    assert rendered[0].endswith("duplicate operand name 'b' (also operand 1): operand names must be unique "
                                "in a subgraph")
    assert len(rendered) == 3 and all(":14: " in line for line in rendered[1:])


def test_spec_error_pickles_and_renders() -> None:
    error = SpecError("a.yaml", 3, "/x", "expected y", [SpecError("a.yaml", None, "", "also z")])
    again = pickle.loads(pickle.dumps(error))
    fields = (again.path, again.line, again.pointer, again.message, again.count)
    assert fields == ("a.yaml", 3, "/x", "expected y", 2)
    assert str(again) == "a.yaml:3: /x: expected y\na.yaml: also z"


def test_example_operand_given_twice(tmp_path: Path) -> None:
    error = yaml_error(tmp_path, "inputs: {a: [1, 2]}", "inputs: {a: [1, 2], '0': [1, 2]}")
    assert (error.line, error.pointer) == (18, "/models/0/examples/0/inputs/0")
    assert "given twice (as 'a' and '0')" in error.message


def test_example_key_may_be_an_operand_index(tmp_path: Path) -> None:
    spec = load_file(write(tmp_path, "ok.yaml", BASE.replace("inputs: {a: [1, 2]}", "inputs: {0: [1, 2]}")))
    assert spec.models[0]["examples"][0]["inputs"] == {"0": [1, 2]}


def test_problems_are_reported_in_file_order(tmp_path: Path) -> None:
    document = base_document()
    document["models"][0]["main"]["operands"][0]["colour"] = "red"
    document["models"][0]["name"] = "bad name"
    document["nnvts"] = 3
    text = json.dumps(document, indent=2)
    error = load_error(write(tmp_path, "bad.json", text))
    assert [e.pointer for e in (error, *error.others)] == [
        "/nnvts", "/models/0/name", "/models/0/main/operands/0/colour"]
    lines = [e.line for e in (error, *error.others)]
    assert lines == sorted(lines)
