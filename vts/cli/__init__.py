"""The faces of nnvts: every click command, its parameter types and exit codes (the only code that sees argv).

The entry point is ``vts.cli.main:main`` (pyproject's ``nnvts`` script);
``main`` and ``device_info`` are not named here, being the names of their
modules.  ``__all__`` names the rest that other code (the tests) uses: the
parameter types and the duration parser.  Each loads on first use: the goal
for ``nnvts --help`` is 100 ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vts import lazy_front

if TYPE_CHECKING:
    from vts.cli.duration import parse_duration
    from vts.cli.params import (
        DriverParam,
        FiniteFloat,
        InputFile,
        OutputDir,
        OutputFile,
        ResultsFile,
        SocketFd,
        SocketPath,
    )

#: The public names, by the module that defines each.
_HOMES = {
    "vts.cli.duration": ("parse_duration",),
    "vts.cli.params": (
        "DriverParam", "FiniteFloat", "InputFile", "OutputDir", "OutputFile", "ResultsFile", "SocketFd", "SocketPath",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "DriverParam", "FiniteFloat", "InputFile", "OutputDir", "OutputFile", "ResultsFile", "SocketFd", "SocketPath",
    "parse_duration",
]


__getattr__ = lazy_front(__name__, _HOME_OF)
