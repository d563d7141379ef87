"""Per-operation signature validation (vts.hal.operations)."""

from __future__ import annotations

import pytest

from vts.hal.enums import HalVersion, OperandLifeTime, OperandType, OperationType, OperationTypeRange
from vts.hal.operations import SPECS, operation_min_hal_version, validate_operation
from vts.hal.operations._core import OpContext, OpSpec, Signature, run_spec
from vts.hal.types import DataLocation, Operand, Subgraph, SymmPerChannelQuantParams
from vts.hal.validation_error import ValidationError

T = OperandType
Op = OperationType
V10, V11, V12, V13 = HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3

_QUANT = {T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
          T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM}


def tensor(t: int, dims: list[int] | None = None, scale: float | None = None, zero_point: int = 0,
           channel_dim: int = 0) -> Operand:
    """A tensor operand with quantization parameters that are valid for its type."""
    dims = [1, 2, 2, 1] if dims is None else dims
    if scale is None:
        scale = 0.5 if t in _QUANT else 0.0
    extra = None
    if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        extra = SymmPerChannelQuantParams([1.0] * dims[channel_dim], channel_dim)
    return Operand(int(t), list(dims), 0, scale, zero_point, OperandLifeTime.SUBGRAPH_INPUT,
                   DataLocation(), extra)


def scalar(t: int) -> Operand:
    return Operand(int(t), [], 1, 0.0, 0, OperandLifeTime.CONSTANT_COPY, DataLocation(0, 0, 4))


F32, F16, I32, B8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8
QA8, QAS8, QPC8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL
INT, FLOAT, HALF, BOOL = T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL


def add_operands(t: int) -> tuple[list[Operand], list[Operand]]:
    return [tensor(t), tensor(t), scalar(INT)], [tensor(t)]


def conv_operands(
    input_type: int = F32, filter_type: int | None = None, bias_type: int | None = None,
    explicit: bool = False, layout: bool = False, dilation: bool = False, output_scale: float = 1.0,
) -> tuple[list[Operand], list[Operand]]:
    quant = input_type in (QA8, QAS8)
    filter_type = input_type if filter_type is None else filter_type
    bias_type = (I32 if quant else input_type) if bias_type is None else bias_type
    inputs = [tensor(input_type, [1, 3, 3, 1]), tensor(filter_type, [1, 2, 2, 1]), tensor(bias_type, [1])]
    if bias_type == I32 and quant:
        inputs[2].scale = 0.25
    inputs += [scalar(INT)] * (7 if explicit else 4)
    if layout:
        inputs.append(scalar(BOOL))
    if dilation:
        inputs += [scalar(INT), scalar(INT)]
    output = tensor(input_type, [1, 2, 2, 1], scale=output_scale if quant else None)
    return inputs, [output]


# ---------------------------------------------------------------------------
# Coverage of the tables


def test_every_fundamental_operation_has_a_spec() -> None:
    for value in range(OperationTypeRange.FUNDAMENTAL_MIN, OperationTypeRange.FUNDAMENTAL_MAX + 1):
        assert value in SPECS, OperationType(value).name
    assert int(Op.OEM_OPERATION) in SPECS
    assert len(SPECS) == 107  # 102 of HAL 1.3 (RANK = 101, OEM_OPERATION) and 4 of AIDL v2/v3


def _static_signatures() -> list[tuple[int, Signature]]:
    return [(op, s) for op, spec in sorted(SPECS.items()) if isinstance(spec.signatures, tuple)
            for s in spec.signatures]


@pytest.mark.parametrize(("op_type", "signature"), _static_signatures())
def test_every_signature_matches_its_own_types(op_type: int, signature: Signature) -> None:
    """Type matching alone (no value checks) accepts each table row at the row's version."""
    inputs = [tensor(t) if t not in (INT, FLOAT, HALF, BOOL) else scalar(t) for t in signature.inputs]
    outputs = [tensor(t) if t not in (INT, FLOAT, HALF, BOOL) else scalar(t) for t in signature.outputs]
    ctx = OpContext(OperationType(op_type).name, op_type, inputs, outputs, V13, None, False)
    assert run_spec(OpSpec((signature,)), ctx) == signature.version


# ---------------------------------------------------------------------------
# ADD and friends


