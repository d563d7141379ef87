"""An NN HAL driver over ONNX Runtime: ``pip install nnvts[onnxruntime]``, ``--driver onnxruntime``."""

from nnvts.drivers.onnxruntime.device import OnnxRuntimeDevice, create_device

__all__ = ["OnnxRuntimeDevice", "create_device"]
