"""Case data: test models decoded from specs, their lowering to the HAL, accuracy criteria, built-in models.

``__all__`` names what the families, the runner, the drivers' tests and
the benches use of it (the built-in models are ``vts.model.builtin``'s own front); each
name loads from its module on first use, so importing the package stays
cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
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
    "FIBONACCI",
    "FLOAT16",
    "FLOAT32",
    "HISTOGRAM_BINS",
    "REQUEST_ARGUMENT_ALIGNMENT",
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
    "OutputComparison",
    "TensorData",
    "Tolerance",
    "ToleranceError",
    "build_request",
    "close_model",
    "compare_output",
    "criteria_for",
    "default_registry",
    "dtype_of",
    "element_count",
    "iter_spec_models",
    "model_case_name",
    "operation_parameters",
    "parse_model",
    "parse_spec",
    "to_hal_model",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
