"""MobileNet-v1 on the reference driver vs ONNX Runtime and a plain numpy baseline, in one process.

Run from the repository root: ``.venv/bin/python -m bench.mobilenet`` (see
bench/README.md for the options and how to read the table).

Workloads: the float32 and the uint8 MobileNet-v1 of ``vts.models.mobilenet``
(same weights for every implementation).  Implementations:

- ``reference``: the nnvts reference driver, in process, timed around
  ``prepared_model.execute(request)`` (request validation, reading the
  inputs from shared memory, the graph, writing the outputs back), the way
  the harness calls it;
- ``onnxruntime``: the same network exported by ``bench.onnx_export``, one
  intra-op and one inter-op thread, sequential execution, timed around
  ``session.run``;
- ``numpy-int32`` (uint8 model only): ``bench.numpy_quant``, a naive but
  reasonable numpy interpreter.

Runs are interleaved (one run of each implementation per round), so a
machine whose load changes during the benchmark skews every implementation
alike and the ratios stay meaningful; the table shows medians after warm-up.

BLAS threads: ONNX Runtime is pinned to one thread, so numpy's BLAS is too
(``OPENBLAS_NUM_THREADS=1`` unless the variable is already set), before
numpy is imported.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drivers.reference import create_device
from vts.hal.enums import OperandType
from vts.models.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8
from vts.testmodel import TestModel, build_request, close_model, dtype_of, to_hal_model

try:
    import onnxruntime as ort

    from bench.onnx_export import export, nchw_input
except ImportError as error:  # pragma: no cover - depends on the environment
    sys.exit(f"bench needs onnx and onnxruntime ({error}): pip install -e .[bench]")

from bench.numpy_quant import NumpyQuant8
from bench.prefix import prefix

Runner = Callable[[], np.ndarray]


@dataclass
class Implementation:
    name: str
    run: Runner
    close: Callable[[], None] = lambda: None


def reference(model: TestModel) -> Implementation:
    """The reference driver, prepared once; each run executes the same request."""
    device = create_device()
    hal_model = to_hal_model(model)
    prepared = device.prepare_model(hal_model)
    built = build_request(model, model.examples[0])
    output = model.main.operands[model.main.outputs[0]]
    count = int(np.prod(output.dims))

    def run() -> np.ndarray:
        prepared.execute(built.request)
        return built.read_output(0, dtype_of(output.type), count).reshape(output.dims)

    def close() -> None:
        built.close()
        close_model(hal_model)

    return Implementation("reference", run, close)


def ort_session(model: TestModel) -> Implementation:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(export(model).SerializeToString(), options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: nchw_input(example_input(model))}
    quantized = is_quantized(model)

    def run() -> np.ndarray:
        out = session.run(None, feed)[0]
        return out.transpose(0, 2, 3, 1) if out.ndim == 4 else out

    return Implementation("onnxruntime QLinear" if quantized else "onnxruntime", run)


def numpy_baseline(model: TestModel) -> Implementation:
    interpreter = NumpyQuant8(model)
    image = example_input(model)
    return Implementation("numpy int32 baseline", lambda: interpreter.run(image))


def example_input(model: TestModel) -> np.ndarray:
    data = model.examples[0].inputs[0]
    return data.value.reshape(data.dims)


def is_quantized(model: TestModel) -> bool:
    return model.main.operands[model.main.inputs[0]].type == OperandType.TENSOR_QUANT8_ASYMM


def time_runs(impls: list[Implementation], runs: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per run of each implementation, interleaved round by round after ``warmup`` rounds."""
    times: dict[str, list[float]] = {impl.name: [] for impl in impls}
    for round_ in range(warmup + runs):
        for impl in impls:
            start = time.perf_counter()
            impl.run()
            elapsed = time.perf_counter() - start
            if round_ >= warmup:
                times[impl.name].append(elapsed)
    return times


