"""Drivers with options (``--driver-option``): the reference device under a name and version they choose.

``create_device`` declares three options of three types, each observable
from the harness: ``name`` (the device name), ``revision`` (an int in the
version string) and ``loud`` (a bool, a suffix of the version string).
``any_options`` takes ``**options`` (any name), ``needs_name`` a required one.
"""

from __future__ import annotations

from collections.abc import Sequence

from nnvts.drivers.reference.device import ReferenceDevice


class OptionedDevice(ReferenceDevice):
    """The reference device, named and versioned by its options."""

    def __init__(self, name: str, version: str) -> None:
        self._version = version  # before the base's __init__, which asks for it
        super().__init__()
        self.name = name

    def get_version_string(self) -> str:
        return self._version


def create_device(argv: Sequence[str] = (), name: str = "optioned", revision: int = 1, loud: bool = False,
                  scale: float = 1.0) -> OptionedDevice:
    """The reference device named ``nnvts-NAME``.

    Driver options:
        name: the device's name after ``nnvts-``
        revision: the number in its version string
        loud: whether the version string ends in ``!``
        scale: a float, shown in the version string
    """
    return OptionedDevice(f"nnvts-{name}", f"optioned {revision} x{scale}{'!' if loud else ''}")


def any_options(argv: Sequence[str] = (), **options: str) -> OptionedDevice:
    """Takes any option; each shows in the version string."""
    return OptionedDevice("nnvts-any", " ".join(f"{key}={value}" for key, value in sorted(options.items())))


def needs_name(*, name: str) -> OptionedDevice:
    """A factory with a required option."""
    return OptionedDevice(f"nnvts-{name}", "needs-name")
