"""Hostile spec files: bombs, pipes, huge numbers, duplicate keys and names.

Each must end in a located load-time error (exit status 2, nothing written)
within seconds and bounded memory, never a hang, a traceback or a silently
wrong value.  The in-process tests check the error itself; the subprocess
tests check the exit status, the message and the child's peak memory.
"""

from __future__ import annotations

import json
import math
import os
import socket
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.spec.child import assert_clean_usage_error, run_nnvts
from tests.spec.helpers import BASE, write
from vts import bounds
from vts.spec.errors import SpecError
from vts.spec.loader import load_file, load_paths
from vts.spec.values import to_array
from vts.spec.writer import render

# --- helpers ----------------------------------------------------------------------------------


def spec_text(old: str, new: str, *, name: str = "t") -> str:
    assert old in BASE
    return BASE.replace(old, new).replace("name: t\n", f"name: {name}\n", 1)


def spec_json(**replace: object) -> str:
    import yaml

    document = yaml.safe_load(BASE)
    document.update(replace)
    return json.dumps(document)


def error_of(path: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        for _ in load_paths([path]):
            pass
    return caught.value


def alias_bomb(levels: int = 9) -> str:
    """A billion-laughs document: 10**levels leaves from a few hundred bytes, used as an operand value."""
    lines = ["bomb:", "  l0: &l0 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return spec_text("models:\n", "\n".join(lines) + "\nmodels:\n").replace(
        "value: [1, 2]}", f"value: *l{levels}}}")


def gzip_bomb(inflated: int) -> bytes:
    """Gzip members of zeros, concatenated (valid gzip) to inflate to ``inflated`` bytes."""
    chunk = 1 << 20
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = compressor.compress(b"\0" * chunk) + compressor.flush()
    return member * (inflated // chunk)


# --- alias bombs and recursion ----------------------------------------------------------------


def test_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, "bomb.yaml", alias_bomb()))
    assert "aliases expand" in error.message and error.line is not None
    assert error.pointer.startswith("/bomb/l")


def test_modest_alias_use_still_loads(tmp_path: Path) -> None:
    text = spec_text("value: [1, 2]}", "value: &v [1, 2]}").replace("inputs: {a: [1, 2]}", "inputs: {a: *v}")
    spec = load_file(write(tmp_path, "ok.yaml", text))
    assert spec.models[0]["examples"][0]["inputs"]["a"] == [1, 2]


def test_alias_budget_counts_expansion_not_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_ALIAS_NODES", 50)
    error = error_of(write(tmp_path, "bomb.yaml", alias_bomb(levels=2)))  # 100 leaves + 10 lists added
    assert "beyond 50 extra nodes" in error.message


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, "rec.yaml", spec_text("value: [1, 2]}", "value: &r [1, *r]}")))
    assert "contains it" in error.message
    assert (error.line, error.pointer) == (10, "/models/0/main/operands/1/value")


def test_deeply_nested_yaml_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    depth = 5000
    error = error_of(write(tmp_path, "deep.yaml", spec_text("models:\n", "x: " + "[" * depth + "]" * depth
                                                            + "\nmodels:\n")))
    assert "nested too deeply" in error.message or "invalid YAML" in error.message


def test_alias_bomb_cli_exits_2_in_bounded_memory(tmp_path: Path) -> None:
    path = write(tmp_path, "bomb.yaml", alias_bomb())
    assert_clean_usage_error(run_nnvts("list", "--specs", path), "bomb.yaml:", "aliases expand")


# --- gzip bombs and size ----------------------------------------------------------------------


def test_gzip_bomb_is_abandoned_at_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_SPEC_BYTES", 1 << 20)
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip_bomb(16 << 20))
    error = error_of(str(path))
    assert "larger than 1 MiB once decompressed" in error.message


def test_plain_file_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_SPEC_BYTES", 1000)
    error = error_of(write(tmp_path, "big.json", spec_json() + " " * 2000))
    assert "larger than 1000 bytes" in error.message


def test_yaml_has_its_own_smaller_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert bounds.MAX_YAML_BYTES < bounds.MAX_SPEC_BYTES  # YAML nodes cost far more memory than JSON values
    monkeypatch.setattr(bounds, "MAX_YAML_BYTES", 1000)
    error = error_of(write(tmp_path, "big.yaml", BASE + "#" * 2000))
    assert "larger than 1000 bytes" in error.message
    assert load_file(write(tmp_path, "big.json", spec_json() + " " * 2000)).name == "t"


def test_file_just_under_the_limit_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_YAML_BYTES", len(BASE.encode()))
    assert load_file(write(tmp_path, "exact.yaml.gz", BASE, gz=True)).name == "t"


