"""IF and WHILE in the reference driver (NN HAL 1.3 control flow).

There is no corpus for control flow: the project specs under
specs/control_flow are the coverage, run here through the library's runner.
The other tests pin the HAL 1.3 execution rules: a loop still running when
the loop timeout elapses (VTS InfiniteLoopTimeoutTest passes 1 ms) ends with
MISSED_DEADLINE on every execution path, an execution deadline also stops a
loop, a loop whose condition is false at once never consults the timeout,
WHILE passes its m + k + n values the way Android's CpuExecutor does, and
values of unknown size flow around a loop.
"""

from __future__ import annotations

import glob
import os
import time

import numpy as np
import pytest
import yaml

from nnvts.drivers.reference import create_device
from nnvts.drivers.reference.executor import CompiledModel, DeadlineClock
from nnvts.drivers.reference.ops import control_flow
from nnvts.drivers.reference.tensor import OpContext, Tensor
from vts.families._kit.executions import Executor, create_prepared_model, execute
from vts.families.base import RunOptions
from vts.hal.enums import ErrorStatus, OperandLifeTime
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError
from vts.hal.types import Operand
from vts.model import casemodel
from vts.model.casemodel import build_request, close_model, parse_spec, to_hal_model
from vts.run.runner import Runner, Selection, iter_cases
from vts.run.selection import parse_expression

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SPECS = os.path.join(ROOT, "specs", "control_flow")
MISSED_DEADLINE = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)


def _models(file_name: str) -> dict[str, casemodel.CaseModel]:
    with open(os.path.join(SPECS, file_name)) as handle:
        return {m.name: m for m in parse_spec(yaml.safe_load(handle))}


def _execute(model: casemodel.CaseModel, executor: Executor, example: int = 0, **kwargs: object):
    hal_model = to_hal_model(model)
    try:
        prepared = create_prepared_model(create_device(), hal_model).prepared
        assert prepared is not None
        built = build_request(model, model.examples[example])
        try:
            return execute(prepared, built.request, executor, **kwargs), built
        finally:
            built.close()
    finally:
        close_model(hal_model)


def test_project_specs_pass():
    """Every control-flow spec passes (the infinite loop, which waits for the 2 s default, is left out).

    The runtime-only models (while_unknown_size) are refused by the reference, as ValidateHal's driver
    mode demands, and skipped with that reason.
    """
    paths = sorted(glob.glob(os.path.join(SPECS, "*.yaml")))
    assert len(paths) >= 3
    runner = Runner(create_device(), RunOptions())
    counts: dict[str, int] = {}
    failures = []
    selection = Selection(paths, keyword=parse_expression("not while_infinite_loop"), families=["generated"])
    for family, case in iter_cases(selection):
        result = runner.run_case(family, case)
        counts[result.verdict.value] = counts.get(result.verdict.value, 0) + 1
        refused_as_allowed = result.verdict.value == "skipped" and "only the NNAPI runtime accepts" in result.reason
        if result.verdict.value != "passed" and not (refused_as_allowed and "while_unknown_size" in result.name):
            failures.append(f"{result.name}: {result.verdict.value} {result.reason}")
    assert not failures, "\n".join(failures[:20])
    assert counts.get("passed", 0) >= 38


@pytest.mark.parametrize("executor", [Executor.SYNC, Executor.ASYNC, Executor.FENCED])
@pytest.mark.parametrize("model", ["while_infinite_loop", "quant8"])
def test_infinite_loop_ends_with_missed_deadline(executor: Executor, model: str):
    answer, _ = _execute(_models("while_infinite_loop.yaml")[model], executor, loop_timeout=1_000_000)
    assert answer.status in MISSED_DEADLINE, answer


def test_execution_deadline_stops_a_loop():
    model = _models("while_infinite_loop.yaml")["while_infinite_loop"]
    deadline = time.monotonic_ns() + 20_000_000
    answer, _ = _execute(model, Executor.SYNC, deadline=deadline, loop_timeout=15_000_000_000)
    assert answer.status in MISSED_DEADLINE, answer


