"""The terminal: progress with total, rate and ETA; the closing summary; --quiet; NO_COLOR without any escape."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time

import yaml

from tests.conftest import hand_add_float, hand_add_quant8
from tests.report.samples import sample_results
from vts.report.terminal import TerminalReport, color_disabled, format_duration
from vts.run.affinity import default_jobs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _report(**kwargs) -> tuple[TerminalReport, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return TerminalReport(out, err, **kwargs), out, err


def test_progress_line_has_total_rate_eta_and_failures():
    report, _, _ = _report(total=10, progress_interval=0)
    for result in sample_results()[:4]:
        report.add(result)
    line = report.progress_line()
    assert line.startswith("nnvts: 4/10 cases (40%), ")
    assert "/s, ETA " in line and "elapsed" in line and "2 failing" in line
    report.finish(False)


def test_total_is_counted_in_the_background():
    report, _, _ = _report(progress_interval=3600)
    assert "counting total" in report.progress_line()
    report.count_total(lambda: iter(range(1234)))
    deadline = time.monotonic() + 30
    while report.total is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert report.total == 1234
    assert "0/1234 cases" in report.progress_line()
    report.finish(False)


def test_nothing_is_counted_when_no_progress_is_shown():
    for quiet, interval in ((True, 5.0), (False, 0)):
        report, _, _ = _report(quiet=quiet, progress_interval=interval)
        report.count_total(lambda: iter(range(10)))
        assert report._threads == []
        report.finish(False)


def test_plain_progress_lines_go_to_stderr_off_a_tty():
    report, out, err = _report(total=7, progress_interval=0.01)
    assert report.mode == "plain"
    deadline = time.monotonic() + 30
    while "nnvts: 0/7 cases" not in err.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    report.finish(False)
    assert "nnvts: 0/7 cases" in err.getvalue()
    assert "nnvts: 0/7" not in out.getvalue()


def test_closing_summary_has_duration_counts_new_failures_first_and_report_paths():
    written = [("json", "/tmp/x/r.json"), ("html", "/tmp/x/r.html")]
    report, out, _ = _report(progress_interval=0, report_paths=lambda: written)
    for result in sample_results():
        report.add(result)
    report.finish(False)
    text = out.getvalue()
    assert "nnvts: 7 cases in " in text and "2 passed" in text and "1 failed" in text
    assert "new failures (1):" in text
    failures = text[text.index("failures"):]
    assert failures.index("conv.conv") < failures.index("validation/add.x")  # the new failure first
    assert "json:  /tmp/x/r.json" in text and "html:  /tmp/x/r.html" in text
    assert "[bold red]markup[/]" in text  # a driver's rich markup is shown, not interpreted
    assert "\x1b" not in text and "\x00" not in text


def test_quiet_prints_only_the_closing_summary():
    report, out, err = _report(quiet=True, progress_interval=0.01, report_paths=lambda: [("junit", "r.xml")])
    assert report.mode == "quiet"
    for result in sample_results():
        report.add(result)
    time.sleep(0.05)
    report.finish(False)
    assert err.getvalue() == ""
    lines = out.getvalue().splitlines()
    # Issue 43: the closing counts and the reports only; the baseline comparison is no part of -q.
    assert lines[0].startswith("nnvts: 7 cases in ") and len(lines) == 2, lines
    assert lines[-1].strip().startswith("junit:")
    assert "support by operation" not in out.getvalue() and "baseline" not in out.getvalue()


def test_no_line_is_wrapped_into_a_file():
    long_path = "/tmp/" + "x" * 150 + "/r.json"
    report, out, _ = _report(quiet=True, progress_interval=0, report_paths=lambda: [("json", long_path)])
    report.crash_loop = "not run: the driver is in a crash loop " + "(its host died) " * 10
    for result in sample_results():
        report.add(result)
    report.finish(False)
    text = out.getvalue()
    assert long_path in text and report.crash_loop.strip() in text, text


def test_no_color_and_dumb_terminals_are_detected():
    assert color_disabled({"NO_COLOR": "1"}) and color_disabled({"TERM": "dumb"})
    assert not color_disabled({"NO_COLOR": ""}) and not color_disabled({})
    assert format_duration(4.25) == "4.2 s" and format_duration(125) == "2m05s" and format_duration(7380) == "2h03m"


def _specs(tmp_path) -> str:
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    for document in (hand_add_float(), hand_add_quant8()):
        (specs / f"{document['name']}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return str(specs)


def _run_on_a_tty(tmp_path, env_extra: dict[str, str], *args: str) -> bytes:
    """``nnvts run`` with stdout and stderr on a pseudo-terminal; returns every byte it wrote."""
    specs = _specs(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "FORCE_COLOR")}
    env.update(PYTHONPATH=ROOT, TERM="xterm-256color", COLUMNS="120", **env_extra)
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "run", "--in-process", "--driver", "tests.fakes.broken:quant_off_by_2",
         "--specs", specs, "--family", "generated", "--json", str(tmp_path / "r.json"), *args],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    output = _read_all(master, process)
    assert process.wait(timeout=60) == 1, output
    return output


def test_no_color_on_a_tty_writes_no_escape_at_all(tmp_path):
    coloured = _run_on_a_tty(tmp_path, {})
    assert b"\x1b[" in coloured  # the check below can fail: a TTY gets colour by default
    plain = _run_on_a_tty(tmp_path, {"NO_COLOR": "1"})
    assert b"\x1b" not in plain
    assert b"nnvts: 2 cases in " in plain and b"1 failed" in plain
    assert str(tmp_path / "r.json").encode() in plain


def test_no_color_holds_for_the_other_commands_too():
    for command in (["drivers"], ["info"]):
        assert b"\x1b[" in _on_a_tty(command, {})
        assert b"\x1b" not in _on_a_tty(command, {"NO_COLOR": "1"})


def _on_a_tty(args: list[str], env_extra: dict[str, str]) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "FORCE_COLOR")}
    env.update(PYTHONPATH=ROOT, TERM="xterm-256color", COLUMNS="120", **env_extra)
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                               stdout=slave, stderr=slave)
    os.close(slave)
    output = _read_all(master, process)
    assert process.wait(timeout=60) == 0, output
    return output


def _read_all(master: int, process: subprocess.Popen) -> bytes:
    output = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    return output


def test_quiet_cli_prints_the_counts_and_the_report_paths_only(tmp_path):
    specs = _specs(tmp_path)
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="200")
    result = subprocess.run(
        [sys.executable, "-m", "cli", "run", "-q", "--in-process", "--driver", "tests.fakes.broken:quant_off_by_2",
         "--specs", specs, "--family", "generated", "--junit", str(tmp_path / "r.xml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("nnvts: 2 cases in ") and "1 passed, 1 failed" in lines[0]
    workers = default_jobs(256)  # no -j: as many workers as this process may use cores
    assert f" on {workers} worker{'s' if workers > 1 else ''}: " in lines[0]
    assert lines[1].split() == ["junit:", str(tmp_path / "r.xml")]


def test_the_closing_counts_say_how_many_workers_ran():
    for workers, said in ((1, " on 1 worker: "), (3, " on 3 workers: "), (None, " cases in ")):
        out = io.StringIO()
        report = TerminalReport(out, io.StringIO(), progress_interval=0, color=False, interactive=False,
                                workers=workers)
        for result in sample_results()[:2]:
            report.add(result)
        report.finish(False)
        assert said in out.getvalue()
        assert (" worker" in out.getvalue()) == (workers is not None)


def test_progress_ends_with_a_note_while_the_reports_are_written():
    report, _, err = _report(total=3, progress_interval=0)
    for result in sample_results()[:3]:
        report.add(result)
    report.before_reports(writing=True).finish(False)
    assert err.getvalue().startswith("nnvts: 3 cases ran in ") and "writing the reports" in err.getvalue()
    report.finish(False)
    assert err.getvalue().count("writing the reports") == 1


def test_the_terminal_keeps_driver_messages_bounded():
    from vts.results import CaseResult, Verdict

    report, out, _ = _report(progress_interval=0)
    report.add(CaseResult("huge.case", "generated", Verdict.FAILED, "y" * (10 << 20), details=("z" * (10 << 20),)))
    assert len(report.digest.failures[0].reason) < 10_000 and len(report.digest.failures[0].details[0]) < 10_000
    report.finish(False)
    assert len(out.getvalue()) < 20_000


def test_a_run_off_a_tty_prints_plain_progress_lines_with_the_total(tmp_path):
    """Every MUL execution of the slow driver takes 0.3 s, so the run outlasts the 0.05 s interval."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("NO_COLOR", None)
    result = subprocess.run(
        [sys.executable, "-m", "cli", "run", "--in-process", "--driver", "tests.fakes.misbehaving:slow_device",
         "--family", "generated", "-k", "mul_binary.broadcast and not relaxed and not float16",
         "--progress-interval", "0.05", "--json", str(tmp_path / "r.json")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if re.match(r"nnvts: \d+(/3 cases \(\d+%\)| cases "
                                                                      r"\(counting total\)), [\d.,]+/s, ", line)]
    assert lines, result.stderr  # three cases of two 0.3 s executions each: several 0.05 s ticks
    assert "\x1b" not in result.stderr + result.stdout
    assert "nnvts: 3 cases in " in result.stdout


def test_failures_are_grouped_by_reason_each_once_and_skip_only_rows_are_folded():
    from vts.results import CaseResult, Verdict

    report, out, _ = _report(progress_interval=0)
    same = "asynchronous launch returned NONE and the callback INVALID_ARGUMENT"
    for i in range(3):
        report.add(CaseResult(f"validation/add.m{i}", "validation", Verdict.FAILED, same, operations=("ADD",),
                              operand_types=("TENSOR_FLOAT32",)))
    report.add(CaseResult("conv.dilation", "generated", Verdict.FAILED, "output 0 differs at [0, 1]",
                          operations=("CONV_2D",), operand_types=("TENSOR_FLOAT32",)))
    for op in ("LSTM", "TOPK_V2"):
        report.add(CaseResult(f"{op.lower()}.a", "generated", Verdict.SKIPPED, f"unsupported: {op}",
                              operations=(op,), operand_types=("TENSOR_FLOAT16",)))
    report.finish(False)
    text = out.getvalue()
    assert "failures: 4 cases, 2 reasons" in text
    assert text.count(same) == 2 and "3 ×" in text and "(and 2 more)" in text  # its cause, its reason
    assert text.index(same) < text.index("output 0 differs")  # the commonest reason first
    # each failure printed once by its cause and once by its reason, not again in a table
    assert text.count("conv.dilation") == 2
    assert text.index("causes: 4 failing cases, 2 causes") < text.index("failures: 4 cases")
    assert "LSTM" not in text
    assert "not supported: 3 operation/type rows" in " ".join(text.split())


def test_off_a_terminal_the_table_is_printed_whole_however_wide():
    """A CI log has no width: the results table is not folded or cut at 80 columns (rules still are 80)."""
    from vts.results import CaseResult, Verdict

    report, out, _ = _report(progress_interval=0, interactive=False, color=False)
    operation = "BIDIRECTIONAL_SEQUENCE_LSTM_WITH_A_VERY_LONG_NAME"
    for index, verdict in enumerate((Verdict.PASSED, Verdict.FAILED, Verdict.SKIPPED, Verdict.ERROR, Verdict.CRASH,
                                     Verdict.TIMEOUT, Verdict.XFAIL, Verdict.XPASS, Verdict.FLAKY)):
        report.add(CaseResult(name=f"case{index}", family="generated", verdict=verdict, reason="why",
                              operations=(operation,), operand_types=("TENSOR_QUANT8_ASYMM_SIGNED",)))
    report.finish(False)
    lines = out.getvalue().splitlines()
    row = next(line for line in lines if operation in line)  # the name whole, on one line
    assert "TENSOR_QUANT8_ASYMM_SIGNED" in row and len(row) > 80
    assert "xpass" in out.getvalue() and "flaky" in out.getvalue()  # no verdict column dropped
    assert all(len(line) <= 80 for line in lines if set(line) <= {"─", " "} or "failures:" in line)
