"""An NN HAL driver over LiteRT (the TFLite interpreter): ``pip install nnvts[litert]``, ``--driver litert``."""

from nnvts.drivers.litert.device import LiteRtDevice, create_device

__all__ = ["LiteRtDevice", "create_device"]