def test_add_float32_is_valid_in_hal_1_0() -> None:
    inputs, outputs = add_operands(F32)
    validate_operation(Op.ADD, inputs, outputs, V10)
    assert operation_min_hal_version(Op.ADD, inputs, outputs) == V10


def test_add_names_the_operation_and_the_bad_slot() -> None:
    inputs, outputs = add_operands(F32)
    inputs[1] = tensor(I32)
    with pytest.raises(ValidationError, match="ADD: input 1 has type TENSOR_INT32, expected TENSOR_FLOAT32"):
        validate_operation(Op.ADD, inputs, outputs)


def test_add_int32_needs_hal_1_3() -> None:
    inputs, outputs = add_operands(I32)
    validate_operation(Op.ADD, inputs, outputs, V13)
    with pytest.raises(ValidationError, match=r"ADD: .*need HAL 1\.3, validating for HAL 1\.2"):
        validate_operation(Op.ADD, inputs, outputs, V12)
    assert operation_min_hal_version(Op.ADD, inputs, outputs) == V13


@pytest.mark.parametrize(("t", "version"), [(F32, V10), (QA8, V10), (F16, V12), (QAS8, V13), (I32, V13)])
def test_add_type_versions(t: int, version: HalVersion) -> None:
    inputs, outputs = add_operands(t)
    assert operation_min_hal_version(Op.ADD, inputs, outputs) == version


def test_sub_and_div_need_hal_1_1() -> None:
    inputs, outputs = add_operands(F32)
    assert operation_min_hal_version(Op.SUB, inputs, outputs) == V11
    with pytest.raises(ValidationError, match=r"introduced in HAL 1.1"):
        validate_operation(Op.DIV, inputs, outputs, V10)
    inputs, outputs = add_operands(QA8)
    with pytest.raises(ValidationError, match="DIV: input 0 has type TENSOR_QUANT8_ASYMM"):
        validate_operation(Op.DIV, inputs, outputs)


def test_add_counts_are_checked() -> None:
    inputs, outputs = add_operands(F32)
    with pytest.raises(ValidationError, match="ADD: got 2 inputs and 1 output, expected 3 inputs and 1 out"):
        validate_operation(Op.ADD, inputs[:2], outputs)
    with pytest.raises(ValidationError, match="ADD: got 3 inputs and 2 outputs"):
        validate_operation(Op.ADD, inputs, outputs * 2)


def test_rank_limit_applies_only_to_known_ranks() -> None:
    inputs, outputs = add_operands(F32)
    inputs[0] = tensor(F32, [1, 1, 1, 1, 2])
    with pytest.raises(ValidationError, match="rank up to 4"):
        validate_operation(Op.ADD, inputs, outputs)
    inputs[1] = tensor(F32, [])  # unknown rank: Android only checks when both ranks are known
    validate_operation(Op.ADD, inputs, outputs)
    with pytest.raises(ValidationError, match="rank up to 4"):
        validate_operation(Op.RELU, [tensor(F32, [1] * 5)], [tensor(F32)])
    validate_operation(Op.RELU, [tensor(F32, [])], [tensor(F32, [])])


def test_mul_quantized_output_scale_must_exceed_product() -> None:
    inputs, outputs = add_operands(QA8)
    inputs[0].scale, inputs[1].scale, outputs[0].scale = 0.5, 0.5, 0.5
    validate_operation(Op.MUL, inputs, outputs)
    outputs[0].scale = 0.25
    with pytest.raises(ValidationError, match="MUL: output scale"):
        validate_operation(Op.MUL, inputs, outputs)


# ---------------------------------------------------------------------------
# Convolutions


def test_conv_float32_forms() -> None:
    for explicit in (False, True):
        inputs, outputs = conv_operands(explicit=explicit)
        assert operation_min_hal_version(Op.CONV_2D, inputs, outputs) == V10
        inputs, outputs = conv_operands(explicit=explicit, layout=True)
        assert operation_min_hal_version(Op.CONV_2D, inputs, outputs) == V12
        inputs, outputs = conv_operands(explicit=explicit, layout=True, dilation=True)
        assert operation_min_hal_version(Op.CONV_2D, inputs, outputs) == V12