def test_four_gib_gzip_bomb_cli_exits_2_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip_bomb(4 << 30))  # ~4 MB on disk
    assert_clean_usage_error(run_nnvts("list", "--specs", str(path)), "bomb.json.gz", "once decompressed")


# --- pipes, sockets, devices ------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_in_a_specs_folder_is_refused_without_opening_it(tmp_path: Path) -> None:
    write(tmp_path, "ok.yaml", BASE)
    os.mkfifo(tmp_path / "pipe.yaml")  # opening it for reading would block forever
    error = error_of(str(tmp_path))
    assert error.path.endswith("pipe.yaml") and "FIFO" in error.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", [["list"], ["run", "--in-process"], ["generate", "--check"]])
def test_fifo_cli_exits_2_and_does_not_hang(tmp_path: Path, command: list[str]) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    write(specs, "ok.yaml", BASE)
    os.mkfifo(specs / "pipe.json")
    out = tmp_path / "out"
    extra = {"generate": ["--out", str(out)], "run": ["--json", str(out / "r.json")]}.get(command[0], [])
    result = run_nnvts(*command, "--specs", str(specs), *extra)
    assert_clean_usage_error(result, "pipe.json", "FIFO")
    assert not out.exists()


def test_socket_and_device_are_refused(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "sock.yaml"))
        error = error_of(str(tmp_path))
        assert "socket" in error.message
    finally:
        server.close()
    if os.path.exists("/dev/zero"):
        link = tmp_path / "zero.yaml"
        os.unlink(tmp_path / "sock.yaml")
        os.symlink("/dev/zero", link)  # reading it would never end
        assert "character device" in error_of(str(link)).message


# --- numbers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [25, 5000, 100_000])
def test_huge_integer_is_refused_with_its_place(tmp_path: Path, digits: int) -> None:
    error = error_of(write(tmp_path, "big.yaml", spec_text("value: 0}", f"value: {'9' * digits}}}")))
    assert (error.line, error.pointer) == (11, "/models/0/main/operands/2/value")
    assert "too large" in error.message and len(error.message) < 300


def test_huge_integer_in_json_is_refused_with_its_place(tmp_path: Path) -> None:
    text = spec_json(nnvts=1).replace('"value": 0', '"value": ' + "7" * 5000)
    error = error_of(write(tmp_path, "big.json", text))
    assert error.pointer == "/models/0/main/operands/2/value" and "too large" in error.message
    assert error.line == 1


def test_integers_up_to_64_bits_parse(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, "u64.yaml", spec_text("value: 0}", f"value: {(1 << 64) - 1}}}")))
    assert "out of range for INT32" in error.message  # parsed, then refused by the type check


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1" * 400 + ".0"])
def test_float_literal_overflowing_to_infinity_is_refused(tmp_path: Path, literal: str) -> None:
    error = error_of(write(tmp_path, "inf.yaml", spec_text("value: [1, 2]}", f"value: [{literal}, 2]}}")))
    assert (error.line, error.pointer) == (10, "/models/0/main/operands/1/value/0")
    assert "overflows to infinity" in error.message


def test_float_overflow_in_json_is_refused(tmp_path: Path) -> None:
    text = spec_json().replace('"value": [1, 2]', '"value": [1, 1e400]')
    error = error_of(write(tmp_path, "inf.json", text))
    assert error.pointer == "/models/0/main/operands/1/value/1" and "overflows" in error.message


def test_infinity_and_nan_written_as_such_still_load(tmp_path: Path) -> None:
    spec = load_file(write(tmp_path, "nf.yaml", spec_text("value: [1, 2]}", "value: [.inf, .nan]}")))
    value = spec.models[0]["main"]["operands"][1]["value"]
    assert value[0] == math.inf and math.isnan(value[1])
    text = spec_json().replace('"value": [1, 2]', '"value": [-Infinity, NaN]')
    value = load_file(write(tmp_path, "nf.json", text)).models[0]["main"]["operands"][1]["value"]
    assert value[0] == -math.inf and math.isnan(value[1])