def test_false_condition_never_consults_the_loop_timeout():
    # n = 0: i = 1 <= 0 is false at once, so even a zero loop timeout lets the execution succeed.
    model = _models("while.yaml")["sum_float32"]
    assert model.examples[1].name == "n0"
    answer, _ = _execute(model, Executor.SYNC, example=1, loop_timeout=0)
    assert answer.status == ErrorStatus.NONE, answer


# --------------------------------------------------------------------------- WHILE semantics


def _operand(type_: int, dims: tuple[int, ...] = ()) -> Operand:
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=0, scale=0.0, zero_point=0,
                   lifetime=OperandLifeTime.TEMPORARY_VARIABLE)


def _value(x) -> Tensor:
    return Tensor(np.asarray(x, dtype=np.float32), T.TENSOR_FLOAT32)


def _subgraph(index: int) -> Tensor:
    return Tensor(np.array(index, dtype=np.int32), T.SUBGRAPH)


def test_while_carries_m_plus_k_values_and_keeps_input_only_values():
    # m = 1 (acc), k = 1 (i), n = 1 (step): while i < 3: acc += step; i += 1.
    calls: list[tuple[int, list[float]]] = []

    def run_subgraph(index: int, inputs) -> list[Tensor]:
        values = [float(t.value) for t in inputs]
        calls.append((index, values))
        acc, i, step = values
        if index == 0:
            return [Tensor(np.array([i < 3]), T.TENSOR_BOOL8)]
        return [_value(acc + step), _value(i + 1)]

    ctx = OpContext("WHILE", [_subgraph(0), _subgraph(1), _value(0.0), _value(0.0), _value(2.5)],
                    [_operand(T.TENSOR_FLOAT32)], run_subgraph=run_subgraph, loop_timeout_ns=10**12)
    assert control_flow.while_op(ctx)[0] == pytest.approx(7.5)
    assert [index for index, _ in calls] == [0, 1, 0, 1, 0, 1, 0]
    assert all(values[2] == 2.5 for _, values in calls)


def test_if_and_while_refuse_omitted_inputs():
    def never(index: int, inputs) -> list[Tensor]:
        raise AssertionError("no subgraph may run")

    condition = Tensor(np.array([True]), T.TENSOR_BOOL8)
    missing_input = OpContext("IF", [condition, _subgraph(0), _subgraph(1), None], [_operand(T.TENSOR_FLOAT32)],
                              run_subgraph=never)
    missing_condition = OpContext("IF", [None, _subgraph(0), _subgraph(1), _value(1.0)],
                                  [_operand(T.TENSOR_FLOAT32)], run_subgraph=never)
    for ctx in (missing_input, missing_condition):
        with pytest.raises(DriverError) as error:
            control_flow.if_op(ctx)
        assert error.value.status == ErrorStatus.GENERAL_FAILURE


