"""Failing fuzz inputs on disk: a concrete spec of the valid model plus the edits that broke it.

``DIR/NAME.json`` is an ordinary concrete spec (written by
``vts.spec.writer.render``) holding the valid base model and the one example
its request came from; ``DIR/NAME.fuzz`` (JSON, not a spec suffix, so spec
loaders skip it) holds the model edits and the request edits.  The
``fuzz_replay`` family finds the ``.fuzz`` file next to a spec and re-sends
exactly that input, so ``nnvts run --specs DIR -k NAME`` fails again on the
driver that failed.  NAME is ``fuzz_KIND_HASH``, the hash of the input:
the same failing input always gets the same name.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vts.families.fuzz_replay.edits import Edit, apply_edits

SIDECAR_SUFFIX = ".fuzz"
FORMAT = "nnvts-fuzz-input/1"


@dataclass(frozen=True, slots=True)
class RequestEdits:
    executor: str  # "sync" or "async"
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class FuzzCase:
    """A base model (by seed label) plus edits: enough to rebuild one fuzzed input."""

    base: str
    model_edits: tuple[Edit, ...]
    requests: tuple[RequestEdits, ...]

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "model_edits": [e.to_json() for e in self.model_edits],
                "requests": [{"executor": r.executor, "edits": [e.to_json() for e in r.edits]}
                             for r in self.requests]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FuzzCase:
        return cls(str(data["base"]), tuple(Edit.from_json(e) for e in data["model_edits"]),
                   tuple(RequestEdits(str(r["executor"]), tuple(Edit.from_json(e) for e in r["edits"]))
                         for r in data["requests"]))

    def digest(self) -> str:
        return hashlib.sha1(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:10]


def build_input(case: FuzzCase, model: Any, request: Any) -> Any:
    """The fuzzed ``FuzzInput``: copies of the base model and request with the edits applied."""
    from vts.families.fuzz_replay.oracle import FuzzInput

    return FuzzInput(edited_model(model, case.model_edits), edited_requests(request, case.requests))


def edited_model(model: Any, edits: Sequence[Edit]) -> Any:
    if not edits:
        return model  # drivers copy what they keep, so an unedited base can be shared
    fuzzed = model.copy()
    apply_edits(fuzzed, edits)
    return fuzzed


def edited_requests(request: Any, items: Sequence[RequestEdits]) -> tuple[tuple[str, Any], ...]:
    requests = []
    for item in items:
        edited = request
        if item.edits:
            edited = _copy_request(request)
            apply_edits(edited, item.edits)
        requests.append((item.executor, edited))
    return tuple(requests)


def _copy_request(request: Any) -> Any:
    """``Request.copy`` without deepcopy (a fuzz run copies millions of requests built by the harness)."""
    from vts.hal.types import DataLocation, Request, RequestArgument

    def arguments(items: Any) -> list[Any]:
        return [RequestArgument(a.has_no_value, DataLocation(a.location.pool_index, a.location.offset,
                                                             a.location.length), list(a.dimensions)) for a in items]

    return Request(arguments(request.inputs), arguments(request.outputs), list(request.pools))


def sidecar_path(spec_path: str) -> str:
    for suffix in (".json.gz", ".yaml.gz", ".yml.gz", ".json", ".yaml", ".yml"):
        if spec_path.endswith(suffix):
            return spec_path[: -len(suffix)] + SIDECAR_SUFFIX
    return spec_path + SIDECAR_SUFFIX


def save_failure(save_dir: str, seed: Any, case: FuzzCase, kind: str, message: str,
                 found_by: dict[str, Any]) -> str:
    """Write the spec and its edits; returns the spec path (the name is stable for the input)."""
    from vts.spec.writer import render

    name = f"fuzz_{kind}_{case.digest()}"
    model_doc = dict(seed.document)
    model_doc["examples"] = [seed.document["examples"][0]]
    model_doc.pop("expect_failure", None)
    document = {
        "nnvts": 1,
        "name": name,
        "hal_version": seed.spec_hal_version,
        "description": f"nnvts fuzz: {kind}: {message}"[:2000],
        "source": {"kind": "imported", "detail": f"nnvts fuzz input from {seed.label} ({seed.spec_path}); "
                   f"edits in {name}{SIDECAR_SUFFIX}"},
        "models": [model_doc],
    }
    os.makedirs(save_dir, exist_ok=True)
    spec_path = os.path.join(save_dir, name + ".json")
    _write(spec_path, render(document))
    sidecar = {"format": FORMAT, "kind": kind, "message": message, **case.to_json(), "found_by": found_by}
    _write(sidecar_path(spec_path), json.dumps(sidecar, indent=1) + "\n")
    return spec_path


def load_sidecar(path: str) -> tuple[FuzzCase, dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file")
    return FuzzCase.from_json(data), data


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def edits_text(edits: Sequence[Edit]) -> str:
    return "; ".join(str(e) for e in edits) or "(none)"
