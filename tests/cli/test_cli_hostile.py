"""Hostile use of the command line: bad option values, signals, and runs that select nothing.

The walker feeds every option of every command (commands added later
included) values a hostile tester would try — NaN, infinities, negatives,
huge numbers, empty strings, NUL bytes, and per-type ones (a FIFO for an
input file, a directory for a report path, bad shell quoting for a driver)
— and requires a usage error: exit status 2, one line, no traceback, naming
the option or the value.  The signal tests send SIGTERM, SIGHUP and SIGINT to
a real ``nnvts run`` and validate the reports it writes on the way out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import vts.cli.main as cli
from tests.cli.test_cli import write_specs
from tests.spec.child import ROOT, assert_clean_usage_error, run_nnvts
from vts.cli.params import (
    DriverParam,
    FiniteFloat,
    InputFile,
    OutputDir,
    OutputFile,
    ResultsFile,
    SocketFd,
    SocketPath,
)

NUMBERS = ["nan", "NaN", "inf", "-inf", "1e309", "-1", "99999999999999999999999", "1e300", "0x1g", "one"]
COMMON = ["", "a\0b"]


def _hostile_values(command: str, param: click.Parameter, scratch: Path) -> list[str]:
    """Values that must be refused for ``param`` (beyond ``COMMON``), chosen by its type and name."""
    kind = param.type
    name = param.name or ""
    fifo = scratch / "fifo.txt"
    if not fifo.exists():
        os.mkfifo(fifo)
    if isinstance(kind, (click.IntRange, FiniteFloat, SocketFd)) or kind in (click.INT, click.FLOAT):
        values = list(NUMBERS)
        if isinstance(kind, SocketFd):
            values += ["99", "0"]  # not open; open but not a socket (stdin)
        if name == "case_timeout":
            values += ["0", "-0.0"]
        return values
    if isinstance(kind, click.Choice):
        return ["nosuch", "NAN"]
    if isinstance(kind, DriverParam):
        values = ["exec:'x", 'exec:"unbalanced', "exec:", "exec:   ", "no_such_driver_xyz", "no_such_module_xyz:attr",
                  "a b:c", ":attr", "module:", "nnvts.drivers.reference:", "os.path..x:y"]
        return values + (["exec:/bin/true"] if not kind.allow_exec else [])
    if isinstance(kind, InputFile):
        binary = scratch / "binary.txt"
        binary.write_bytes(b"ok\n\xd0\x00\xff")
        return [str(scratch / "missing.txt"), str(scratch), "/dev/null", str(fifo), str(binary)]
    if isinstance(kind, ResultsFile):
        return [str(scratch / "missing.jsonl"), str(scratch), "/dev/null", str(fifo)]
    if isinstance(kind, OutputFile):
        return [str(scratch), "/dev/null", "/dev/null/report.json"]
    if isinstance(kind, OutputDir):
        return ["/dev/null", "/dev/null/out"]
    if isinstance(kind, SocketPath):
        precious = scratch / "precious.txt"
        precious.write_text("must survive")
        return [str(precious), str(scratch / "no_dir" / "s.sock"), "/tmp/" + "s" * 200, str(scratch)]
    by_name = {
        "shard": ["0/0", "3/2", "x", "1/0", "-1/2", "1/-2", "1/99999999999999999999999999", "nan/nan", "1/2/3"],
        "keyword": ["and", "(", "not", "a or", "(" * 5000 + "a" + ")" * 5000],
        "families": ["nosuch"],
        "specs": [str(scratch / "missing"), str(fifo)],
        "extra_specs": [str(scratch / "missing"), str(fifo)],
    }
    return by_name.get(name, [])


#: Arguments that make each command otherwise valid and quick (a hostile value that slipped
#: through would then run something small, fail the assertions, and not hang).
BASE_ARGS = {
    "run": ["--in-process", "-k", "no_such_case_xyz"],
    "list": ["-k", "no_such_case_xyz"],
    "bench": ["--size", "32", "--runs", "1"],
    "serve": ["--driver", "reference"],
    "generate": ["--check"],
}


def _options() -> Iterator[tuple[str, click.Parameter]]:
    for command_name, command in sorted(cli.main.commands.items()):
        for param in command.params:
            if isinstance(param, click.Option) and (param.is_flag or param.count):
                continue
            if param.name in ("help",):
                continue
            yield command_name, param


def _ids() -> list[str]:
    return [f"{c}:{p.opts[0] if isinstance(p, click.Option) else p.name}" for c, p in _options()]


def _args_for(command: str, param: click.Parameter, value: str, scratch: Path) -> list[str]:
    base = list(BASE_ARGS.get(command, []))
    if param.name == "keyword":
        base = [a for a in base if a not in ("-k", "no_such_case_xyz")]
    if param.name == "driver" and command == "serve":
        base = []
    if command in ("run", "list") and param.name not in ("specs", "extra_specs"):
        base += ["--specs", str(scratch / "specs")]
    if command == "generate" and param.name != "specs":
        base += ["--specs", str(scratch / "specs")]
    if command in ("merge", "report") and param.name not in ("shards", "results"):
        results = scratch / "results.jsonl"  # existing and regular: the one positional these commands need
        results.touch()
        base += [str(results)]
    if command == "report" and param.name not in ("json_path", "junit_path", "html_path", "jsonl_path"):
        base += ["--json", str(scratch / "out.json")]
    if isinstance(param, click.Argument):
        return [*base, "--", value]
    return [*base, param.opts[0], value]


class _Hang(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Hang


@pytest.mark.parametrize(("command", "param"), list(_options()), ids=_ids())
def test_every_option_refuses_hostile_values(tmp_path: Path, command: str, param: click.Parameter) -> None:
    (tmp_path / "specs").mkdir()
    write_specs(tmp_path / "specs")
    runner = CliRunner()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for value in COMMON + _hostile_values(command, param, tmp_path):
            args = [command, *_args_for(command, param, value, tmp_path)]
            signal.alarm(60)  # hang guard only: a value that slipped through must not block the suite
            try:
                result = CliRunner.invoke(runner, cli.main, args, catch_exceptions=True)
            except _Hang:
                pytest.fail(f"nnvts {args!r} hung")
            finally:
                signal.alarm(0)
            shown = f"nnvts {' '.join(map(repr, args))} -> {result.exit_code}: {result.stderr!r}"
            assert result.exit_code == 2, shown
            assert result.exception is None or isinstance(result.exception, SystemExit), shown
            message = result.stderr.strip()
            assert message.startswith("nnvts: error: ") and "\n" not in message, shown
            assert "Traceback" not in result.output + result.stderr, shown
            names = [*getattr(param, "opts", []), param.human_readable_name]
            if "\0" in value:
                assert "NUL byte" in message, shown
            else:
                assert any(n in message for n in names) or value in message or repr(value) in message, shown
    finally:
        signal.signal(signal.SIGALRM, previous)
    if (tmp_path / "precious.txt").exists():
        assert (tmp_path / "precious.txt").read_text() == "must survive"


def test_walker_covers_every_command_with_options() -> None:
    walked = {command for command, _ in _options()}
    with_options = {name for name, c in cli.main.commands.items()
                    if any(isinstance(p, click.Argument) or not (p.is_flag or p.count) for p in c.params)}
    assert walked == with_options and {"run", "list", "generate", "serve", "bench", "info"} <= walked


# --- the brief's examples, in a real process ----------------------------------------------------


@pytest.mark.parametrize(("args", "words"), [
    (["run", "--timeout", "nan"], ["--timeout", "not a finite number"]),
    (["run", "--timeout", "inf"], ["--timeout", "not a finite number"]),
    (["run", "--timeout", "0"], ["--timeout", "not in the range"]),
    (["run", "--timeout", "-1"], ["--timeout", "not in the range"]),
    (["run", "--driver", "exec:'x"], ["--driver", "quoting"]),
    (["run", "--driver", "no_such_module_xyz:create"], ["--driver", "no_such_module_xyz"]),
    (["serve", "--driver", "reference", "--fd", "99"], ["--fd", "descriptor 99 is not open"]),
    (["run", "-j", "99999999999999999999"], ["--jobs", "not in the range"]),
    (["run", "--memory-limit", "99999999999999999999"], ["--memory-limit", "not in the range"]),
])
def test_brief_examples_are_one_line_usage_errors(args: list[str], words: list[str]) -> None:
    assert_clean_usage_error(run_nnvts(*args), *words)


def test_unknown_option_is_a_one_line_usage_error() -> None:
    result = run_nnvts("run", "--no-such-option")
    assert_clean_usage_error(result, "--no-such-option")
    assert result.stderr.count("\n") == 1


# --- nothing selected -------------------------------------------------------------------------


def test_run_selecting_nothing_exits_5_says_why_and_still_reports(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    report = tmp_path / "r.json"
    result = run_nnvts("run", "--in-process", "--specs", specs, "-k", "conv_typo_xyz", "--json", str(report))
    assert result.returncode == 5, result.stderr
    assert "no case selected" in result.stderr and "'conv_typo_xyz'" in result.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["total"] == 0 and data["interrupted"] is False


def test_run_on_an_empty_spec_folder_exits_5_unless_families_are_named(tmp_path: Path) -> None:
    result = run_nnvts("run", "--in-process", "--specs", str(tmp_path))
    assert result.returncode == 5, result.stderr
    assert f"no spec files under {tmp_path}" in result.stderr and "--family" in result.stderr
    named = run_nnvts("run", "--in-process", "--specs", str(tmp_path), "--family", "discovery")
    assert named.returncode == 0, named.stderr


def test_list_count_of_nothing_is_zero_and_exits_0(tmp_path: Path) -> None:
    result = run_nnvts("list", "--count", "--specs", str(tmp_path), "-k", "conv_typo_xyz")
    assert result.returncode == 0 and result.stdout.strip() == "0"


def test_exit_statuses_are_documented() -> None:
    help_text = run_nnvts("run", "--help").stdout
    readme = Path(ROOT, "README.md").read_text()
    for code in ("0", "1", "2", "5", "130", "143", "129"):
        assert f"\n  {code} " in help_text or f" {code} " in help_text, code
        assert f"| {code} |" in readme, code


# --- signals ----------------------------------------------------------------------------------


def _processes_marked(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the run and every process it started)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _start_run(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path, str]:
    specs = tmp_path / "specs"
    specs.mkdir()
    write_specs(specs)
    marker = f"NNVTS_SIGNAL_TEST={uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200", NNVTS_SIGNAL_TEST=marker.split("=", 1)[1])
    out = tmp_path / "out"
    # Every execution hangs until the 1 s case limit: a run of hundreds of cases that is surely
    # still going when the signal arrives.
    args = [sys.executable, "-m", "cli", "run", "--driver", "tests.fakes.broken:hangs", "--specs", str(specs),
            "--timeout", "1", "--json", str(out / "r.json"), "--junit", str(out / "r.xml"),
            "--html", str(out / "r.html"), "--jsonl", str(out / "r.jsonl"), *extra]
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, out, marker


def _wait_for_a_case(process: subprocess.Popen, stream: Path) -> None:
    give_up = time.monotonic() + 120  # hang guard, not a timing threshold
    while time.monotonic() < give_up:
        assert process.poll() is None, process.communicate()
        if stream.exists() and '{"case"' in stream.read_text():
            return
        time.sleep(0.1)
    pytest.fail("no case finished within the hang guard")


def _check_interrupted_reports(out: Path) -> None:
    data = json.loads((out / "r.json").read_text())
    assert data["interrupted"] is True and data["summary"]["total"] >= 1
    assert len(data["cases"]) == data["summary"]["total"]
    root = ET.parse(out / "r.xml").getroot()
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties.get("nnvts.interrupted") == "true"
    assert sum(int(s.get("tests")) for s in root.iter("testsuite")) == data["summary"]["total"]
    assert "interrupted" in (out / "r.html").read_text()
    footer = json.loads((out / "r.jsonl").read_text().splitlines()[-1])
    assert footer["interrupted"] is True


def _wait_gone(marker: str) -> list[int]:
    give_up = time.monotonic() + 30  # hang guard: hosts are stopped, not waited for forever
    while _processes_marked(marker) and time.monotonic() < give_up:
        time.sleep(0.2)
    return _processes_marked(marker)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find leftover processes")
@pytest.mark.parametrize(("signum", "status", "jobs"), [
    (signal.SIGTERM, 143, "1"),
    (signal.SIGHUP, 129, "1"),
    (signal.SIGINT, 130, "1"),
    (signal.SIGTERM, 143, "2"),
])
def test_signal_ends_the_run_with_reports_and_no_leftover_process(tmp_path: Path, signum: int, status: int,
                                                                  jobs: str) -> None:
    if signal.getsignal(signum) is signal.SIG_IGN:
        pytest.skip(f"{signal.Signals(signum).name} is ignored here (nohup?): the run inherits that and must keep it")
    process, out, marker = _start_run(tmp_path, "-j", jobs)
    try:
        _wait_for_a_case(process, out / "r.jsonl")
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=120)  # hang guard
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == status, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    _check_interrupted_reports(out)
    assert _wait_gone(marker) == [], "driver hosts or workers outlived the run"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_on_stdout_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    env = dict(os.environ, PYTHONPATH=ROOT)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "cli", "list", "--specs", specs], cwd=ROOT, env=env,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == "nnvts: error: input/output error: No space left on device"


# --- outputs never destroy inputs -------------------------------------------------------------


def test_report_paths_may_not_overwrite_inputs_or_each_other(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    spec_file = sorted(Path(specs).iterdir())[0]
    before = spec_file.read_bytes()
    result = run_nnvts("run", "--in-process", "--specs", specs, "--json", str(spec_file))
    assert_clean_usage_error(result, "--json", "is an input of this run")
    assert spec_file.read_bytes() == before
    report = tmp_path / "r.xml"
    result = run_nnvts("run", "--in-process", "--specs", specs, "--junit", str(report), "--html", str(report))
    assert_clean_usage_error(result, "--junit and --html name the same file")
    assert not report.exists()


def test_generate_out_may_not_be_the_folder_of_the_specs_it_reads(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    keep = {p.name: p.read_bytes() for p in Path(specs).iterdir()}
    result = run_nnvts("generate", "--specs", specs, "--out", specs)
    assert_clean_usage_error(result, "holds specs being read")
    assert {p.name: p.read_bytes() for p in Path(specs).iterdir()} == keep


def test_an_ignored_signal_stays_ignored_under_nohup(tmp_path: Path) -> None:
    """``nohup nnvts run`` must survive the terminal closing: SIGHUP stays ignored."""
    from vts.run import signals

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals.interrupt_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: no Interrupted raised
            assert signals.received() is None
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


@pytest.mark.parametrize("command", ["info", "run"])
def test_exec_driver_that_does_not_exist_is_a_usage_error(command: str, tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    specs = write_specs(tmp_path / "specs")
    extra = ["--specs", specs] if command == "run" else []
    assert_clean_usage_error(run_nnvts(command, "--driver", "exec:/no/such/program --flag", *extra),
                             "did not start", "/no/such/program")