def test_conv_nchw_layout_rejected_before_hal_1_2() -> None:
    inputs, outputs = conv_operands(layout=True)
    with pytest.raises(ValidationError, match="CONV_2D"):
        validate_operation(Op.CONV_2D, inputs, outputs, V11)
    validate_operation(Op.CONV_2D, inputs, outputs, V12)


@pytest.mark.parametrize(
    ("input_type", "filter_type", "version"),
    [(F32, None, V10), (F16, None, V12), (QA8, None, V10), (QA8, QPC8, V12), (QAS8, None, V13),
     (QAS8, QPC8, V13)],
)
def test_conv_type_combinations(input_type: int, filter_type: int | None, version: HalVersion) -> None:
    inputs, outputs = conv_operands(input_type, filter_type)
    assert operation_min_hal_version(Op.CONV_2D, inputs, outputs) == version


def test_conv_rejects_mixed_types() -> None:
    inputs, outputs = conv_operands(QA8, filter_type=QAS8)
    with pytest.raises(ValidationError,
                       match="input 1 has type TENSOR_QUANT8_ASYMM_SIGNED, expected TENSOR_QUANT8_ASYMM or "
                             "TENSOR_QUANT8_SYMM_PER_CHANNEL"):
        validate_operation(Op.CONV_2D, inputs, outputs)
    inputs, outputs = conv_operands(QA8, bias_type=F32)
    with pytest.raises(ValidationError, match="input 2 has type TENSOR_FLOAT32, expected TENSOR_INT32"):
        validate_operation(Op.CONV_2D, inputs, outputs)
    inputs, outputs = conv_operands(F32)
    inputs[3] = scalar(FLOAT)
    with pytest.raises(ValidationError, match="input 3 has type FLOAT32, expected INT32"):
        validate_operation(Op.CONV_2D, inputs, outputs)


def test_conv_input_counts() -> None:
    inputs, outputs = conv_operands(layout=True)
    with pytest.raises(ValidationError, match="expected 7 or 8 or 10 or 11 or 13 inputs and 1 output"):
        validate_operation(Op.CONV_2D, [*inputs, scalar(INT)], outputs)  # a single dilation factor


def test_conv_quant_scale_constraint_decides_the_version() -> None:
    inputs, outputs = conv_operands(QA8, output_scale=0.5)  # 0.5 * 0.5 = 0.25 < 0.5
    assert operation_min_hal_version(Op.CONV_2D, inputs, outputs) == V10
    inputs, outputs = conv_operands(QA8, output_scale=0.2)
    assert operation_min_hal_version(Op.CONV_2D, inputs, outputs) == V12
    with pytest.raises(ValidationError, match=r"need HAL 1.2"):
        validate_operation(Op.CONV_2D, inputs, outputs, V10)


def test_per_channel_filter_channel_dim() -> None:
    inputs, outputs = conv_operands(QA8, filter_type=QPC8)
    inputs[1] = tensor(QPC8, [1, 2, 2, 1], channel_dim=3)
    with pytest.raises(ValidationError, match="channelDim 0"):
        validate_operation(Op.CONV_2D, inputs, outputs)
    depthwise = [inputs[0], tensor(QPC8, [1, 2, 2, 1], channel_dim=3), inputs[2], *[scalar(INT)] * 5]
    validate_operation(Op.DEPTHWISE_CONV_2D, depthwise, outputs)
    depthwise[1] = tensor(QPC8, [1, 2, 2, 1], channel_dim=0)
    with pytest.raises(ValidationError, match="channelDim 3"):
        validate_operation(Op.DEPTHWISE_CONV_2D, depthwise, outputs)


def test_conv_rank_must_be_4_when_known() -> None:
    inputs, outputs = conv_operands()
    inputs[1] = tensor(F32, [2, 2, 1])
    with pytest.raises(ValidationError, match="input 1 has rank 3, expected rank 4"):
        validate_operation(Op.CONV_2D, inputs, outputs)
    inputs[1] = tensor(F32, [])
    validate_operation(Op.CONV_2D, inputs, outputs)


