"""The template driver (nnvts/drivers/template) passes every case it claims, over every default family,
and the vendor's one-bug variant of it is caught and named."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from nnvts.drivers.template.ops import conv_2d
from vts.cli.main import main
from vts.families.registry import families

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SPECS = ("add_binary.json", "mul_binary.json", "relu_clamp.json", "conv_2d_hand.json")


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("specs")
    for name in SPECS:
        shutil.copy(os.path.join(ROOT, "generated_tests", name), folder / name)
    return str(folder)


def _run(specs: str, tmp: str, driver: str, *extra: str) -> tuple[int, dict]:
    report = os.path.join(tmp, "report.json")
    result = CliRunner().invoke(main, ["run", "--driver", driver, "--in-process", "--specs", specs, "-q",
                                      "--json", report, *extra])
    with open(report) as handle:
        return result.exit_code, json.load(handle)


def test_the_template_passes_everything_it_claims_over_every_default_family(specs, tmp_path):
    code, report = _run(specs, str(tmp_path), "template")
    bad = [(c["name"], c["verdict"], c.get("reason")) for c in report["cases"]
           if c["verdict"] not in ("passed", "skipped")]
    assert bad == [] and code == 0
    passed = {c["family"] for c in report["cases"] if c["verdict"] == "passed"}
    # Its four operations are exercised, not only refused: golden, fenced, async, dynamic shapes, bursts.
    assert {"generated", "fenced", "dynamic_output_shape", "burst", "deadline", "validation"} <= passed
    golden = {c["name"] for c in report["cases"] if c["family"] == "generated" and c["verdict"] == "passed"}
    assert {"add_binary.broadcast", "mul_binary.broadcast", "relu_clamp.float32", "conv_2d_hand.dilation_nhwc",
            "conv_2d_hand.same_stride2_relu6"} <= golden
    skipped = [c["reason"] for c in report["cases"] if c["verdict"] == "skipped" and c["family"] == "generated"]
    assert "unsupported: CONV_2D on TENSOR_FLOAT16" in skipped  # the skip names the operand type


def test_every_family_the_template_runs_is_a_registered_default_family(specs, tmp_path):
    _code, report = _run(specs, str(tmp_path), "template")
    assert {c["family"] for c in report["cases"]} <= set(families())


def test_a_conv_that_ignores_dilation_is_caught_on_the_dilation_case_only(specs, tmp_path):
    code, report = _run(specs, str(tmp_path), "tests.fakes.vendor_day:ignores_dilation", "--family", "generated")
    failed = {c["name"]: c["reason"] for c in report["cases"] if c["verdict"] == "failed"}
    assert code == 1
    assert set(failed) == {"conv_2d_hand.dilation_nhwc"}, failed


def test_conv_2d_dilation_against_a_direct_sum():
    """The kernel's one-matmul-per-tap form against the textbook sum, dilation 2, stride 1, VALID."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 7, 6, 2)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    # implicit padding: in, filter, bias, VALID(2), stride w, stride h, act, NHWC, dilation w, dilation h
    got = conv_2d([x, w, b, 2, 1, 1, 0, False, 2, 2])
    out_h, out_w = 7 - 2 * 1, 6 - 2 * 2
    want = np.zeros((1, out_h, out_w, 3), dtype=np.float64)
    for i in range(out_h):
        for j in range(out_w):
            for kh in range(2):
                for kw in range(3):
                    want[0, i, j] += w[:, kh, kw, :] @ x[0, i + 2 * kh, j + 2 * kw, :]
    np.testing.assert_allclose(got, want + b, rtol=1e-5, atol=1e-5)


def test_the_template_is_installed_as_an_entry_point():
    from importlib.metadata import entry_points

    names = {e.name for e in entry_points(group="nnvts.drivers")}
    assert "template" in names




