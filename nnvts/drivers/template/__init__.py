"""A complete small AIDL v4 driver to copy: float32 ADD, MUL, RELU and CONV_2D on numpy.

It speaks the stable AIDL interface version 4 (feature level 8, ``hal_version = HalVersion.FL8``), what a
vendor writes for Android 13 and later; ``device.py`` says how to declare HAL 1.3 instead.

docs/driver-guide.md walks through it.  ``--driver template`` runs it (entry
point in pyproject.toml); ``--driver nnvts.drivers.template:create_device`` works
from a checkout without installing.
"""

from nnvts.drivers.template.device import TemplateDevice, create_device

__all__ = ["TemplateDevice", "create_device"]
