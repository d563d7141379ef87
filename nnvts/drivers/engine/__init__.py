"""What every engine-backed driver shares: the HAL side (validation, pools, deadlines) and NNAPI argument decoding.

A driver over an inference engine (``nnvts/drivers/litert``, ``nnvts/drivers/onnxruntime``)
is two parts: a *translator* from the NNAPI model to the engine's graph format,
and the HAL plumbing around the engine.  The plumbing is the same for every
engine, so it lives here once (``device.py``); so does reading NNAPI's
argument conventions (``nnapi.py``: padding schemes, strides, layouts, fused
activations), which both translators need.
"""
