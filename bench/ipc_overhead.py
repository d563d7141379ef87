"""What running a driver in its own process costs per execution, measured against running it in process.

Run standalone: ``.venv/bin/python bench/ipc_overhead.py [--quick]``.  It
prints one table; every row is measured in this one run, in and out of
process alternately (batch by batch, median of the batches), so machine
noise hits both sides alike and the comparison is a ratio, not an absolute
number from another day.

Rows:

* empty call (``get_type``): a round trip with no driver work.
* 2-element ADD, synchronous: the fixed cost of a call (encoding, two
  context switches, decoding).  Target: under 100 us extra.
* 16 MB inputs (two float32 inputs of 4M elements, 16 MB output), pools
  reused across executions: tensor data must not travel through the
  socket, so out of process must cost under 2x in process.
* the same with fresh pools for every execution, as the test families use
  them: the host maps each new pool once (the first touch of its pages is
  part of the price).
* the C sample driver, out of process only (when built): the protocol's
  floor with a host that has no interpreter (empty call and 2-element ADD).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from nnvts.drivers.reference import create_device  # noqa: E402
from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType  # noqa: E402
from vts.hal.interfaces import Device  # noqa: E402
from vts.ipc.process import HostProcess  # noqa: E402
from vts.model.casemodel import (  # noqa: E402
    CaseExample,
    CaseModel,
    CaseOperand,
    CaseOperation,
    CaseSubgraph,
    TensorData,
    build_request,
    close_model,
    to_hal_model,
)

C_DRIVER = os.path.join(ROOT, "nnvts", "drivers", "sample_c", "sample_driver")


def two_input_add(size: int) -> CaseModel:
    """``out = a + b`` on float32 ``[size]`` tensors (goldens unused: this measures, it does not judge)."""
    life = OperandLifeTime
    f32 = int(OperandType.TENSOR_FLOAT32)
    operands = (
        CaseOperand("a", f32, (size,), life.SUBGRAPH_INPUT),
        CaseOperand("b", f32, (size,), life.SUBGRAPH_INPUT),
        CaseOperand("act", int(OperandType.INT32), (), life.CONSTANT_COPY, value=np.array([0], np.int32)),
        CaseOperand("out", f32, (size,), life.SUBGRAPH_OUTPUT),
    )
    main = CaseSubgraph(operands, (CaseOperation(int(OperationType.ADD), (0, 1, 2), (3,)),), (0, 1), (3,))
    a = np.arange(size, dtype=np.float32)
    example = CaseExample("", {0: TensorData((size,), a), 1: TensorData((size,), a)},
                          {0: TensorData((size,), a + a)})
    return CaseModel("bench", f"add_{size}", HalVersion.V1_0, main, (), (example,))


Measure = Callable[[Device], Callable[[], None]]


def reused_pools(model: CaseModel) -> Measure:
    """One request built once: every execution reuses its pools."""

    def setup(device: Device) -> Callable[[], None]:
        hal = to_hal_model(model)
        prepared = device.prepare_model(hal)
        close_model(hal)
        built = build_request(model, model.examples[0])
        return lambda: prepared.execute(built.request)  # type: ignore[return-value]

    return setup


def fresh_pools(model: CaseModel) -> Measure:
    """A new request (new shared-memory pools) for every execution, as the families do; only execute is timed."""

    def setup(device: Device) -> Callable[[], None]:
        hal = to_hal_model(model)
        prepared = device.prepare_model(hal)
        close_model(hal)
        pending: list = []

        def run() -> None:
            built = pending.pop() if pending else build_request(model, model.examples[0])
            prepared.execute(built.request)
            built.close()

        run.prepare = lambda: pending.append(build_request(model, model.examples[0]))  # type: ignore[attr-defined]
        return run

    return setup


def empty_call(device: Device) -> Callable[[], None]:
    """``get_type``: a round trip with no driver work, the protocol's fixed cost."""
    return lambda: device.get_type()  # type: ignore[return-value]


def timed(run: Callable[[], None], calls: int) -> float:
    """Seconds per call over ``calls`` calls (request building, if any, excluded)."""
    prepare = getattr(run, "prepare", None)
    total = 0
    for _ in range(calls):
        if prepare is not None:
            prepare()
        start = time.perf_counter_ns()
        run()
        total += time.perf_counter_ns() - start
    return total / calls / 1e9


def compare(name: str, setup: Callable[[Device], Callable[[], None]], local: Device, remote: Device, batches: int,
            calls: int) -> dict:
    runs = {"in": setup(local), "out": setup(remote)}
    for run in runs.values():
        for _ in range(max(2, calls // 10)):
            run()  # warm up: first mappings, caches, lazy imports
    samples: dict[str, list[float]] = {"in": [], "out": []}
    for _ in range(batches):
        for side in ("in", "out"):
            samples[side].append(timed(runs[side], calls))
    inside, outside = statistics.median(samples["in"]), statistics.median(samples["out"])
    return {"name": name, "in": inside, "out": outside}


def c_floor(model: CaseModel, batches: int, calls: int) -> tuple[float, float] | None:
    """(empty call, 2-element ADD) with the C sample driver: the floor of the protocol itself."""
    if not os.access(C_DRIVER, os.X_OK):
        return None
    host = HostProcess(f"exec:{C_DRIVER}")
    try:
        device = host.start()
        results = []
        for run in (empty_call(device), reused_pools(model)(device)):
            for _ in range(calls // 10 + 2):
                run()
            results.append(statistics.median(timed(run, calls) for _ in range(batches)))
        return results[0], results[1]
    finally:
        host.stop()


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 0.01 else f"{seconds * 1e3:,.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args()
    batches, small_calls, big_calls = (3, 300, 3) if args.quick else (7, 2000, 10)
    small, big = two_input_add(2), two_input_add(4 << 20)

    local = create_device()
    host = HostProcess("reference")
    remote = host.start()
    try:
        rows = [
            compare("empty call (get_type)", empty_call, local, remote, batches, small_calls),
            compare("2-element ADD (sync)", reused_pools(small), local, remote, batches, small_calls),
            compare("16 MB inputs, pools reused", reused_pools(big), local, remote, batches, big_calls),
            compare("16 MB inputs, fresh pools", fresh_pools(big), local, remote, batches, big_calls),
        ]
    finally:
        host.stop()
    floor = c_floor(small, batches, small_calls)

    header = f"{'case':<30} {'in process':>12} {'out of process':>15} {'extra':>12} {'ratio':>7}  target"
    print(header)
    print("-" * len(header))
    targets = ["", "extra < 100 us", "ratio < 2", "ratio < 2"]
    for row, target in zip(rows, targets, strict=True):
        extra = row["out"] - row["in"]
        ratio = row["out"] / row["in"]
        met = (extra < 100e-6 if "extra" in target else ratio < 2) if target else None
        verdict = "" if met is None else "(met)" if met else "(NOT met)"
        ratio_text = f"{ratio:>6.2f}x" if target else f"{'':>7}"
        print(f"{row['name']:<30} {_us(row['in']):>12} {_us(row['out']):>15} {_us(extra):>12} {ratio_text}  "
              f"{target} {verdict}".rstrip())
    if floor is not None:
        for name, value in zip(("empty call, C driver", "2-element ADD, C driver"), floor, strict=True):
            print(f"{name:<30} {'-':>12} {_us(value):>15} {'':>12} {'':>7}  protocol floor (no interpreter in "
                  "the host)")
    print(f"\n{os.cpu_count()} CPUs; median of {batches} alternating batches "
          f"({small_calls} small / {big_calls} large executions each).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
