"""MobileNet-v1 on the reference driver vs ONNX Runtime and a plain numpy baseline, in one process.

Run from the repository root: ``.venv/bin/python -m bench.mobilenet`` (see
bench/README.md for the options and how to read the table).

Workloads: the float32 and the uint8 MobileNet-v1 of ``vts.model.builtin.mobilenet``
(same weights for every implementation).  Implementations:

- ``reference``: the nnvts reference driver, in process, timed around
  ``prepared_model.execute(request)`` (request validation, reading the
  inputs from shared memory, the graph, writing the outputs back), the way
  the harness calls it;
- ``onnxruntime``: the same network exported by ``bench.onnx_export``, one
  intra-op and one inter-op thread, sequential execution, timed around
  ``session.run``;
- ``numpy-int32`` (uint8 model only): ``bench.numpy_quant``, a naive but
  reasonable numpy interpreter;
- ``numpy 1x1 matmuls only`` and ``numpy arithmetic floor`` (float model
  only): ``bench.numpy_floor``, the multiply-adds alone, which no numpy
  implementation can go below.

Runs are interleaved (one run of each implementation per round), so a
machine whose load changes during the benchmark skews every implementation
alike and the ratios stay meaningful; the table shows medians after warm-up.
The reference and ONNX Runtime share their rounds; the numpy floors and the
numpy baseline get rounds of their own, each again with the reference (its
ratio on their lines is to the reference's median of those rounds).

BLAS threads: ONNX Runtime is pinned to one thread, so numpy's BLAS is too
(``OPENBLAS_NUM_THREADS=1`` unless the variable is already set), before
numpy is imported.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # only when run (importing this module, e.g. from tests, changes nothing)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nnvts.drivers.reference import create_device
from vts.hal.enums import OperandType
from vts.model.builtin.mobilenet import build_mobilenet_v1_float, build_mobilenet_v1_quant8
from vts.model.casemodel import CaseModel, build_request, close_model, dtype_of, to_hal_model

try:
    import onnxruntime as ort
except ImportError:  # optional: main() explains; the reference and numpy peers work without it
    ort = None

from bench.numpy_floor import floor_runners
from bench.numpy_quant import NumpyQuant8
from bench.prefix import prefix, single

Runner = Callable[[], np.ndarray | None]  # the floors of bench.numpy_floor return nothing


@dataclass
class Implementation:
    name: str
    run: Runner
    close: Callable[[], None] = lambda: None


def reference(model: CaseModel) -> Implementation:
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


def ort_session(model: CaseModel) -> Implementation:
    from bench.onnx_export import export

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(export(model).SerializeToString(), options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: example_input(model)}  # NHWC, as NNAPI (and the exported graph) has it
    quantized = is_quantized(model)

    def run() -> np.ndarray:
        return session.run(None, feed)[0]

    return Implementation("onnxruntime QLinear" if quantized else "onnxruntime", run)


def numpy_baseline(model: CaseModel) -> Implementation:
    interpreter = NumpyQuant8(model)
    image = example_input(model)
    return Implementation("numpy int32 baseline", lambda: interpreter.run(image))


def example_input(model: CaseModel) -> np.ndarray:
    data = model.examples[0].inputs[0]
    return data.value.reshape(data.dims)


def is_quantized(model: CaseModel) -> bool:
    return model.main.operands[model.main.inputs[0]].type == OperandType.TENSOR_QUANT8_ASYMM


@dataclass
class Samples:
    """Per-run wall and CPU seconds of one implementation."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def time_runs(impls: list[Implementation], runs: int, warmup: int) -> dict[str, Samples]:
    """Seconds per run of each implementation, interleaved round by round after ``warmup`` rounds.

    CPU time is the calling thread's (``time.thread_time``): every implementation here computes in the
    calling thread (one ORT thread, one BLAS thread), so on a machine shared with other jobs it is the
    steadier measure; wall time is what a user waits.
    """
    samples = {impl.name: Samples() for impl in impls}
    for round_ in range(warmup + runs):
        for impl in impls:
            cpu, wall = time.thread_time(), time.perf_counter()
            impl.run()
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            if round_ >= warmup:
                samples[impl.name].wall.append(wall)
                samples[impl.name].cpu.append(cpu)
    return samples


