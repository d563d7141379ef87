"""Validation of the operations the AIDL interface added (feature levels 6 and 7)."""

from __future__ import annotations

import pytest

from tests.hal.test_operations import scalar, tensor
from vts.hal.enums import HalVersion, OperandType, OperationType, operation_hal_version
from vts.hal.operations import operation_min_hal_version, validate_operation
from vts.hal.validation_error import ValidationError

T = OperandType
Op = OperationType
F32, F16, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32
QA8, QAS8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
INT, BOOL = T.INT32, T.BOOL


def test_versions_of_the_new_operations():
    assert [operation_hal_version(o) for o in (Op.BATCH_MATMUL, Op.PACK, Op.MIRROR_PAD, Op.REVERSE)] == [
        HalVersion.FL6, HalVersion.FL6, HalVersion.FL7, HalVersion.FL7]
    assert str(HalVersion.FL7) == "FL7" and HalVersion.parse("FL7") is HalVersion.FL7
    assert HalVersion.parse("1.3") is HalVersion.V1_3 and HalVersion.V1_3 < HalVersion.FL5
    assert HalVersion.V1_2.feature_level == 3 and HalVersion.FL8.feature_level == 8


@pytest.mark.parametrize("t", [F16, F32, QAS8, I32])
def test_batch_matmul_types_need_feature_level_6(t):
    inputs = [tensor(t, [2, 3]), tensor(t, [3, 2]), scalar(BOOL), scalar(BOOL)]
    assert operation_min_hal_version(Op.BATCH_MATMUL, inputs, [tensor(t, [2, 2])]) is HalVersion.FL6
    with pytest.raises(ValidationError, match=r"introduced in feature level 6, validating for HAL 1\.3"):
        validate_operation(Op.BATCH_MATMUL, inputs, [tensor(t, [2, 2])], HalVersion.V1_3)


def test_batch_matmul_refuses_unsigned_quant8_and_three_inputs():
    with pytest.raises(ValidationError, match="input 0 has type TENSOR_QUANT8_ASYMM"):
        validate_operation(Op.BATCH_MATMUL, [tensor(QA8), tensor(QA8), scalar(BOOL), scalar(BOOL)], [tensor(QA8)],
                           HalVersion.FL8)
    with pytest.raises(ValidationError, match="got 3 inputs"):
        validate_operation(Op.BATCH_MATMUL, [tensor(F32), tensor(F32), scalar(BOOL)], [tensor(F32)], HalVersion.FL8)


def test_pack_takes_n_tensors_of_the_output_quantization_and_rank():
    good = [scalar(INT), tensor(QA8, [2, 3]), tensor(QA8, [2, 3])]
    validate_operation(Op.PACK, good, [tensor(QA8, [2, 2, 3])], HalVersion.FL6)
    with pytest.raises(ValidationError, match="scale"):
        validate_operation(Op.PACK, [scalar(INT), tensor(QA8, [2, 3]), tensor(QA8, [2, 3], scale=0.25)],
                           [tensor(QA8, [2, 2, 3])], HalVersion.FL6)
    with pytest.raises(ValidationError, match="rank 3, expected 2"):
        validate_operation(Op.PACK, [scalar(INT), tensor(F32, [2, 3]), tensor(F32, [2, 3, 1])],
                           [tensor(F32, [2, 2, 3])], HalVersion.FL6)
    with pytest.raises(ValidationError, match="at least 2 inputs"):
        validate_operation(Op.PACK, [scalar(INT)], [tensor(F32, [1])], HalVersion.FL6)


def test_mirror_pad_and_reverse_need_feature_level_7_and_their_shapes():
    pad = [tensor(F32, [2, 3]), tensor(I32, [2, 2]), scalar(INT)]
    assert operation_min_hal_version(Op.MIRROR_PAD, pad, [tensor(F32, [4, 5])]) is HalVersion.FL7
    with pytest.raises(ValidationError, match="validating for feature level 6"):
        validate_operation(Op.MIRROR_PAD, pad, [tensor(F32, [4, 5])], HalVersion.FL6)
    with pytest.raises(ValidationError, match="first dimension 3 is not the input's rank 2"):
        validate_operation(Op.MIRROR_PAD, [tensor(F32, [2, 3]), tensor(I32, [3, 2]), scalar(INT)],
                           [tensor(F32, [4, 5])], HalVersion.FL7)
    with pytest.raises(ValidationError, match="must hold 1 element"):
        validate_operation(Op.REVERSE, [tensor(I32, [2, 3]), tensor(I32, [2])], [tensor(I32, [2, 3])],
                           HalVersion.FL7)
    with pytest.raises(ValidationError, match="scale"):
        validate_operation(Op.REVERSE, [tensor(QAS8, [2]), tensor(I32, [1])], [tensor(QAS8, [2], scale=2.0)],
                           HalVersion.FL7)


def test_reshape_int32_and_quant8_rsqrt_widen_old_operations():
    reshape = [tensor(I32, [2, 2]), tensor(I32, [1])]
    assert operation_min_hal_version(Op.RESHAPE, reshape, [tensor(I32, [4])]) is HalVersion.FL6
    with pytest.raises(ValidationError, match=r"need feature level 6, validating for HAL 1\.3"):
        validate_operation(Op.RESHAPE, reshape, [tensor(I32, [4])], HalVersion.V1_3)
    for t in (QA8, QAS8):
        rsqrt = ([tensor(t, [3])], [tensor(t, [3], scale=0.125, zero_point=3)])
        assert operation_min_hal_version(Op.RSQRT, *rsqrt) is HalVersion.FL7
    assert operation_min_hal_version(Op.RSQRT, [tensor(F32)], [tensor(F32)]) is HalVersion.V1_2