def test_depthwise_grouped_and_transpose_conv_counts() -> None:
    _, outputs = conv_operands()
    base = [tensor(F32), tensor(F32), tensor(F32, [1])]
    for count in (5, 8):
        validate_operation(Op.DEPTHWISE_CONV_2D, base + [scalar(INT)] * count, outputs)
    validate_operation(Op.GROUPED_CONV_2D, base + [scalar(INT)] * 5 + [scalar(BOOL)], outputs)
    validate_operation(Op.GROUPED_CONV_2D, base + [scalar(INT)] * 8 + [scalar(BOOL)], outputs)
    with pytest.raises(ValidationError, match="GROUPED_CONV_2D"):
        validate_operation(Op.GROUPED_CONV_2D, base + [scalar(INT)] * 5, outputs)
    implicit = [*base, tensor(I32, [4]), *[scalar(INT)] * 4, scalar(BOOL)]
    validate_operation(Op.TRANSPOSE_CONV_2D, implicit, outputs)
    validate_operation(Op.TRANSPOSE_CONV_2D, base + [scalar(INT)] * 7 + [scalar(BOOL)], outputs)


# ---------------------------------------------------------------------------
# Quantization rules


@pytest.mark.parametrize(
    ("op", "t", "scale", "zero_point"),
    [(Op.LOGISTIC, QA8, 1 / 256, 0), (Op.LOGISTIC, QAS8, 1 / 256, -128), (Op.TANH, QA8, 1 / 128, 128),
     (Op.TANH, QAS8, 1 / 128, 0)],
)
def test_fixed_output_quantization(op: int, t: int, scale: float, zero_point: int) -> None:
    validate_operation(op, [tensor(t)], [tensor(t, scale=scale, zero_point=zero_point)])
    with pytest.raises(ValidationError, match=f"{OperationType(op).name}: output 0 .* must have scale"):
        validate_operation(op, [tensor(t)], [tensor(t, scale=scale * 2, zero_point=zero_point)])
    with pytest.raises(ValidationError, match="zeroPoint"):
        validate_operation(op, [tensor(t)], [tensor(t, scale=scale, zero_point=zero_point + 1)])


def test_softmax_and_l2_normalization_output_quantization() -> None:
    beta = scalar(FLOAT)
    validate_operation(Op.SOFTMAX, [tensor(QA8, [2, 3]), beta], [tensor(QA8, [2, 3], 1 / 256, 0)])
    validate_operation(Op.SOFTMAX, [tensor(QAS8, [2, 3]), beta], [tensor(QAS8, [2, 3], 1 / 256, -128)])
    with pytest.raises(ValidationError, match="SOFTMAX: output 0"):
        validate_operation(Op.SOFTMAX, [tensor(QA8, [2, 3]), beta], [tensor(QA8, [2, 3], 1 / 128, 0)])
    validate_operation(Op.L2_NORMALIZATION, [tensor(QA8)], [tensor(QA8, None, 1 / 128, 128)])
    validate_operation(Op.L2_NORMALIZATION, [tensor(QAS8)], [tensor(QAS8, None, 1 / 128, 0)])
    with pytest.raises(ValidationError, match="L2_NORMALIZATION: output 0"):
        validate_operation(Op.L2_NORMALIZATION, [tensor(QA8)], [tensor(QA8, None, 1 / 128, 0)])


def test_data_movement_keeps_quantization() -> None:
    shape = tensor(I32, [1])
    validate_operation(Op.RESHAPE, [tensor(QA8, scale=0.5, zero_point=3), shape],
                       [tensor(QA8, scale=0.5, zero_point=3)])
    with pytest.raises(ValidationError, match="RESHAPE: output 0 must have the scale and zeroPoint of input"):
        validate_operation(Op.RESHAPE, [tensor(QA8, scale=0.5, zero_point=3), shape],
                           [tensor(QA8, scale=0.25, zero_point=3)])
    with pytest.raises(ValidationError, match="MAX_POOL_2D: output 0"):
        validate_operation(Op.MAX_POOL_2D, [tensor(QA8, scale=0.5), *[scalar(INT)] * 6],
                           [tensor(QA8, scale=1.0)])


