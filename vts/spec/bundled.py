"""Where the bundled cases are: ``generated_tests/`` here, or the copy installed with nnvts.

In a clone the cases are ``generated_tests/`` at its root, and commands run
from there name them by that relative path (as the reports and the docs
do).  An installed nnvts (a wheel, no clone) carries the same files as
package data, ``nnvts/generated_tests/``: a vendor's ``nnvts run --driver
mydrv`` from any folder runs them without a checkout.  In the clone that
folder is a link to the root's, so there is one copy of the cases.
"""

from __future__ import annotations

import importlib.util
import os

#: The folder the bundled cases have at the root of a clone, and inside the ``nnvts`` package.
CASES_FOLDER = "generated_tests"


def installed_cases() -> str | None:
    """The bundled cases installed with nnvts (``.../site-packages/nnvts/generated_tests``), if any.

    Found without importing the package (``find_spec`` of a top-level name runs no code).
    """
    spec = importlib.util.find_spec("nnvts")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(location, CASES_FOLDER)
        if os.path.isdir(path):
            return path
    return None


def default_spec_paths() -> list[str]:
    """``--specs`` when none is given: ``generated_tests`` in the current folder (a clone), else the installed
    cases; ``generated_tests`` still when neither exists, so the error names what was looked for."""
    if os.path.isdir(CASES_FOLDER):
        return [CASES_FOLDER]
    installed = installed_cases()
    return [installed] if installed is not None else [CASES_FOLDER]
