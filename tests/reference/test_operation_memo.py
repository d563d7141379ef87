"""What operations keep across executions (``OpContext.memoized``) must never outlive what it was derived from.

A convolution works out its window, tiled bias and laid-out filter once and
keeps them in its slot of the prepared model.  That is only right while the
filter, bias and arguments are model constants and the input shape is the
same, so these tests change exactly those between executions of one prepared
model and check every result against a direct computation.
"""

from __future__ import annotations

import numpy as np
import pytest

from nnvts.drivers.reference import create_device
from nnvts.drivers.reference.tensor import MEMO_LIMIT, OpContext, Tensor
from vts.hal.enums import HalVersion, OperandLifeTime, OperationType
from vts.hal.enums import OperandType as T
from vts.model import casemodel as tm
from vts.model.casemodel import TensorData, build_request, close_model, to_hal_model

LIFE = OperandLifeTime
PADDING_SAME = 1
RELU6 = 3


def scalar(name: str, value: int) -> tm.CaseOperand:
    return tm.CaseOperand(name, T.INT32, (), LIFE.CONSTANT_COPY, value=np.array(value, dtype=np.int32))


def tensor(name: str, dims: tuple[int, ...], lifetime: OperandLifeTime,
           value: np.ndarray | None = None) -> tm.CaseOperand:
    return tm.CaseOperand(name, T.TENSOR_FLOAT32, dims, lifetime, value=value)


def depthwise_model(x_dims: tuple[int, ...], filt: np.ndarray | None, bias: np.ndarray | None) -> tm.CaseModel:
    """DEPTHWISE_CONV_2D 3x3, SAME, stride 1, multiplier 1, RELU6; a None filter/bias is a model input."""
    channels = 4
    operands = (
        tensor("x", x_dims, LIFE.SUBGRAPH_INPUT),
        tensor("f", (1, 3, 3, channels), LIFE.SUBGRAPH_INPUT if filt is None else LIFE.CONSTANT_COPY, filt),
        tensor("b", (channels,), LIFE.SUBGRAPH_INPUT if bias is None else LIFE.CONSTANT_COPY, bias),
        scalar("pad", PADDING_SAME), scalar("sw", 1), scalar("sh", 1), scalar("mult", 1), scalar("act", RELU6),
        tensor("y", tuple(0 for _ in x_dims), LIFE.SUBGRAPH_OUTPUT),
    )
    inputs = tuple(i for i, o in enumerate(operands) if o.lifetime == LIFE.SUBGRAPH_INPUT)
    main = tm.CaseSubgraph(operands, (tm.CaseOperation(OperationType.DEPTHWISE_CONV_2D, tuple(range(8)), (8,)),),
                        inputs, (8,))
    return tm.CaseModel("memo", "depthwise", HalVersion.V1_2, main, (), ())


def conv_model(x_dims: tuple[int, ...], filt: np.ndarray | None, bias: np.ndarray | None) -> tm.CaseModel:
    """CONV_2D 3x3 from 4 to 5 channels, SAME, stride 1, RELU6; a None filter/bias is a model input."""
    operands = (
        tensor("x", x_dims, LIFE.SUBGRAPH_INPUT),
        tensor("f", (5, 3, 3, 4), LIFE.SUBGRAPH_INPUT if filt is None else LIFE.CONSTANT_COPY, filt),
        tensor("b", (5,), LIFE.SUBGRAPH_INPUT if bias is None else LIFE.CONSTANT_COPY, bias),
        scalar("pad", PADDING_SAME), scalar("sw", 1), scalar("sh", 1), scalar("act", RELU6),
        tensor("y", tuple(0 for _ in x_dims), LIFE.SUBGRAPH_OUTPUT),
    )
    inputs = tuple(i for i, o in enumerate(operands) if o.lifetime == LIFE.SUBGRAPH_INPUT)
    main = tm.CaseSubgraph(operands, (tm.CaseOperation(OperationType.CONV_2D, tuple(range(7)), (7,)),), inputs, (7,))
    return tm.CaseModel("memo", "conv", HalVersion.V1_2, main, (), ())