def _growing_loop() -> casemodel.CaseModel:
    """x = [3]; i = 0; while i < n: x = CONCATENATION(x, x); i += 1 (x has unknown size)."""
    f32 = "TENSOR_FLOAT32"

    def inputs(*names: str) -> list[dict]:
        dims = {"x": [0], "i": [1], "n": [1]}
        return [{"name": n, "type": f32, "dims": dims[n], "lifetime": "SUBGRAPH_INPUT"} for n in names]

    document = {
        "nnvts": 1, "name": "growing", "hal_version": "1.3", "source": {"kind": "hand", "detail": "doubling"},
        "models": [{
            "name": "growing",
            "main": {
                "operands": [
                    {"name": "cond", "type": "SUBGRAPH", "lifetime": "SUBGRAPH", "value": 0},
                    {"name": "body", "type": "SUBGRAPH", "lifetime": "SUBGRAPH", "value": 1},
                    {"name": "x", "type": f32, "dims": [0], "lifetime": "SUBGRAPH_INPUT"},
                    {"name": "i", "type": f32, "dims": [1], "lifetime": "CONSTANT_COPY", "value": [0.0]},
                    {"name": "n", "type": f32, "dims": [1], "lifetime": "SUBGRAPH_INPUT"},
                    {"name": "out", "type": f32, "dims": [0], "lifetime": "SUBGRAPH_OUTPUT"},
                ],
                "operations": [{"type": "WHILE", "inputs": ["cond", "body", "x", "i", "n"], "outputs": ["out"]}],
                "inputs": ["x", "n"], "outputs": ["out"],
            },
            "referenced": [
                {"operands": [*inputs("x", "i", "n"),
                              {"name": "go", "type": "TENSOR_BOOL8", "dims": [1], "lifetime": "SUBGRAPH_OUTPUT"}],
                 "operations": [{"type": "LESS", "inputs": ["i", "n"], "outputs": ["go"]}],
                 "inputs": ["x", "i", "n"], "outputs": ["go"]},
                {"operands": [*inputs("x", "i", "n"),
                              {"name": "axis", "type": "INT32", "lifetime": "CONSTANT_COPY", "value": 0},
                              {"name": "one", "type": f32, "dims": [1], "lifetime": "CONSTANT_COPY", "value": [1.0]},
                              {"name": "act", "type": "INT32", "lifetime": "CONSTANT_COPY", "value": 0},
                              {"name": "x2", "type": f32, "dims": [0], "lifetime": "SUBGRAPH_OUTPUT"},
                              {"name": "i2", "type": f32, "dims": [1], "lifetime": "SUBGRAPH_OUTPUT"}],
                 "operations": [{"type": "CONCATENATION", "inputs": ["x", "x", "axis"], "outputs": ["x2"]},
                                {"type": "ADD", "inputs": ["i", "one", "act"], "outputs": ["i2"]}],
                 "inputs": ["x", "i", "n"], "outputs": ["x2", "i2"]},
            ],
            "examples": [{"inputs": {"x": {"dims": [1], "value": [3.0]}, "n": [3.0]},
                          "outputs": {"out": {"dims": [8], "value": [3.0] * 8}}}],
        }],
    }
    return parse_spec(document)[0]


def test_values_of_unknown_size_grow_around_a_loop():
    """Android reallocates body outputs of unknown shape every iteration; HAL 1.3 drivers may refuse
    such models at validation, so this runs the executor directly."""
    hal_model = to_hal_model(_growing_loop())
    try:
        compiled = CompiledModel(hal_model)
        x = Tensor(np.array([3.0], np.float32), T.TENSOR_FLOAT32)
        n = Tensor(np.array([3.0], np.float32), T.TENSOR_FLOAT32)
        (out,) = compiled.run([x, n], DeadlineClock(None), 10**12)
    finally:
        close_model(hal_model)
    assert out.value.tolist() == [3.0] * 8


def test_if_is_supported_only_when_its_branches_are():
    """getSupportedOperations_1_3: IF/WHILE are supported only if every referenced operation is."""
    import os

    from nnvts.drivers.reference import create_device
    from nnvts.drivers.reference.ops import registry
    from vts.hal.enums import OperationType
    from vts.model.casemodel import parse_spec, to_hal_model
    from vts.spec.loader import load_paths

    path = os.path.join(os.path.dirname(__file__), "..", "..", "specs", "control_flow", "if.yaml")
    model = parse_spec(next(iter(load_paths([path]))).document)[0]
    hal_model = to_hal_model(model)
    device = create_device()
    assert device.get_supported_operations(hal_model) == [True] * len(hal_model.main.operations)
    branch_ops = {op.type for g in hal_model.referenced for op in g.operations}
    ops = registry.operations()
    saved = {t: ops.pop(t) for t in branch_ops}
    try:
        flags = device.get_supported_operations(hal_model)
    finally:
        ops.update(saved)
    for op, flag in zip(hal_model.main.operations, flags, strict=True):
        assert flag is (op.type != OperationType.IF)