@pytest.mark.parametrize(("operand", "value", "words"), [
    ("{name: b, type: TENSOR_FLOAT32, dims: [2]", "[1e39, 2]", "overflows TENSOR_FLOAT32"),
    ("{name: b, type: TENSOR_FLOAT16, dims: [2]", "[70000, 2]", "overflows TENSOR_FLOAT16"),
    ("{name: b, type: TENSOR_INT32, dims: [2]", "[2147483648, 2]", "out of range for TENSOR_INT32"),
    ("{name: b, type: TENSOR_QUANT8_ASYMM, dims: [2], scale: 0.5", "[256, 2]", "out of range"),
    ("{name: b, type: TENSOR_QUANT8_ASYMM_SIGNED, dims: [2], scale: 0.5", "[-129, 2]", "out of range"),
])
def test_values_overflowing_their_operand_type_are_refused(tmp_path: Path, operand: str, value: str,
                                                           words: str) -> None:
    text = spec_text("{name: b, type: TENSOR_FLOAT32, dims: [2], lifetime: CONSTANT_COPY, value: [1, 2]}",
                     f"{operand}, lifetime: CONSTANT_COPY, value: {value}}}")
    error = error_of(write(tmp_path, "o.yaml", text))
    assert error.pointer == "/models/0/main/operands/1/value/0" and words in error.message


@pytest.mark.parametrize(("field", "words"), [
    ("dims: [4294967296]", "dims are uint32"),
    ("dims: [2], zero_point: 2147483648", "zero points are int32"),
    ("dims: [2], scale: 1e39", "not a finite float32"),
    ("dims: [2], scale: .nan", "not a finite float32"),
])
def test_hal_fields_beyond_their_types_are_refused(tmp_path: Path, field: str, words: str) -> None:
    text = spec_text("{name: a, type: TENSOR_FLOAT32, dims: [2],", f"{{name: a, type: TENSOR_FLOAT32, {field},")
    error = error_of(write(tmp_path, "f.yaml", text))
    assert error.pointer.startswith("/models/0/main/operands/0/") and words in error.message


def test_huge_numbers_cli_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, "big.yaml", spec_text("value: 0}", f"value: {'9' * 5000}}}"))
    assert_clean_usage_error(run_nnvts("list", "--specs", path), "big.yaml:11:", "too large")
    path = write(tmp_path, "inf.json", spec_json().replace('"value": [1, 2]', '"value": [1e400, 2]'))
    assert_clean_usage_error(run_nnvts("list", "--specs", path), "inf.json:1:", "overflows to infinity")


# --- duplicate keys and names -----------------------------------------------------------------


def test_duplicate_json_keys_are_refused_with_their_place(tmp_path: Path) -> None:
    text = spec_json().replace('"hal_version": "1.0"', '"hal_version": "1.0", "hal_version": "1.3"')
    error = error_of(write(tmp_path, "dup.json", text))
    assert error.pointer == "/hal_version" and "duplicate key 'hal_version'" in error.message


def test_duplicate_nested_json_keys_are_all_reported(tmp_path: Path) -> None:
    text = spec_json().replace('"name": "a",', '"name": "a", "name": "a",').replace(
        '"lifetime": "SUBGRAPH_OUTPUT"', '"lifetime": "SUBGRAPH_OUTPUT", "lifetime": "SUBGRAPH_OUTPUT"')
    error = error_of(write(tmp_path, "dup.json", text))
    pointers = {error.pointer} | {other.pointer for other in error.others}
    assert pointers == {"/models/0/main/operands/0/name", "/models/0/main/operands/3/lifetime"}


def test_duplicate_yaml_keys_are_refused_with_their_place(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, "dup.yaml", spec_text("      inputs: [a]\n", "      inputs: [a]\n"
                                                           "      inputs: [b]\n")))
    assert (error.line, error.pointer) == (16, "/models/0/main/inputs")


@pytest.mark.parametrize(("first", "second"), [("a/x.yaml", "b/x.yaml"), ("x.yaml", "x.json.gz")])
def test_duplicate_spec_names_across_files_name_both(tmp_path: Path, first: str, second: str) -> None:
    for name in (first, second):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        if name.endswith(".json.gz"):
            write(tmp_path, name, spec_json(name="x"), gz=True)
        else:
            write(tmp_path, name, spec_text("name: t\n", "name: x\n"))
    error = error_of(str(tmp_path))
    assert error.pointer == "/name" and "spec names must be unique" in error.message
    assert str(tmp_path / first) in str(error) and str(tmp_path / second) in str(error)