def direct(x: np.ndarray, filt: np.ndarray, bias: np.ndarray, depthwise: bool) -> np.ndarray:
    """3x3 SAME stride-1 convolution + bias + ReLU6 by explicit loops over taps (float64)."""
    n, h, w, _ = x.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((n, h, w, filt.shape[0 if not depthwise else 3]))
    for i in range(3):
        for j in range(3):
            window = padded[:, i:i + h, j:j + w, :]
            out += window * filt[0, i, j] if depthwise else window @ filt[:, i, j, :].T
    return np.clip(out + bias, 0, 6)


def run(prepared, model: tm.CaseModel, feeds: list[np.ndarray], expected: np.ndarray) -> np.ndarray:
    """One execution; the expected result sizes the output buffer (the model leaves its dims unknown)."""
    example = tm.CaseExample("", {i: TensorData(v.shape, v) for i, v in enumerate(feeds)},
                             {0: TensorData(expected.shape, expected.astype(np.float32))})
    built = build_request(model, example)
    try:
        prepared.execute(built.request)
        return built.read_output(0, np.dtype(np.float32), expected.size).reshape(expected.shape)
    finally:
        built.close()


@pytest.mark.parametrize("build, depthwise", [(depthwise_model, True), (conv_model, False)])
def test_filter_and_bias_given_at_execution_are_read_afresh_every_time(build, depthwise):
    rng = np.random.default_rng(7)
    model = build((1, 5, 6, 4), None, None)
    hal = to_hal_model(model)
    prepared = create_device().prepare_model(hal)
    try:
        x = rng.standard_normal((1, 5, 6, 4), dtype=np.float32)
        for _ in range(3):  # a stale filter or bias row would show from the second execution on
            fshape = (1, 3, 3, 4) if depthwise else (5, 3, 3, 4)
            filt = rng.standard_normal(fshape, dtype=np.float32)
            bias = rng.standard_normal(fshape[3] if depthwise else 5, dtype=np.float32)
            expected = direct(x, filt, bias, depthwise)
            got = run(prepared, model, [x, filt, bias], expected)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    finally:
        close_model(hal)


@pytest.mark.parametrize("build, depthwise", [(depthwise_model, True), (conv_model, False)])
def test_a_new_input_shape_gets_its_own_geometry(build, depthwise):
    """Unknown input dims: one prepared model executed with three shapes, back and forth."""
    rng = np.random.default_rng(8)
    fshape = (1, 3, 3, 4) if depthwise else (5, 3, 3, 4)
    filt = rng.standard_normal(fshape, dtype=np.float32)
    bias = rng.standard_normal(fshape[3] if depthwise else 5, dtype=np.float32)
    model = build((0, 0, 0, 4), filt, bias)
    hal = to_hal_model(model)
    prepared = create_device().prepare_model(hal)
    try:
        for dims in [(1, 5, 6, 4), (2, 3, 9, 4), (1, 5, 6, 4), (1, 1, 1, 4)]:
            x = rng.standard_normal(dims, dtype=np.float32)
            expected = direct(x, filt, bias, depthwise)
            got = run(prepared, model, [x], expected)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    finally:
        close_model(hal)


def test_constants_are_worked_out_once():
    """With everything but the input constant, the second execution reuses the first one's plan."""
    context_plans = []
    built = []

    def build() -> object:
        built.append(object())
        return built[-1]

    memo: dict = {}
    constant = (False, True, True)
    inputs = [Tensor(np.zeros(2, np.float32), T.TENSOR_FLOAT32)] * 3
    for _ in range(3):
        ctx = OpContext("X", inputs, [], memo=memo, constant_inputs=constant)
        assert ctx.constant_from(1) and not ctx.constant_from(0)
        context_plans.append(ctx.memoized(("plan", (2,)), build))
    assert len(built) == 1 and context_plans == [built[0]] * 3


def test_a_context_without_an_executor_keeps_nothing_and_claims_no_constant():
    ctx = OpContext("X", [Tensor(np.zeros(1, np.float32), T.TENSOR_FLOAT32)], [])
    calls = []
    for _ in range(2):
        ctx.memoized("k", lambda: calls.append(1) or len(calls))
    assert len(calls) == 2 and not ctx.constant_from(1)


def test_the_memo_starts_afresh_past_its_limit():
    memo: dict = {}
    ctx = OpContext("X", [], [], memo=memo, constant_inputs=())
    for key in range(MEMO_LIMIT * 3):
        assert ctx.memoized(key, lambda key=key: key * 10) == key * 10
        assert len(memo) <= MEMO_LIMIT
