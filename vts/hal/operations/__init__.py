"""Per-operation signature validation: Android's ``validateOperation`` in Python.

``validate_operation`` decides whether one operation -- its type, the
operands it reads and writes, and the HAL version of the model that holds
it -- is legal; ``operation_min_hal_version`` answers which HAL version a
legal operation needs (useful for capability answers and for validating a
model against an older HAL).

The tables live in one module per family (``elementwise``, ``conv``,
``shape``, ``recurrent``, ``detection``, ``control_flow``, and ``aidl`` for the
operations the AIDL interface added); each exports a
``SPECS`` mapping and this module merges them, refusing duplicates and
checking that every fundamental operation (HAL 1.3's and AIDL's) is covered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from vts.hal.enums import (
    NEWEST_HAL_VERSION,
    HalVersion,
    OperationType,
    OperationTypeRange,
    enum_name,
    is_extension_type,
    operation_hal_version,
)
from vts.hal.operations import aidl, control_flow, conv, detection, elementwise, recurrent, shape
from vts.hal.operations._core import (
    OpContext,
    OpSpec,
    Signature,
    operand_types_version,
    operation_name,
    run_spec,
    type_name,
)
from vts.hal.types import Operand, Subgraph
from vts.hal.validation_error import BeyondHalRule, ValidationError

__all__ = [
    "SPECS",
    "OpContext",
    "OpSpec",
    "Signature",
    "ValidationError",
    "beyond_hal_rule_broken",
    "operation_min_hal_version",
    "operation_name",
    "run_spec",
    "validate_operation",
]


def _merge() -> Mapping[int, OpSpec]:
    merged: dict[int, OpSpec] = {}
    for module in (elementwise, conv, shape, recurrent, detection, control_flow, aidl):
        for op_type, spec in module.SPECS.items():
            if int(op_type) in merged:
                raise RuntimeError(f"operation {enum_name(OperationType, op_type)} is defined twice")
            merged[int(op_type)] = spec
    expected = set(range(OperationTypeRange.FUNDAMENTAL_MIN, OperationTypeRange.FUNDAMENTAL_MAX + 1))
    expected.add(int(OperationType.OEM_OPERATION))
    missing = expected - set(merged)
    if missing:
        names = ", ".join(enum_name(OperationType, m) for m in sorted(missing))
        raise RuntimeError(f"operations without a validation spec: {names}")
    return MappingProxyType(merged)


#: Every operation's spec, keyed by OperationType value (read-only).
SPECS: Mapping[int, OpSpec] = _merge()

_CONTROL_FLOW = (int(OperationType.IF), int(OperationType.WHILE))


def _required_version(
    op_type: int,
    inputs: Sequence[Operand],
    outputs: Sequence[Operand],
    hal_version: HalVersion,
    subgraphs: Sequence[Subgraph] | None,
    allow_unknown_control_flow_sizes: bool,
) -> HalVersion:
    if not isinstance(op_type, int) or isinstance(op_type, bool):
        raise ValidationError(f"operation type {op_type!r} is not an integer")
    if is_extension_type(op_type):
        # Extension operations are opaque to the HAL: only the vendor knows their signature.
        return HalVersion.V1_2
    spec = SPECS.get(op_type)
    if spec is None or (op_type == OperationType.OEM_OPERATION and hal_version.is_aidl):
        # OperationType.aidl has no OEM_OPERATION: AIDL refuses it as it refuses any unknown value.
        raise ValidationError(f"unknown operation type {op_type}")
    introduced = operation_hal_version(OperationType(op_type))
    if introduced > hal_version:
        raise ValidationError(
            f"{operation_name(op_type)}: operation introduced in {introduced.label}, validating for "
            f"{hal_version.label}"
        )
    ctx = OpContext(None, op_type, inputs, outputs, hal_version, subgraphs, allow_unknown_control_flow_sizes)
    version = run_spec(spec, ctx)
    if op_type == OperationType.OEM_OPERATION:
        return max(version, introduced)
    return max(version, introduced, operand_types_version(list(inputs) + list(outputs)))


def validate_operation(
    op_type: int,
    inputs: Sequence[Operand],
    outputs: Sequence[Operand],
    hal_version: HalVersion = HalVersion.V1_3,
    subgraphs: Sequence[Subgraph] | None = None,
    *,
    allow_unknown_control_flow_sizes: bool = False,
) -> None:
    """Raise :class:`ValidationError` unless the operation is legal in ``hal_version``.

    ``inputs``/``outputs`` are the operands the operation reads and writes,
    in slot order.  ``subgraphs`` are the model's referenced subgraphs, needed
    for IF and WHILE (whose SUBGRAPH operands index into it).
    ``allow_unknown_control_flow_sizes`` is the runtime's relaxation: HAL 1.3
    drivers must refuse WHILE operands of unknown size, the NNAPI runtime
    accepts them.  Extension operations (type > 0xFFFF) are opaque: they only
    need HAL 1.2; whether their prefix is declared is a model-level rule.
    """
    if isinstance(op_type, int) and is_extension_type(op_type) and hal_version < HalVersion.V1_2:
        raise ValidationError(
            f"{operation_name(op_type)}: extension operations need HAL 1.2, validating for HAL {hal_version}"
        )
    hal_version = HalVersion(hal_version)
    needed = _required_version(
        op_type, inputs, outputs, hal_version, subgraphs, allow_unknown_control_flow_sizes
    )
    if needed > hal_version:
        types = ", ".join(type_name(o.type) for o in inputs)
        raise ValidationError(
            f"{operation_name(op_type)}: these operands ({types}) need {needed.label}, validating for "
            f"{hal_version.label}"
        )



def beyond_hal_rule_broken(
    op_type: int,
    inputs: Sequence[Operand],
    outputs: Sequence[Operand],
    subgraphs: Sequence[Subgraph] | None = None,
) -> BeyondHalRule | None:
    """The NeuralNetworks.h rule beyond ValidateHal's (``BeyondHalRule``) this operation breaks, or None.

    Such a rule (a CONV_2D input of rank 3) does not make a model invalid in
    driver mode: a driver answers the operation unsupported and refuses to
    prepare it.  Driver-mode rules are assumed checked already (control-flow
    operands of unknown size are the runtime's relaxation, allowed here).
    """
    try:
        validate_operation(op_type, inputs, outputs, NEWEST_HAL_VERSION, subgraphs,
                           allow_unknown_control_flow_sizes=True)
    except BeyondHalRule as broken:
        return broken
    return None


def operation_min_hal_version(
    op_type: int,
    inputs: Sequence[Operand],
    outputs: Sequence[Operand],
    subgraphs: Sequence[Subgraph] | None = None,
) -> HalVersion:
    """The lowest HAL version in which this operation (type and operands) is legal.

    Raises :class:`ValidationError` when it is legal in no version.  IF and
    WHILE need HAL 1.3; without ``subgraphs`` their operands are not checked.
    """
    if op_type in _CONTROL_FLOW and subgraphs is None:
        return HalVersion.V1_3
    return _required_version(op_type, inputs, outputs, NEWEST_HAL_VERSION, subgraphs, True)
