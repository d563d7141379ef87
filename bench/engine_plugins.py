"""QNN's HTP through the ONNX Runtime driver: preparation per model (cache cold, warm, off), execution, probe cost.

    .venv/bin/python -m bench.engine_plugins [--specs generated_tests] [--limit 40] [--runs 5]

Needs ``nnvts[qnn]``.  For each golden model of the first ``--limit`` spec
files the device runs (every operation supported):

- **probe**: ``unsupported_reasons`` on a fresh device (its per-operation
  probe cache empty), divided by the model's operation count: what the
  per-operation support probe costs, one forked one-operation session each;
- **prepare, cache off / cold / warm**: ``prepare_model`` with
  ``cache=off``; with an empty cache directory (compile, write the EP
  context); again with a fresh device on that directory (authenticate and
  load the context, no compile);
- **execute**: the median of ``--runs`` executions of the model's first
  example through the HAL (``prepared.execute``).

Figures are medians over models, printed with ``uptime`` first: a shared
machine's load changes them; compare the columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="generated_tests")
    parser.add_argument("--limit", type=int, default=40, help="spec files (sorted by name)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    print("uptime:", os.popen("uptime").read().strip())

    import drivers.onnxruntime as ort_driver
    from drivers.onnxruntime.cache import SessionCache
    from drivers.onnxruntime.device import OnnxRuntimeDevice
    from vts.model.casemodel import build_request, close_model, parse_spec, to_hal_model
    from vts.spec.loader import load_file

    rows: dict[str, list[float]] = {k: [] for k in ("probe_per_op", "off", "cold", "warm", "execute")}
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        off = ort_driver.create_device(ep="qnn", cache="off")
        provider = off.provider

        def device() -> OnnxRuntimeDevice:
            """A device with empty probe caches, on the shared compile cache (no provider check session)."""
            return OnnxRuntimeDevice(provider, SessionCache(provider, cache))
        for path in sorted(Path(args.specs).glob("*.json"))[:args.limit]:
            try:
                models = parse_spec(load_file(str(path)).document)
            except Exception:  # a spec this harness cannot build here: not the subject
                continue
            for model in models:
                if not model.examples:
                    continue
                hal = to_hal_model(model)
                try:
                    fresh = device()
                    probe_s, reasons = _timed(lambda: fresh.unsupported_reasons(hal))  # noqa: B023
                    if any(reasons):
                        continue
                    off_s, _ = _timed(lambda: off.prepare_model(hal))  # noqa: B023
                    cold_s, _ = _timed(lambda: fresh.prepare_model(hal))  # noqa: B023
                    warm_device = device()
                    warm_s, prepared = _timed(lambda: warm_device.prepare_model(hal))  # noqa: B023
                except Exception as error:  # a model the device refuses: counted by nnvts run, not here
                    print(f"  {model.case_name()}: not timed ({type(error).__name__}: {str(error)[:120]})")
                    continue
                finally:
                    close_model(hal)
                built = build_request(model, model.examples[0])
                try:
                    times = []
                    for _ in range(args.runs):
                        seconds, _ = _timed(lambda: prepared.execute(built.request))  # noqa: B023
                        times.append(seconds)
                except Exception as error:
                    print(f"  {model.case_name()}: not timed ({type(error).__name__}: {str(error)[:120]})")
                    continue
                finally:
                    built.close()
                rows["probe_per_op"].append(probe_s / max(1, len(hal.main.operations)))
                rows["off"].append(off_s)
                rows["cold"].append(cold_s)
                rows["warm"].append(warm_s)
                rows["execute"].append(statistics.median(times))
    count = len(rows["off"])
    print(f"{count} models from the first {args.limit} spec files of {args.specs}, all operations on the HTP")
    labels = {"probe_per_op": "support probe, per operation", "off": "prepare, cache off",
              "cold": "prepare, cache cold (compile + store)", "warm": "prepare, cache warm (load)",
              "execute": "execute one case"}
    print(f"{'':40} {'median':>10} {'p90':>10} {'total':>10}")
    for key, label in labels.items():
        values = sorted(rows[key])
        if not values:
            continue
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        print(f"{label:40} {statistics.median(values) * 1e3:8.1f}ms {p90 * 1e3:8.1f}ms {sum(values):9.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