def test_duplicate_names_cli_exit_2_writes_nothing(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    for sub in ("a", "b"):
        (specs / sub).mkdir(parents=True)
        write(specs / sub, "x.yaml", BASE)
    report = tmp_path / "r.json"
    result = run_nnvts("run", "--in-process", "--specs", str(specs), "--json", str(report))
    assert_clean_usage_error(result, str(specs / "a" / "x.yaml"), str(specs / "b" / "x.yaml"))
    assert not report.exists()


# --- generate writes strict JSON --------------------------------------------------------------


def _strict_json(text: str) -> object:
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_generate_writes_strict_json_that_loads_to_the_same_arrays(tmp_path: Path) -> None:
    text = spec_text("{name: b, type: TENSOR_FLOAT32, dims: [2], lifetime: CONSTANT_COPY, value: [1, 2]}",
                     "{name: b, type: TENSOR_FLOAT16, dims: [2], lifetime: CONSTANT_COPY, value: [.nan, 2]}")
    text = text.replace("inputs: {a: [1, 2]}", "inputs: {a: [.inf, -.inf]}").replace(
        "outputs: {out: [2, 4]}", "outputs: {out: {dims: [2], value: [.nan, 4.5]}}")
    source = load_file(write(tmp_path, "nf.yaml", text))
    rendered = render(source.document)
    _strict_json(rendered)  # raises on NaN / Infinity tokens
    again = load_file(write(tmp_path, "nf.json", rendered))
    for get, type_name in [
        (lambda d: d["models"][0]["main"]["operands"][1]["value"], "TENSOR_FLOAT16"),
        (lambda d: d["models"][0]["examples"][0]["inputs"]["a"], "TENSOR_FLOAT32"),
        (lambda d: d["models"][0]["examples"][0]["outputs"]["out"], "TENSOR_FLOAT32"),
    ]:
        before = to_array(get(source.document), type_name, [2])
        after = to_array(get(again.document), type_name, [2])
        np.testing.assert_array_equal(before, after)  # NaN equals NaN here
        assert before.dtype == after.dtype
    assert render(again.document) == rendered  # a fixed point: generating again changes nothing


def test_generate_cli_output_is_strict_json(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    write(specs, "nf.yaml", spec_text("value: [1, 2]}", "value: [.inf, 2]}"))
    out = tmp_path / "out"
    result = run_nnvts("generate", "--specs", str(specs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    document = _strict_json((out / "t.json").read_text())
    assert document["models"][0]["main"]["operands"][1]["value"] == {"b64": "AACAfwAAAEA="}


def test_the_corpus_still_loads_under_the_limits() -> None:
    corpus = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpus", "V1_0")
    if not os.path.isdir(corpus):
        pytest.skip("external corpus not present")
    names = [spec.name for spec in load_paths([corpus])]
    assert len(names) == len(set(names)) > 100


# --- errors in huge files ---------------------------------------------------------------------


@pytest.mark.parametrize("pretty", [False, True])
def test_schema_error_deep_in_a_long_list_keeps_its_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          pretty: bool) -> None:
    import yaml

    from vts.spec import schema

    monkeypatch.setattr(schema, "SAMPLE_FROM", 8)  # sample lists beyond 8 items, as for millions
    document = yaml.safe_load(BASE)
    operands = document["models"][0]["main"]["operands"]
    for k in (0, 1, 3):
        operands[k]["dims"] = [100]
    operands[1]["value"] = [0.5] * 100
    operands[1]["value"][77] = "x"
    operands[1]["value"][90] = None
    document["models"][0]["examples"] = []
    text = json.dumps(document, indent=1 if pretty else None)
    error = error_of(write(tmp_path, "long.json", text))
    pointers = {error.pointer} | {other.pointer for other in error.others}
    assert {"/models/0/main/operands/1/value/77", "/models/0/main/operands/1/value/90",
            "/models/0/examples"} <= pointers, str(error)
    line_of_77 = text[:text.index('"x"')].count("\n") + 1
    located = next(e for e in (error, *error.others) if e.pointer.endswith("/value/77"))
    assert located.line == line_of_77


def test_directory_that_cannot_be_listed_is_an_error_not_skipped(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "locked").mkdir()
    write(tmp_path / "locked", "x.yaml", BASE)
    real_scandir = os.scandir

    def scandir(path: object = ".") -> object:  # as for a directory without read permission (tests run as root)
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    error = error_of(str(tmp_path))
    assert error.path.endswith("locked") and "cannot list the directory: Permission denied" in error.message


def test_lone_surrogate_in_json_is_refused_but_a_pair_is_fine(tmp_path: Path) -> None:
    text = spec_json(description="x").replace('"description": "x"', '"description": "a\\ud800b"')
    error = error_of(write(tmp_path, "lone.json", text))
    assert error.pointer == "/description" and "surrogate" in error.message
    paired = spec_json(description="x").replace('"description": "x"', '"description": "\\ud83d\\ude00"')
    assert load_file(write(tmp_path, "pair.json", paired)).document["description"] == "\U0001F600"


def test_list_prints_no_name_before_a_spec_error(tmp_path: Path) -> None:
    path = write(tmp_path, "inf.yaml", spec_text("value: [1, 2]}", "value: [1e400, 2]}"))
    result = run_nnvts("list", "--specs", path)
    assert_clean_usage_error(result, "overflows to infinity")
    assert result.stdout == ""