def test_value_dependent_versions() -> None:
    # CONCATENATION of differently quantized inputs: HAL 1.2.
    a, b, out = tensor(QA8, scale=0.5), tensor(QA8, scale=0.5), tensor(QA8, scale=0.5)
    assert operation_min_hal_version(Op.CONCATENATION, [a, b, scalar(INT)], [out]) == V10
    b.scale = 0.25
    assert operation_min_hal_version(Op.CONCATENATION, [a, b, scalar(INT)], [out]) == V12
    # PAD of QA8 with a non-zero zero point: HAL 1.2.
    pads = tensor(I32, [4, 2])
    assert operation_min_hal_version(Op.PAD, [tensor(QA8), pads], [tensor(QA8)]) == V11
    assert operation_min_hal_version(Op.PAD, [tensor(QA8, zero_point=3), pads],
                                     [tensor(QA8, zero_point=3)]) == V12
    # L2_NORMALIZATION / SOFTMAX on ranks other than 4 (2 or 4) without an axis: HAL 1.2.
    assert operation_min_hal_version(Op.L2_NORMALIZATION, [tensor(F32)], [tensor(F32)]) == V10
    assert operation_min_hal_version(Op.L2_NORMALIZATION, [tensor(F32, [2, 3])], [tensor(F32, [2, 3])]) == V12
    beta = scalar(FLOAT)
    assert operation_min_hal_version(Op.SOFTMAX, [tensor(F32, [2, 3]), beta], [tensor(F32, [2, 3])]) == V10
    rank3 = tensor(F32, [2, 3, 4])
    assert operation_min_hal_version(Op.SOFTMAX, [rank3, beta], [rank3]) == V12
    assert operation_min_hal_version(Op.SOFTMAX, [tensor(F32), beta, scalar(INT)], [tensor(F32)]) == V12


# ---------------------------------------------------------------------------
# Operation types and special operations


@pytest.mark.parametrize("op_type", [106, 9999, 10001, -1])
def test_unknown_operation_types(op_type: int) -> None:
    inputs, outputs = add_operands(F32)
    with pytest.raises(ValidationError, match="unknown operation type"):
        validate_operation(op_type, inputs, outputs)


def test_operation_introduced_later_is_rejected() -> None:
    with pytest.raises(ValidationError, match=r"ELU: operation introduced in HAL 1.3"):
        validate_operation(Op.ELU, [tensor(F32), scalar(FLOAT)], [tensor(F32)], V12)
    assert operation_min_hal_version(Op.ELU, [tensor(F16), scalar(HALF)], [tensor(F16)]) == V13


def test_extension_and_oem_operations() -> None:
    extension = (1 << 16) | 3
    validate_operation(extension, [tensor(F32)], [tensor(F32)], V12)
    with pytest.raises(ValidationError, match=r"extension operations need HAL 1.2"):
        validate_operation(extension, [tensor(F32)], [tensor(F32)], V11)
    validate_operation(Op.OEM_OPERATION, [tensor(T.TENSOR_OEM_BYTE)], [tensor(F32)], V10)


def test_cast_and_dequantize_pairs() -> None:
    validate_operation(Op.CAST, [tensor(QA8)], [tensor(F16)], V12)
    validate_operation(Op.CAST, [tensor(B8)], [tensor(B8)], V13)
    with pytest.raises(ValidationError, match="CAST"):
        validate_operation(Op.CAST, [tensor(B8)], [tensor(F32)])
    with pytest.raises(ValidationError, match="output dimensions"):
        validate_operation(Op.CAST, [tensor(F32, [2, 2])], [tensor(F16, [4])])
    assert operation_min_hal_version(Op.DEQUANTIZE, [tensor(QA8)], [tensor(F32)]) == V10
    assert operation_min_hal_version(Op.DEQUANTIZE, [tensor(QPC8)], [tensor(F16)]) == V12
    assert operation_min_hal_version(Op.DEQUANTIZE, [tensor(QAS8)], [tensor(F32)]) == V13


