"""A complete small driver to copy: float32 ADD, MUL, RELU and CONV_2D on numpy.

docs/driver-guide.md walks through it.  ``--driver template`` runs it (entry
point in pyproject.toml); ``--driver nnvts.drivers.template:create_device`` works
from a checkout without installing.
"""

from nnvts.drivers.template.device import TemplateDevice, create_device

__all__ = ["TemplateDevice", "create_device"]