def test_a_driver_inheriting_every_default_path_fails_nothing_for_it(specs, tmp_path):
    """Only ``execute`` written: the interface's execute_async (refusing at launch) and execute_fenced
    (over execute) must not fail validation, fenced, concurrency or dynamic-shape cases."""
    code, report = _run(specs, str(tmp_path), "tests.fakes.vendor_day:execute_only", "--shard", "1/3")
    bad = [(c["name"], c.get("reason")) for c in report["cases"] if c["verdict"] not in ("passed", "skipped")]
    assert bad == [] and code == 0
    families_passed = {c["family"] for c in report["cases"] if c["verdict"] == "passed"}
    assert {"fenced", "validation"} <= families_passed


def test_the_template_speaks_aidl_v4_in_nnvts_info():
    result = CliRunner().invoke(main, ["info", "--driver", "template", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["interface"] == "AIDL v4, feature level 8"


def test_the_template_passes_reusable_executions(specs, tmp_path):
    """Every kind of reusable_execution case runs and passes on its four operations (not all skipped)."""
    code, report = _run(specs, str(tmp_path), "template", "--family", "reusable_execution", "-j", "1",
                        "-k", "add_binary.broadcast or conv_2d_hand.dilation_nhwc")
    bad = [(c["name"], c["verdict"], c.get("reason")) for c in report["cases"]
           if c["verdict"] not in ("passed", "skipped")]
    assert bad == [] and code == 0
    kinds = {c["name"].rsplit(".", 1)[-1] for c in report["cases"] if c["verdict"] == "passed"}
    assert kinds == {"sync", "fenced", "invalid_request", "one_at_a_time", "prepared_with_config"}
    assert any(c["name"].startswith("reusable_execution/conv_2d_hand.") and c["verdict"] == "passed"
               for c in report["cases"])


def test_a_request_the_template_cannot_run_is_refused_when_the_reusable_execution_is_created():
    """IPreparedModel.aidl: createReusableExecution verifies its inputs at once; a driver-buffer token the
    template never allocated (it has no memory domains) is INVALID_ARGUMENT there, not on each run."""
    from nnvts.drivers.template import create_device
    from vts.hal.enums import ErrorStatus, FusedActivationFunc, OperandLifeTime, OperandType, OperationType
    from vts.hal.errors import DriverError
    from vts.hal.memory import allocate
    from vts.hal.types import DataLocation, MemoryToken, Model, Operand, Operation, Request, RequestArgument, Subgraph

    def tensor(lifetime: OperandLifeTime) -> Operand:
        consumers = 0 if lifetime == OperandLifeTime.SUBGRAPH_OUTPUT else 1
        return Operand(OperandType.TENSOR_FLOAT32, [2], consumers, 0.0, 0, lifetime, DataLocation(0, 0, 0))

    act = np.int32(FusedActivationFunc.NONE).tobytes()
    operands = [tensor(OperandLifeTime.SUBGRAPH_INPUT), tensor(OperandLifeTime.SUBGRAPH_INPUT),
                Operand(OperandType.INT32, [], 1, 0.0, 0, OperandLifeTime.CONSTANT_COPY, DataLocation(0, 0, 4)),
                tensor(OperandLifeTime.SUBGRAPH_OUTPUT)]
    model = Model(Subgraph(operands, [Operation(OperationType.ADD, [0, 1, 2], [3])], [0, 1], [3]),
                  operand_values=act)
    prepared = create_device().prepare_model(model)
    memory = allocate("ashmem", 64)
    try:
        def argument(offset: int) -> RequestArgument:
            return RequestArgument(False, DataLocation(0, offset, 8), [])

        good = Request([argument(0), argument(8)], [argument(16)], [memory])
        memory.write(0, np.array([1, 2, 3, 4], np.float32).tobytes())
        execution = prepared.create_reusable_execution(good)
        execution.execute()
        assert np.frombuffer(memory.read(16, 8), np.float32).tolist() == [4.0, 6.0]
        token = Request([argument(0), argument(8)], [RequestArgument(False, DataLocation(1, 0, 0), [])],
                        [memory, MemoryToken(7)])
        with pytest.raises(DriverError) as refused:
            prepared.create_reusable_execution(token)
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    finally:
        memory.close()
