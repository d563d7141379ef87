"""The plugin report script (tools/plugin_report.py): its page block from the JSON-lines reports present."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _tool():
    spec = importlib.util.spec_from_file_location("tools.plugin_report", TOOLS / "plugin_report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _write(path: Path, cases: list[dict]) -> None:
    lines = [json.dumps({"header": {}})] + [json.dumps({"case": case}) for case in cases]
    path.write_text("\n".join(lines) + "\n")


def test_block_counts_golden_cases_run_on_the_device_and_names_findings_with_an_example(tmp_path, monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "OUT", tmp_path)
    failed = {"name": "exp_elementwise.float32", "family": "generated", "verdict": "failed",
              "reason": "sync execution: output: 3/5 elements out of tolerance; worst at [3]: expected 7.38",
              "operations": ["EXP"], "operand_types": ["TENSOR_FLOAT32"]}
    passed = {"name": "add_binary.float32", "family": "generated", "verdict": "passed", "reason": "",
              "operations": ["ADD"], "operand_types": ["TENSOR_FLOAT32"]}
    skipped = {"name": "lstm.float32", "family": "generated", "verdict": "skipped", "reason": "unsupported: LSTM",
               "operations": ["LSTM"], "operand_types": ["TENSOR_FLOAT32"]}
    _write(tmp_path / "plugin-onnxruntime-qnn-generated.jsonl", [failed, passed, skipped, dict(skipped, name="x")])
    (tmp_path / "plugin-onnxruntime-qnn-shards.json").write_text(json.dumps({"shard": "1/50"}))
    lines = tool.render("onnxruntime-qnn", ask=False)
    text = "\n".join(lines)
    assert "--driver onnxruntime --driver-option ep=qnn" in text
    assert "| generated (bundled, all) | 4 | 1 | 1 | 2 | 0 | 0 | 0 | 50% |" in text
    assert "`exp_elementwise.float32`" in text and "| EXP | TENSOR_FLOAT32 |" in text
    assert "| LSTM | TENSOR_FLOAT32 | 2 | unsupported: LSTM |" in text
    assert tool.render("litert-xnnpack", ask=False) == []  # no report: no block