def describe_difference(model: CaseModel, ours: np.ndarray, theirs: np.ndarray, top: bool = True) -> str:
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    top_text = f"; top-1 {'agrees' if ours.argmax() == theirs.argmax() else 'DIFFERS'}" if top else ""
    if is_quantized(model):
        return (f"max |diff| {diff.max():.0f} steps, {int((diff > 0).sum())}/{diff.size} differ, "
                f"{int((diff > 1).sum())} by more than 1{top_text}")
    return f"max |diff| {diff.max():.3g} (largest value {np.abs(theirs).max():.3g}){top_text}"


def layer_report(model: CaseModel, peer: Callable[[CaseModel], Implementation]) -> list[str]:
    """The reference against ``peer`` at every operation: that layer alone (fed the reference's own
    intermediate tensor), and the whole network up to it (drift accumulated through the layers)."""
    lines = []
    current = example_input(model)
    for index in range(len(model.main.operations)):
        alone = single(model, index, current)
        upto = prefix(model, index + 1)
        name = upto.main.operands[upto.main.outputs[0]].name
        parts = [reference(alone), peer(alone), reference(upto), peer(upto)]
        try:
            ours, theirs, ours_upto, theirs_upto = (impl.run() for impl in parts)
            lines.append(f"  {index + 1:3d} {name:<14} alone: {describe_difference(alone, ours, theirs, top=False)}"
                         f" | so far: {describe_difference(upto, ours_upto, theirs_upto, top=False)}")
            current = ours
        finally:
            for impl in parts:
                impl.close()
    return lines


Row = tuple[str, str, Samples, Samples]


def print_table(rows: list[Row]) -> None:
    """One line per (workload, implementation); ``reference / this`` > 1 means the reference is slower.

    Each row carries its own samples and the reference's samples of the same rounds.
    """
    header = (f"{'workload':<27} {'implementation':<21} {'runs':>4} {'wall ms':>8} {'cpu ms':>8} "
              f"{'ref/this (wall)':>16} {'ref/this (cpu)':>15}")
    print(header)
    print("-" * len(header))
    last = None
    for workload, name, samples, ref in rows:
        label = workload if workload != last else ""
        last = workload
        wall, cpu = statistics.median(samples.wall), statistics.median(samples.cpu)
        print(f"{label:<27} {name:<21} {len(samples.wall):4d} {wall * 1e3:8.2f} {cpu * 1e3:8.2f} "
              f"{statistics.median(ref.wall) / wall:15.2f}x {statistics.median(ref.cpu) / cpu:14.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="input edge (224: MobileNet-v1-224)")
    parser.add_argument("--runs", type=int, default=20, help="timed rounds (median reported)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--baseline-runs", type=int, default=3,
                        help="timed rounds of the (slow) numpy baseline, run after the others")
    parser.add_argument("--only", choices=("float", "quant8"), help="one workload only")
    parser.add_argument("--layers", action="store_true",
                        help="also compare the reference with ONNX Runtime at every operation (slow)")
    args = parser.parse_args(argv)
    if ort is None:
        print("bench needs onnx and onnxruntime: .venv/bin/pip install -e '.[bench]'", file=sys.stderr)
        return 2

    print(f"python {platform.python_version()}, numpy {np.__version__}, onnxruntime {ort.__version__}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        print("note: BLAS may use several threads; the cpu column counts the calling thread only, read wall times "
              "(and ONNX Runtime still has one thread)")
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
            for impl in impls:
                rows.append((workload, impl.name, times[impl.name], times["reference"]))
            if kind == "float":
                # Rounds of their own, again with the reference, so that the floors' memory traffic does not
                # change the rounds that compare the reference with ONNX Runtime.
                floors = [Implementation(name, run) for name, run in floor_runners(model)]
                floor_times = time_runs([impls[0], *floors], args.runs, args.warmup)
                for impl in floors:
                    rows.append((workload, impl.name, floor_times[impl.name], floor_times["reference"]))
            if kind == "quant8":
                baseline = numpy_baseline(model)
                result = baseline.run()
                notes.append(f"{workload}: reference vs {baseline.name}: "
                             f"{describe_difference(model, outputs['reference'], result)}")
                slow = time_runs([impls[0], baseline], args.baseline_runs, 1)
                # Its own rounds (the baseline is slow): the ratio uses the reference's median of those rounds.
                rows.append((workload, baseline.name, slow[baseline.name], slow["reference"]))
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
