"""Small spec texts for the spec tests, with line numbers the tests rely on."""

from __future__ import annotations

import copy
import gzip
from pathlib import Path
from typing import Any

import yaml

#: A valid YAML spec; the comments give the line numbers that error tests assert.
BASE = """\
nnvts: 1
name: t
hal_version: "1.0"
source: {kind: hand, detail: test}
models:
  - name: add
    main:
      operands:
        - {name: a, type: TENSOR_FLOAT32, dims: [2], lifetime: SUBGRAPH_INPUT}
        - {name: b, type: TENSOR_FLOAT32, dims: [2], lifetime: CONSTANT_COPY, value: [1, 2]}
        - {name: act, type: INT32, lifetime: CONSTANT_COPY, value: 0}
        - {name: out, type: TENSOR_FLOAT32, dims: [2], lifetime: SUBGRAPH_OUTPUT}
      operations:
        - {type: ADD, inputs: [a, b, act], outputs: [out]}
      inputs: [a]
      outputs: [out]
    examples:
      - inputs: {a: [1, 2]}
        outputs: {out: [2, 4]}
"""
# line  9: operand a      line 10: operand b      line 11: operand act     line 12: operand out
# line 14: the ADD        line 15: inputs         line 18: example inputs  line 19: example outputs


def base_document() -> dict[str, Any]:
    return yaml.safe_load(BASE)


def write(tmp_path: Path, name: str, text: str | bytes, *, gz: bool = False) -> str:
    path = tmp_path / name
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return str(path)


def model_doc(operands: list[dict[str, Any]], inputs: list[Any], outputs: list[Any],
              examples: list[dict[str, Any]], *, operations: list[dict[str, Any]] | None = None,
              hal: str = "1.0", **model: Any) -> dict[str, Any]:
    """A one-model document around the given main subgraph."""
    return {
        "nnvts": 1, "name": "t", "hal_version": hal, "source": {"kind": "hand", "detail": "test"},
        "models": [{
            "name": "m",
            "main": {"operands": operands, "inputs": inputs, "outputs": outputs,
                     "operations": operations if operations is not None else [
                         {"type": "ADD", "inputs": inputs[:1] * 2 + ["act"], "outputs": outputs}]},
            "examples": examples,
            **model,
        }],
    }


def deep(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)