def describe_difference(model: TestModel, ours: np.ndarray, theirs: np.ndarray) -> str:
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    top = f"top-1 {'agrees' if ours.argmax() == theirs.argmax() else 'DIFFERS'}"
    if is_quantized(model):
        return (f"max |diff| {diff.max():.0f} steps, {int((diff > 0).sum())}/{diff.size} elements differ, "
                f"{int((diff > 1).sum())} by more than 1; {top}")
    return f"max |diff| {diff.max():.3g} (largest value {np.abs(theirs).max():.3g}); {top}"


def layer_report(model: TestModel, peer: Callable[[TestModel], Implementation]) -> list[str]:
    """The reference against ``peer`` after each operation (cumulative drift through the network)."""
    lines = []
    for count in range(1, len(model.main.operations) + 1):
        part = prefix(model, count)
        ours, theirs = reference(part), peer(part)
        try:
            name = part.main.operands[part.main.outputs[0]].name
            lines.append(f"  {count:3d} {name:<16} {describe_difference(part, ours.run(), theirs.run())}")
        finally:
            ours.close()
            theirs.close()
    return lines


Row = tuple[str, str, list[float], float]


def print_table(rows: list[Row]) -> None:
    """One line per (workload, implementation); ``reference / this`` > 1 means the reference is slower."""
    header = (f"{'workload':<28} {'implementation':<22} {'runs':>4} {'median ms':>10} {'min ms':>9} "
              f"{'reference / this':>17}")
    print(header)
    print("-" * len(header))
    last = None
    for workload, name, samples, ratio in rows:
        label = workload if workload != last else ""
        last = workload
        print(f"{label:<28} {name:<22} {len(samples):4d} {statistics.median(samples) * 1e3:10.2f} "
              f"{min(samples) * 1e3:9.2f} {ratio:16.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="input edge (224: MobileNet-v1-224)")
    parser.add_argument("--runs", type=int, default=20, help="timed rounds (median reported)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--baseline-runs", type=int, default=3,
                        help="timed rounds of the (slow) numpy baseline, run after the others")
    parser.add_argument("--only", choices=("float", "quant8"), help="one workload only")
    parser.add_argument("--layers", action="store_true",
                        help="also compare the reference with ONNX Runtime after every operation")
    args = parser.parse_args(argv)

    print(f"python {platform.python_version()}, numpy {np.__version__}, onnxruntime {ort.__version__}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    builders = {"float": build_mobilenet_v1_float, "quant8": build_mobilenet_v1_quant8}
    rows: list[Row] = []
    notes: list[str] = []
    for kind, build in builders.items():
        if args.only and kind != args.only:
            continue
        model = build(args.size)
        workload = model.name
        impls = [reference(model), ort_session(model)]
        try:
            outputs = {impl.name: impl.run() for impl in impls}
            times = time_runs(impls, args.runs, args.warmup)
            peer = impls[1].name
            notes.append(f"{workload}: reference vs {peer}: "
                         f"{describe_difference(model, outputs['reference'], outputs[peer])}")
            ref_median = statistics.median(times["reference"])
            for impl in impls:
                rows.append((workload, impl.name, times[impl.name], ref_median / statistics.median(times[impl.name])))
            if kind == "quant8":
                baseline = numpy_baseline(model)
                result = baseline.run()
                notes.append(f"{workload}: reference vs {baseline.name}: "
                             f"{describe_difference(model, outputs['reference'], result)}")
                slow = time_runs([impls[0], baseline], args.baseline_runs, 1)
                # Its own rounds (the baseline is slow): the ratio uses the reference's median of those rounds.
                rows.append((workload, baseline.name, slow[baseline.name],
                             statistics.median(slow["reference"]) / statistics.median(slow[baseline.name])))
        finally:
            for impl in impls:
                impl.close()
        if args.layers:
            notes.append(f"{workload}: after each operation, reference vs onnxruntime:")
            notes.extend(layer_report(model, ort_session))
    print()
    print_table(rows)
    print()
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
