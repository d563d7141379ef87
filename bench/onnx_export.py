"""Export an nnvts ``CaseModel`` to ONNX, so ONNX Runtime can run the very same network.

There is one NNAPI -> ONNX translation in nnvts: the ONNX Runtime driver's
(``nnvts/drivers/onnxruntime/ops.py`` says how layouts, padding, fused
activations and quantized operators map).  This module only turns a test
model into the HAL model that translation reads.  The exported graph takes
and returns tensors in NNAPI's layout (NHWC), exactly as the driver does;
operations the translation cannot express exactly raise
``NotImplementedError`` instead of exporting something different.
"""

from __future__ import annotations

from typing import Any

from vts.model.casemodel import CaseModel, close_model, to_hal_model


def export(model: CaseModel) -> Any:
    """The ``onnx.ModelProto`` of ``model``'s main subgraph (same inputs, outputs and layout)."""
    from nnvts.drivers.engine.nnapi import ModelView, Unsupported
    from nnvts.drivers.onnxruntime.translator import translate

    hal_model = to_hal_model(model)
    try:
        return translate(ModelView(hal_model))
    except Unsupported as error:
        raise NotImplementedError(str(error)) from None
    finally:
        close_model(hal_model)
