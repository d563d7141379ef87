"""The operation under test in a case's model and its scalar parameters (stride, dilation, padding, ...).

A failure's detail in a report shows them, so a vendor sees "CONV_2D, stride 2, dilation 2, padding
SAME" next to the wrong numbers without opening the spec.  The ADDs that Android's
``all_inputs_as_internal`` lifetime variation puts in front of a model's inputs
(``vts.spec.transforms.all_inputs_as_internal``: ``ADD(x_new, x_placeholder, activation) -> x``) are
helpers, not the operation under test.  Parameter names come from the NNAPI signatures of the
windowed operations (the ones whose scalars a vendor gets wrong); other operations' scalars are
named by their operand names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vts.hal.enums import OperandLifeTime, OperandType, OperationType, enum_name
from vts.model.casemodel import CaseModel, CaseOperation, CaseSubgraph

_EXPLICIT_PAD = ("padding_left", "padding_right", "padding_top", "padding_bottom")
_CONV_TAIL = ("layout", "dilation_width", "dilation_height")
#: Operation -> its input-name signatures (explicit padding, then implicit); a signature with a layout
#: flag fits an operation with exactly as many inputs as its names, or as many as a prefix ending before
#: "layout" or after it.  Android's specs name scalars "param", "param1", ...: these names are the ones
#: NeuralNetworks.h gives, which a report's causes rely on ("beta ≠ 1.0").
SIGNATURES: dict[str, tuple[tuple[str, ...], ...]] = {
    "CONV_2D": (
        ("input", "filter", "bias", *_EXPLICIT_PAD, "stride_width", "stride_height", "activation", *_CONV_TAIL),
        ("input", "filter", "bias", "padding_scheme", "stride_width", "stride_height", "activation", *_CONV_TAIL),
    ),
    "DEPTHWISE_CONV_2D": (
        ("input", "filter", "bias", *_EXPLICIT_PAD, "stride_width", "stride_height", "depth_multiplier",
         "activation", *_CONV_TAIL),
        ("input", "filter", "bias", "padding_scheme", "stride_width", "stride_height", "depth_multiplier",
         "activation", *_CONV_TAIL),
    ),
    **{pool: (
        ("input", *_EXPLICIT_PAD, "stride_width", "stride_height", "filter_width", "filter_height", "activation",
         "layout"),
        ("input", "padding_scheme", "stride_width", "stride_height", "filter_width", "filter_height", "activation",
         "layout"),
    ) for pool in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")},
    # Without a layout flag: a signature fits any prefix of it (the trailing inputs are optional).
    "SOFTMAX": (("input", "beta", "axis"),),
    "LOG_SOFTMAX": (("input", "beta", "axis"),),
    "FULLY_CONNECTED": (("input", "weights", "bias", "activation"),),
    **{binary: (("input1", "input2", "activation"),) for binary in ("ADD", "SUB", "MUL", "DIV")},
}
PADDING_SCHEMES = {1: "SAME", 2: "VALID"}
MAX_PARAMETERS = 16


def _name(enum_cls: type, value: int | str) -> str:
    return value if isinstance(value, str) else enum_name(enum_cls, value)


def is_helper_add(graph: CaseSubgraph, operation: CaseOperation) -> bool:
    """An ADD inserted by ``all_inputs_as_internal``: a model input plus a ``*_placeholder`` constant."""
    if _name(OperationType, operation.type) != "ADD" or len(operation.inputs) != 3:
        return False
    placeholder = graph.operands[operation.inputs[1]]
    # Named "X_placeholder" by nnvts's transform, "placeholder", "placeholder13" in Android's generated specs.
    named = placeholder.name.rstrip("0123456789") == "placeholder" or placeholder.name.endswith("_placeholder")
    return (operation.inputs[0] in graph.inputs and named
            and placeholder.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE))


def operation_under_test(model: CaseModel) -> CaseOperation | None:
    """The main graph's first operation that is not a lifetime variation's helper ADD (else the first)."""
    graph = model.main
    for operation in graph.operations:
        if not is_helper_add(graph, operation):
            return operation
    return graph.operations[0] if graph.operations else None


def _signature(graph: CaseSubgraph, operation: CaseOperation, op_type: str) -> tuple[str, ...] | None:
    count = len(operation.inputs)
    for names in SIGNATURES.get(op_type, ()):
        if "layout" not in names:
            return names[:count] if count <= len(names) else None
        layout = names.index("layout")
        if count not in (layout, layout + 1, len(names)):
            continue
        if count > layout and _name(OperandType, graph.operands[operation.inputs[layout]].type) != "BOOL":
            continue
        return names[:count]
    return None


def _scalar(value: Any) -> int | float | bool | None:
    if isinstance(value, np.ndarray):
        if value.size != 1:
            return None
        value = value.reshape(-1)[0].item()
    elif isinstance(value, np.generic):
        value = value.item()
    return value if isinstance(value, int | float | bool) else None


def operation_parameters(model: CaseModel) -> dict[str, Any] | None:
    """``{"operation": "CONV_2D", "operand_type": "TENSOR_FLOAT32", "rank": 4, "parameters": [{"input": 3,
    "name": "padding_scheme", "value": 1, "meaning": "SAME"}, ...]}``: the operation under test, the type and
    rank of its first input (``rank`` absent when unknown), and its constant scalar inputs; None without one.

    The type and rank are what a support claim is about ("FULLY_CONNECTED on a rank-4 quant8 input"): the
    report's causes (``vts.report.causes``) name them, and the scalars, next to the operation.
    """
    graph = model.main
    operation = operation_under_test(model)
    if operation is None:
        return None
    op_type = _name(OperationType, operation.type)
    names = _signature(graph, operation, op_type)
    parameters: list[dict[str, Any]] = []
    for position, index in enumerate(operation.inputs):
        operand = graph.operands[index]
        if operand.dims or operand.lifetime not in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            continue
        value = _scalar(operand.value)
        if value is None:
            continue
        name = names[position] if names else operand.name
        entry: dict[str, Any] = {"input": position, "name": name, "value": value}
        if name == "padding_scheme" and value in PADDING_SCHEMES:
            entry["meaning"] = PADDING_SCHEMES[value]
        parameters.append(entry)
        if len(parameters) == MAX_PARAMETERS:
            break
    described: dict[str, Any] = {"operation": op_type}
    if operation.inputs:
        first = graph.operands[operation.inputs[0]]
        described["operand_type"] = _name(OperandType, first.type)
        if first.dims:  # dims () leave the rank unknown
            described["rank"] = len(first.dims)
    described["parameters"] = parameters
    return described
