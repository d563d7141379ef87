"""The reference driver's operations of feature levels 6 and 7: BATCH_MATMUL, PACK, MIRROR_PAD, REVERSE, quant8 RSQRT.

The project specs of these operations must pass; the unit tests pin what is
easy to get subtly wrong: TFLite's double rounding in quantized BATCH_MATMUL
(an accumulator of 7 times 1/3 is 3, not 2), which adjoint flag applies to
which side, REFLECT against SYMMETRIC, and the execution failures of values
the operations do not define.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from nnvts.drivers.reference.ops import batch_matmul, mirror, unary
from tests.reference.corpus import run_generated
from tests.reference.test_ops_shape import _ctx, _operand, _scalar, _tensor
from vts.hal.enums import OperandType as T
from vts.hal.errors import DriverError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SPECS = ("conv/batch_matmul.yaml", "shape/pack.yaml", "shape/mirror_pad.yaml", "shape/reverse.yaml",
         "shape/reshape.yaml", "elementwise/rsqrt_quant8.yaml")


def test_project_specs_pass():
    counts = run_generated([os.path.join(ROOT, "specs", path) for path in SPECS])
    assert counts.get("passed", 0) == 78 and set(counts) == {"passed"}, counts


def _matmul(x, y, adj_x: bool, adj_y: bool, out: tuple[int, ...]) -> np.ndarray:
    inputs = [x, y, _scalar(adj_x, T.BOOL), _scalar(adj_y, T.BOOL)]
    return batch_matmul.batch_matmul(_ctx("BATCH_MATMUL", inputs, [_operand(x.type, out, 1.0, 0)]))[0]


def test_batch_matmul_adjoint_flags_apply_to_their_own_side():
    x = _tensor([1, 2, 3, 4], T.TENSOR_INT32, (1, 2, 2))
    y = _tensor([5, 6, 7, 8], T.TENSOR_INT32, (1, 2, 2))
    assert _matmul(x, y, True, False, (1, 2, 2)).ravel().tolist() == [26, 30, 38, 44]  # x^T y
    assert _matmul(x, y, False, True, (1, 2, 2)).ravel().tolist() == [17, 23, 39, 53]  # x y^T


def test_batch_matmul_quant8_rounds_twice_as_tflite_does():
    # Scales 0.5 * 0.25 / 0.375: multiplier 1/3 = 1431655765 * 2^(-1-31).  With y = 1 the accumulators are x:
    # 5: high mul 5 * 2/3 = 3.33 -> 3, / 2 = 1.5 -> 2 (half away);  7: 4.67 -> 5, / 2 = 2.5 -> 3 (one rounding of
    # 7/3 would give 2);  -7: -5, / 2 = -2.5 -> -3.  Zero points 0, 0 and 1 (added after the rescale).
    x = _tensor([5, 7, -7], T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 3, 1), 0.5, 0)
    y = _tensor([1], T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 1, 1), 0.25, 0)
    inputs = [x, y, _scalar(False, T.BOOL), _scalar(False, T.BOOL)]
    out = _operand(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 3, 1), 0.375, 1)
    result = batch_matmul.batch_matmul(_ctx("BATCH_MATMUL", inputs, [out]))[0]
    assert result.ravel().tolist() == [3, 4, -2]


@pytest.mark.parametrize(("x_dims", "y_dims"), [((1, 2, 3), (1, 2, 2)), ((2, 2, 2), (1, 2, 2)), ((2, 2), (1, 2, 2))])
def test_batch_matmul_refuses_shapes_it_does_not_define(x_dims, y_dims):
    x = _tensor(np.ones(int(np.prod(x_dims))), T.TENSOR_FLOAT32, x_dims)
    y = _tensor(np.ones(int(np.prod(y_dims))), T.TENSOR_FLOAT32, y_dims)
    with pytest.raises(DriverError):
        _matmul(x, y, False, False, x_dims)


def _pad(values, paddings, mode: int, dims) -> np.ndarray:
    x = _tensor(values, T.TENSOR_INT32, dims)
    pads = _tensor(paddings, T.TENSOR_INT32, (len(dims), 2))
    return mirror.mirror_pad(_ctx("MIRROR_PAD", [x, pads, _scalar(mode)], [_operand(T.TENSOR_INT32)]))[0]


def test_mirror_pad_modes_as_documented():
    assert _pad([1, 2, 3], [0, 2], 0, (3,)).tolist() == [1, 2, 3, 2, 1]  # REFLECT
    assert _pad([1, 2, 3], [0, 2], 1, (3,)).tolist() == [1, 2, 3, 3, 2]  # SYMMETRIC
    assert _pad([1, 2, 3], [3, 3], 1, (3,)).tolist() == [3, 2, 1, 1, 2, 3, 3, 2, 1]
    with pytest.raises(DriverError, match="REFLECT"):
        _pad([1, 2, 3], [3, 0], 0, (3,))  # REFLECT mirrors at most size - 1
    with pytest.raises(DriverError, match="mode 2"):
        _pad([1, 2, 3], [0, 1], 2, (3,))


def test_reverse_and_pack_refuse_what_they_do_not_define():
    x = _tensor([1, 2, 3, 4], T.TENSOR_INT32, (2, 2))
    out = [_operand(T.TENSOR_INT32)]
    assert mirror.reverse(_ctx("REVERSE", [x, _tensor([1], T.TENSOR_INT32)], out))[0].ravel().tolist() == [2, 1, 4, 3]
    with pytest.raises(DriverError):
        mirror.reverse(_ctx("REVERSE", [x, _tensor([2], T.TENSOR_INT32)], out))
    with pytest.raises(DriverError):
        mirror.pack(_ctx("PACK", [_scalar(0), x, _tensor([1, 2], T.TENSOR_INT32)], out))
    assert mirror.pack(_ctx("PACK", [_scalar(2), x, x], out))[0].shape == (2, 2, 2)


def test_quant8_rsqrt_saturates_at_zero_and_keeps_its_own_output_quantization():
    x = _tensor([14, 26, 74, 10, 110], T.TENSOR_QUANT8_ASYMM, (5,), 0.0625, 10)
    out = _operand(T.TENSOR_QUANT8_ASYMM, (5,), 0.125, 3)
    assert unary.rsqrt(_ctx("RSQRT", [x], [out]))[0].tolist() == [19, 11, 7, 255, 6]
