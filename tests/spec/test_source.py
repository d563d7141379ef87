"""Reading files: the YAML dialect, gzip, and the expansion of path arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.helpers import BASE, write
from vts.spec.errors import SpecError
from vts.spec.loader import iter_spec_paths, load_file, load_paths
from vts.spec.source import locate, parse


def test_yaml_dialect_is_the_yaml_1_2_core_schema() -> None:
    text = "a: 1e-5\nb: no\nc: 017\nd: 2020-01-01\n0: x\ne: .inf\nf: 0x10\ng: ~\nh: True\n"
    parsed = parse(text, "yaml", "x")
    assert parsed == {"a": 1e-5, "b": "no", "c": 17, "d": "2020-01-01", "0": "x", "e": float("inf"),
                      "f": 16, "g": None, "h": True}


def test_yaml_anchors_and_merge_keys() -> None:
    text = "base: &q {scale: 0.5, zero_point: 1}\nuse: {<<: *q, zero_point: 2}\nsame: *q\n"
    parsed = parse(text, "yaml", "x")
    assert parsed["use"] == {"scale": 0.5, "zero_point": 2} and parsed["same"] == parsed["base"]
    with pytest.raises(SpecError, match="duplicate key 'zero_point'"):
        parse("base: &q {scale: 0.5}\nuse: {<<: *q, zero_point: 2, zero_point: 3}\n", "yaml", "x")


def test_yaml_refuses_non_string_keys_and_binary() -> None:
    with pytest.raises(SpecError, match="expected a string key"):
        parse("[1, 2]: x\n", "yaml", "x.yaml")
    with pytest.raises(SpecError, match="unsupported YAML tag"):
        parse("a: !!binary AAAA\n", "yaml", "x.yaml")


def test_gzip_yaml_and_json_load(tmp_path: Path) -> None:
    plain = load_file(write(tmp_path, "a.yaml", BASE)).document
    assert load_file(write(tmp_path, "b.yaml.gz", BASE, gz=True)).document == plain
    assert load_file(write(tmp_path, "c.yml", BASE)).document == plain


def test_locate_json_and_yaml() -> None:
    text = '{\n "a": [1,\n 2, {"b": 3,\n "c": 4}],\n "d": 5}'
    pointers = ("", "/a", "/a/1", "/a/2/c", "/d", "/x", "/a/9")
    assert [locate(text, "json", p) for p in pointers] == [1, 2, 3, 4, 5, 1, 2]
    text = "a:\n  - 1\n  - 2\n  - b: 3\n    c: 4\nd: 5\n"
    assert [locate(text, "yaml", p) for p in ("/a", "/a/1", "/a/2/c", "/d", "/x")] == [1, 3, 5, 6, 1]


def test_iter_spec_paths_sorts_skips_hidden_and_dedupes(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.json", "c.txt", ".hidden.yaml", "sub/z.yml", "sub/y.json.gz", ".git/x.yaml"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    expected = [str(tmp_path / n) for n in ("a.json", "b.yaml", "sub/y.json.gz", "sub/z.yml")]
    assert iter_spec_paths([str(tmp_path)]) == expected
    first_b = iter_spec_paths([str(tmp_path / "b.yaml"), str(tmp_path)])
    assert first_b == [expected[1], expected[0], *expected[2:]]


def test_load_paths_is_lazy(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", BASE)
    write(tmp_path, "b.yaml", "nnvts: 2\n")
    loaded = load_paths([str(tmp_path)])
    assert next(loaded).name == "t"
    with pytest.raises(SpecError):
        next(loaded)


def test_concrete_example_of_the_user_guide_loads(tmp_path: Path) -> None:
    guide = Path(__file__).parents[2] / "docs" / "spec-format.md"
    text = guide.read_text()
    block = text.split("## The concrete layer in brief", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    spec = load_file(write(tmp_path, "guide.yaml", block))
    assert [m["name"] for m in spec.models] == ["add"]
