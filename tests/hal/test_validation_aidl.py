"""Model validation by interface: what the AIDL interface (feature levels 5 to 8) dropped or narrowed from HIDL 1.3."""

from __future__ import annotations

import pytest

from tests.hal.test_validation import L, T, add_model, expect_invalid, operand
from vts.hal.enums import HalVersion, OperationType
from vts.hal.types import ExtensionNameAndPrefix
from vts.hal.validation import validate_model

AIDL = HalVersion.FL8


def test_number_of_consumers_is_no_rule_of_aidl():
    model = add_model()
    model.main.operands[0].number_of_consumers = 5
    expect_invalid(model, "declares numberOfConsumers 5")
    validate_model(model, AIDL, hal_rules_only=True)  # Operand.aidl has no such field


def test_oem_types_and_operation_are_gone_in_aidl():
    model = add_model()
    model.main.operands.append(operand(T.TENSOR_OEM_BYTE, [3], L.SUBGRAPH_INPUT))
    model.main.input_indexes.append(len(model.main.operands) - 1)
    validate_model(model, HalVersion.V1_3)
    expect_invalid(model, "TENSOR_OEM_BYTE is not one of AIDL.s", AIDL)
    model = add_model()
    model.main.operations[0].type = int(OperationType.OEM_OPERATION)
    with pytest.raises(Exception, match="unknown operation type 10000"):
        validate_model(model, AIDL)


def test_extension_prefixes_are_15_bits_in_aidl():
    model = add_model()
    model.main.operations[0].type = (0x8001 << 16) | 1
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.ops", 0x8001)]
    validate_model(model, HalVersion.V1_3)
    expect_invalid(model, "does not fit AIDL's 15 bits", AIDL)
    model.main.operations[0].type = (0x7001 << 16) | 1
    model.extension_name_to_prefix = [ExtensionNameAndPrefix("com.example.ops", 0x7001)]
    validate_model(model, AIDL)


@pytest.mark.parametrize(("text", "described"), [
    ("1.3", "HIDL 1.3, feature level 4"), ("hidl-1.0", "HIDL 1.0, feature level 1"),
    ("aidl-v4", "AIDL v4, feature level 8"), ("AIDL v1", "AIDL v1, feature level 5"),
    ("FL7", "AIDL v3, feature level 7"),
])
def test_interfaces_as_written(text, described):
    assert HalVersion.from_text(text).describe == described


@pytest.mark.parametrize("text", ["9", "aidl-v5", "1.4", "FL9", ""])
def test_what_is_no_interface(text):
    with pytest.raises(ValueError):
        HalVersion.from_text(text)
