"""The bundled numpy reference accelerator."""

from nnvts.drivers.reference.device import ReferenceDevice, create_device

__all__ = ["ReferenceDevice", "create_device"]
