"""Spec files: loading, JSON Schema validation, semantic checks, variation expansion, generation.

Import the pieces from their modules (``vts.spec.loader``, ``vts.spec.writer``);
this package module stays import-light so ``nnvts --help`` stays fast.
"""

from vts.spec.errors import SpecError

__all__ = ["SpecError"]
