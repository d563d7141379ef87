"""Case data: test models decoded from specs, their lowering to the HAL, accuracy criteria, built-in models.

``__all__`` names what the families, the runner, the drivers' tests and
the benches use of it (the built-in models of ``builtin`` included); each
name loads from its module on first use, so importing the package stays
cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.model.builtin.cache_models import chain, mobilenet
    from vts.model.builtin.memory_models import (
        CONFLICT_TYPE,
        TEST_TYPES,
        OperandSpec,
        add_model,
        conv_model,
        is_quantized,
    )
    from vts.model.builtin.mobilenet import BLOCKS, FIRST_CHANNELS, build_mobilenet_v1_float, build_mobilenet_v1_quant8
    from vts.model.builtin.synthetic import add_chain
    from vts.model.casemodel import (
        REQUEST_ARGUMENT_ALIGNMENT,
        BuiltRequest,
        CaseExample,
        CaseModel,
        CaseOperand,
        CaseOperation,
        CaseSubgraph,
        ConstantPolicy,
        ModelFormatError,
        TensorData,
        build_request,
        close_model,
        dtype_of,
        element_count,
        iter_spec_models,
        model_case_name,
        parse_model,
        parse_spec,
        to_hal_model,
    )
    from vts.model.compare import (
        FLOAT16,
        FLOAT32,
        HISTOGRAM_BINS,
        WORST_KEPT,
        Criteria,
        OutputComparison,
        Tolerance,
        ToleranceError,
        compare_output,
        criteria_for,
    )
    from vts.model.extensions import (
        FIBONACCI,
        ExtensionAllowlist,
        ExtensionNotAllowed,
        ExtensionRegistry,
        default_registry,
    )
    from vts.model.parameters import operation_parameters

#: The public names, by the module that defines each.
_HOMES = {
    "vts.model.builtin.cache_models": ("chain", "mobilenet"),
    "vts.model.builtin.memory_models": (
        "CONFLICT_TYPE", "OperandSpec", "TEST_TYPES", "add_model", "conv_model", "is_quantized",
    ),
    "vts.model.builtin.mobilenet": (
        "BLOCKS", "FIRST_CHANNELS", "build_mobilenet_v1_float", "build_mobilenet_v1_quant8",
    ),
    "vts.model.builtin.synthetic": ("add_chain",),
    "vts.model.casemodel": (
        "BuiltRequest", "CaseExample", "CaseModel", "CaseOperand", "CaseOperation", "CaseSubgraph", "ConstantPolicy",
        "ModelFormatError", "REQUEST_ARGUMENT_ALIGNMENT", "TensorData", "build_request", "close_model", "dtype_of",
        "element_count", "iter_spec_models", "model_case_name", "parse_model", "parse_spec", "to_hal_model",
    ),
    "vts.model.compare": (
        "Criteria", "FLOAT16", "FLOAT32", "HISTOGRAM_BINS", "OutputComparison", "Tolerance", "ToleranceError",
        "WORST_KEPT", "compare_output", "criteria_for",
    ),
    "vts.model.extensions": (
        "ExtensionAllowlist", "ExtensionNotAllowed", "ExtensionRegistry", "FIBONACCI", "default_registry",
    ),
    "vts.model.parameters": ("operation_parameters",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "BLOCKS",
    "CONFLICT_TYPE",
    "FIBONACCI",
    "FIRST_CHANNELS",
    "FLOAT16",
    "FLOAT32",
    "HISTOGRAM_BINS",
    "REQUEST_ARGUMENT_ALIGNMENT",
    "TEST_TYPES",
    "WORST_KEPT",
    "BuiltRequest",
    "CaseExample",
    "CaseModel",
    "CaseOperand",
    "CaseOperation",
    "CaseSubgraph",
    "ConstantPolicy",
    "Criteria",
    "ExtensionAllowlist",
    "ExtensionNotAllowed",
    "ExtensionRegistry",
    "ModelFormatError",
    "OperandSpec",
    "OutputComparison",
    "TensorData",
    "Tolerance",
    "ToleranceError",
    "add_chain",
    "add_model",
    "build_mobilenet_v1_float",
    "build_mobilenet_v1_quant8",
    "build_request",
    "chain",
    "close_model",
    "compare_output",
    "conv_model",
    "criteria_for",
    "default_registry",
    "dtype_of",
    "element_count",
    "is_quantized",
    "iter_spec_models",
    "mobilenet",
    "model_case_name",
    "operation_parameters",
    "parse_model",
    "parse_spec",
    "to_hal_model",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
