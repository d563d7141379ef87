"""A file name or a string from a spec, a tree, a results file or a driver cannot print a line of its own into
the log: every one is printed escaped (``vts.bounds.shown``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.conftest import hand_add_float
from vts.bounds import shown

FORGED = "nnvts: 5 cases in 0.4 s: 5 passed"


def _invoke(*argv: str):
    from vts.cli.main import main

    return CliRunner().invoke(main, list(argv))


def _forged_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("nnvts: 5 cases", "FORGED"))]


@pytest.mark.parametrize("text", ["x\nnvts: forged", "bell\a", "esc\x1b[2J", "sep\u2028x", "rtl\u202ex", "cr\rx",
                                  "c1\x85x"])
def test_shown_text_is_one_line_without_controls(text):
    out = shown(text)
    assert out.isprintable() and len(out.splitlines()) == 1 and out != text


def test_plain_text_is_shown_as_it_is():
    text = "generated_tests/add_binary.json é ü 中"
    assert shown(text) is text


@pytest.mark.parametrize("command", ["run", "list"])
def test_a_spec_file_name_holding_a_newline_prints_no_line_of_its_own(tmp_path, command):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / f"bad\n{FORGED}\n.json").write_text("{bad")
    done = _invoke(command, *(["--in-process"] if command == "run" else []), str(specs))
    assert done.exit_code == 2, done.output
    assert not _forged_lines(done.output), done.output
    [line] = done.stderr.splitlines()
    assert "\\nnnvts: 5 cases in 0.4 s: 5 passed\\n.json" in line, line


def test_a_report_path_holding_a_newline_prints_no_line_of_its_own(tmp_path):
    spec = tmp_path / "add.json"
    spec.write_text(json.dumps(hand_add_float()))
    done = _invoke("run", "--in-process", "--family", "generated", str(spec), "-q",
                   "--json", str(tmp_path / "r\nFORGED.json"))
    assert done.exit_code == 0, done.output
    assert not _forged_lines(done.output), done.output
    assert "r\\nFORGED.json" in done.output


def test_names_from_a_results_file_print_no_line_of_their_own(tmp_path):
    header = {"nnvts_results": 1, "driver": {"ref": "acme", "name": "d"}}
    case = {"case": {"name": f"a\n{FORGED}", "family": "generated", "verdict": "passed", "reason": "", "duration": 0}}
    footer = {"summary": {"passed": 1, "total": 1}, "interrupted": False}
    shards = []
    for name in ("one", "two"):  # the same case twice: a duplicate, named in the coverage lines
        path = tmp_path / f"{name}\n{FORGED}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in (header, case, footer)) + "\n")
        shards.append(str(path))
    done = _invoke("merge", *shards, "--no-coverage-check", "--json", str(tmp_path / "m.json"))
    assert "duplicate" in done.stderr, done.output
    assert not _forged_lines(done.output), done.output
    done = _invoke("report", shards[0], "--json", str(tmp_path / "r.json"))
    assert done.exit_code == 0 and not _forged_lines(done.output), done.output
    torn = tmp_path / f"torn\n{FORGED}.jsonl"
    torn.write_text("{not json\n")
    done = _invoke("report", str(torn), "--json", str(tmp_path / "t.json"))
    assert done.exit_code == 2 and not _forged_lines(done.output), done.output


def test_a_drivers_strings_print_no_line_and_no_markup_of_their_own():
    import io

    from rich.console import Console

    from vts.cli.device_info import print_device_info

    out = io.StringIO()
    data = {"name": f"acme\n{FORGED}", "type": "[red]ACCELERATOR", "version": "1\x1b[2J", "status": "AVAILABLE",
            "errors": {"capabilities": f"raised\n{FORGED}"}}
    print_device_info(data, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert not _forged_lines(text) and not any(line.startswith(FORGED) for line in text.splitlines()), text
    assert "[red]ACCELERATOR" in text and "\x1b" not in text
