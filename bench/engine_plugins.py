"""QNN's HTP through the ONNX Runtime driver: preparation per model (cache off, cold, warm), execution, probe cost.

    .venv/bin/python -m bench.engine_plugins [--specs generated_tests] [--limit 96] [--runs 5]
    .venv/bin/python -m bench.engine_plugins --specs mobilenet:96     # the built-in MobileNet-v1 pair

Needs ``nnvts[qnn]``.  Three phases, each in a process of its own (as a
corpus run's driver hosts are: a process that compiled a graph may keep
what it compiled, which would flatter a second preparation in the same
process), over the golden models of the first ``--limit`` spec files whose
every operation the HTP takes:

- **off** (``cache=off``): ``unsupported_reasons`` on the fresh device,
  divided by the model's operation count (the per-operation support probe:
  one session of each operation alone on the HTP), then ``prepare_model``
  (translate + compile), then the median of ``--runs`` executions of the
  model's first example through the HAL (``prepared.execute``);
- **cold**: ``prepare_model`` with an empty cache directory (compile, write
  the EP context, authenticate it);
- **warm**: ``prepare_model`` in a new process on that directory
  (authenticate and load the context: no compile).

Figures are medians and totals over the models, with ``uptime`` first: a
shared machine's load moves them; compare the columns of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _golden_models(specs: str, limit: int):
    from vts.model.casemodel import parse_spec, to_hal_model
    from vts.spec.loader import load_file

    if specs.startswith("mobilenet:"):  # the built-in MobileNet-v1 pair at that input size: real-sized graphs
        from vts.model.builtin.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8

        size = int(specs.partition(":")[2])
        for build in (build_mobilenet_v1_float, build_mobilenet_v1_quant8):
            model = build(size)
            yield model, to_hal_model(model)
        return
    for path in sorted(Path(specs).glob("*.json"))[:limit]:
        try:
            models = parse_spec(load_file(str(path)).document)
        except Exception:  # a spec this harness cannot read here: not the subject
            continue
        for model in models:
            if not model.examples:
                continue
            try:
                hal = to_hal_model(model)
            except Exception:  # a model this device cannot be given (a vendor extension)
                continue
            yield model, hal


def phase(name: str, specs: str, limit: int, runs: int, cache: str) -> dict[str, dict[str, float]]:
    """One phase in this process: per model case name, its figures in seconds."""
    import nnvts.drivers.onnxruntime as ort_driver
    from vts.model.casemodel import build_request, close_model

    device = ort_driver.create_device(ep="qnn", cache="off" if name == "off" else cache)
    figures: dict[str, dict[str, float]] = {}
    for model, hal in _golden_models(specs, limit):
        row: dict[str, float] = {}
        try:
            if name == "off":
                start = time.perf_counter()
                reasons = device.unsupported_reasons(hal)
                row["probe_per_op"] = (time.perf_counter() - start) / max(1, len(hal.main.operations))
                if any(reasons):
                    continue
            start = time.perf_counter()
            prepared = device.prepare_model(hal)
            row[name] = time.perf_counter() - start
        except Exception:  # refused at preparation: counted by nnvts run, not timed here
            continue
        finally:
            close_model(hal)
        if name == "off":
            built = build_request(model, model.examples[0])
            try:
                times = []
                for _ in range(runs):
                    start = time.perf_counter()
                    prepared.execute(built.request)
                    times.append(time.perf_counter() - start)
                row["execute"] = statistics.median(times)
            except Exception:
                continue
            finally:
                built.close()
        figures[model.case_name()] = row
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="generated_tests", help="a folder of spec files, or mobilenet:SIZE")
    parser.add_argument("--limit", type=int, default=96, help="spec files (sorted by name)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--phase", choices=("off", "cold", "warm"), help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(phase(args.phase, args.specs, args.limit, args.runs, args.cache)))
        return 0
    print("uptime:", os.popen("uptime").read().strip())
    merged: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("off", "cold", "warm"):
            done = subprocess.run([sys.executable, "-m", "bench.engine_plugins", "--phase", name, "--specs", args.specs,
                                   "--limit", str(args.limit), "--runs", str(args.runs), "--cache", scratch],
                                  capture_output=True, text=True, check=True)
            for case, row in json.loads(done.stdout.strip().splitlines()[-1]).items():
                merged.setdefault(case, {}).update(row)
    rows = [row for row in merged.values() if {"off", "cold", "warm", "execute"} <= set(row)]
    print(f"{len(rows)} models from the first {args.limit} spec files of {args.specs}, every operation on the HTP")
    labels = {"probe_per_op": "support probe, per operation", "off": "prepare, cache off (compile)",
              "cold": "prepare, cache cold (compile + store)", "warm": "prepare, cache warm (load, new process)",
              "execute": "execute one case (HAL execute)"}
    print(f"{'':42} {'median':>10} {'p90':>10} {'total':>10}")
    for key, label in labels.items():
        values = sorted(row[key] for row in rows)
        if values:
            p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
            print(f"{label:42} {statistics.median(values) * 1e3:8.1f}ms {p90 * 1e3:8.1f}ms {sum(values):9.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