def test_variable_arity_operations() -> None:
    t = tensor(F32)
    validate_operation(Op.CONCATENATION, [t, t, t, scalar(INT)], [t])
    with pytest.raises(ValidationError, match="at least 2 inputs"):
        validate_operation(Op.CONCATENATION, [scalar(INT)], [t])
    validate_operation(Op.SPLIT, [t, scalar(INT), scalar(INT)], [t, t, t])
    with pytest.raises(ValidationError, match="SPLIT: output 2 has type TENSOR_INT32"):
        validate_operation(Op.SPLIT, [t, scalar(INT), scalar(INT)], [t, t, tensor(I32)])
    bidi = [t] * 12 + [scalar(INT), scalar(BOOL), scalar(BOOL)]
    assert operation_min_hal_version(Op.BIDIRECTIONAL_SEQUENCE_RNN, bidi, [t, t]) == V12
    assert operation_min_hal_version(Op.BIDIRECTIONAL_SEQUENCE_RNN, bidi, [t] * 4) == V13


def test_lstm_input_counts_and_versions() -> None:
    t = tensor(F32, [2, 2])
    base = [t] * 20 + [scalar(INT), scalar(FLOAT), scalar(FLOAT)]
    outputs = [t] * 4
    assert operation_min_hal_version(Op.LSTM, base, outputs) == V10
    assert operation_min_hal_version(Op.LSTM, base + [t] * 4, outputs) == V12
    with pytest.raises(ValidationError, match="LSTM: got 24 inputs"):
        validate_operation(Op.LSTM, [*base, t], outputs)


def test_resize_scalar_forms() -> None:
    image = tensor(F32)
    assert operation_min_hal_version(Op.RESIZE_BILINEAR, [image, scalar(INT), scalar(INT)], [image]) == V10
    scales = [scalar(FLOAT), scalar(FLOAT)]
    assert operation_min_hal_version(Op.RESIZE_BILINEAR, [image, *scales], [image]) == V12
    assert operation_min_hal_version(
        Op.RESIZE_BILINEAR, [image, scalar(INT), scalar(INT), scalar(BOOL), scalar(BOOL)], [image]) == V13
    with pytest.raises(ValidationError, match="RESIZE_BILINEAR: input 2 has type INT32, expected FLOAT32"):
        validate_operation(Op.RESIZE_BILINEAR, [image, scalar(FLOAT), scalar(INT)], [image])
    with pytest.raises(ValidationError, match="RESIZE_NEAREST_NEIGHBOR: got 3 inputs"):
        validate_operation(Op.RESIZE_NEAREST_NEIGHBOR, [image, scalar(INT), scalar(INT)], [image])


def test_control_flow_needs_subgraphs() -> None:
    condition = tensor(B8, [1])
    branch = Operand(int(T.SUBGRAPH), [], 1, 0.0, 0, OperandLifeTime.SUBGRAPH, DataLocation(0, 0, 0))
    with pytest.raises(ValidationError, match="IF: control flow operations can only be validated"):
        validate_operation(Op.IF, [condition, branch, branch, tensor(F32)], [tensor(F32)])
    assert operation_min_hal_version(Op.IF, [condition, branch, branch], [tensor(F32)]) == V13


def test_if_operation_against_its_branches() -> None:
    x = tensor(F32, [2])
    inner_in, inner_out = tensor(F32, [2]), tensor(F32, [2])
    branch = Subgraph([inner_in, inner_out], [], [0], [1])
    ref = Operand(int(T.SUBGRAPH), [], 1, 0.0, 0, OperandLifeTime.SUBGRAPH, DataLocation(0, 0, 0))
    condition = tensor(B8, [1])
    validate_operation(Op.IF, [condition, ref, ref, x], [tensor(F32, [2])], V13, [branch])
    with pytest.raises(ValidationError, match=r"IF: output 0 .* incompatible .* type TENSOR_INT32"):
        validate_operation(Op.IF, [condition, ref, ref, x], [tensor(I32, [2])], V13, [branch])
    with pytest.raises(ValidationError, match=r"IF: condition \(input 0\) must have dimensions \[1\]"):
        validate_operation(Op.IF, [tensor(B8, [2]), ref, ref, x], [tensor(F32, [2])], V13, [branch])
    with pytest.raises(ValidationError, match="then subgraph has 1 inputs, the operation passes 2"):
        validate_operation(Op.IF, [condition, ref, ref, x, x], [tensor(F32, [2])], V13, [branch])
    with pytest.raises(ValidationError, match=r"operation introduced in HAL 1.3"):
        validate_operation(Op.IF, [condition, ref, ref, x], [tensor(F32, [2])], V12, [branch])
