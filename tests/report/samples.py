"""Results for report tests: every verdict, comparison detail, flaky attempts, baselines, and hostile strings."""

from __future__ import annotations

from vts.report.files import FileReports
from vts.results import CaseResult, Verdict

#: What a driver can put in a message: C0 controls, an ANSI escape, a lone surrogate, a CDATA end,
#: markup that would close the page's script element, noncharacters, and rich console markup.
HOSTILE = ("nul\x00 bell\x07 esc\x1b[31mred\x1b[0m lone\ud800surrogate ]]> </script><script>alert(1)</script>"
           " <!-- \ufffe\uffff [bold red]markup[/] & \"quotes\" 'single' \x85nel")

COMPARISON = [{
    "operand": "out", "type": "TENSOR_FLOAT32", "bad": 3, "total": 4,
    "worst": [{"index": [0, 1], "expected": 1.5, "actual": 1.6, "error": 0.1, "tolerance": 1e-5},
              {"index": [1, 1], "expected": 2.0, "actual": "nan", "error": "inf", "tolerance": 1e-5}],
    "histogram": {"edges": [0.0, 0.05, 0.1], "counts": [2, 1], "nonfinite": 1},
}]


def sample_results() -> list[CaseResult]:
    return [
        CaseResult("add.add", "generated", Verdict.PASSED, duration=0.01, operations=("ADD",),
                   operand_types=("TENSOR_FLOAT32",), spec="specs/add.json"),
        CaseResult("conv.conv", "generated", Verdict.FAILED, "sync execution: out: 3/4 elements out of tolerance",
                   duration=0.5, details=("sync execution: out: 3/4 elements out of tolerance; worst at [0, 1]",),
                   operations=("CONV_2D",), operand_types=("TENSOR_FLOAT32",),
                   extra={"comparison": COMPARISON, "baseline": "new-failure"}),
        CaseResult("lstm.lstm", "generated", Verdict.SKIPPED, "unsupported: LSTM", operations=("LSTM",),
                   operand_types=("TENSOR_FLOAT32",)),
        CaseResult("validation/add.x", "validation", Verdict.CRASH, "driver crashed: killed by SIGSEGV",
                   details=("stderr line 1: segfault in acme_npu_exec", "stderr line 2"), duration=0.2,
                   operations=("ADD",), operand_types=("TENSOR_QUANT8_ASYMM",)),
        CaseResult("mul.flaky", "generated", Verdict.PASSED, duration=0.3, operations=("MUL",),
                   operand_types=("TENSOR_FLOAT32",), extra={"baseline": "fixed", "attempts": [
                       {"verdict": "failed", "reason": "out: 1/4 elements out of tolerance", "duration": 0.1},
                       {"verdict": "passed", "reason": "", "duration": 0.2}]}),
        CaseResult("hostile." + HOSTILE[:40], "generated", Verdict.ERROR, HOSTILE, details=(HOSTILE, HOSTILE),
                   operations=("ADD",), operand_types=("TENSOR_FLOAT32",),
                   extra={"baseline": "still-failing", HOSTILE: [HOSTILE]}),
        CaseResult("timeout.case", "fenced", Verdict.TIMEOUT, "no answer within 60 s", duration=60.0,
                   operations=("ADD",), operand_types=("TENSOR_FLOAT32",)),
    ]


HEADER = {"driver": {"ref": "acme", "name": "acme-npu " + HOSTILE, "version": "1.2.3", "type": "ACCELERATOR",
                     "isolation": "process"},
          "selection": {"specs": ["generated_tests"], "keyword": "add or conv"},
          "nnvts_version": "0.1.0", "started": "2026-11-24T23:00:00+00:00", "host": "farm-7",
          "argv": ["run", "--driver", "acme"], "seed": 1234}


def write_reports(tmp_path, results=None, interrupted: bool = False, header=None, **paths) -> dict[str, str]:
    """Run ``results`` through a ``FileReports`` sink; returns the paths of json, junit, html and jsonl."""
    files = {"json": str(tmp_path / "r.json"), "junit": str(tmp_path / "r.xml"), "html": str(tmp_path / "r.html"),
             "jsonl": str(tmp_path / "r.jsonl"), **paths}
    sink = FileReports(HEADER if header is None else header, jsonl=files["jsonl"], json_path=files["json"],
                       junit=files["junit"], html_path=files["html"])
    for result in sample_results() if results is None else results:
        sink.add(result)
    sink.finish(interrupted)
    return files
