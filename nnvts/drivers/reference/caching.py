"""Compilation caching for the reference driver (HAL 1.2+ ``prepareModel`` cache arguments).

The reference driver's compiled form is the validated model itself, so the
cache holds a serialized model: the structure and small constants in the one
model-cache file, the constant pools in the one data-cache file.  The rules
that make it a conformance yardstick (integrity bound to the token and the
driver version, verification before parsing, best-effort saving, handles used
at explicit offsets, argument checks at retrieval) are ``vts.hal.cache_files``,
shared with the XLA driver.  ``NNVTS_REFERENCE_CACHE_SECRET`` (hex) makes the
per-instance secret persistent.
"""

from __future__ import annotations

from vts.hal.cache_files import CacheRejected, ModelCache

__all__ = ["MAGIC", "CacheRejected", "CompilationCache"]

MAGIC = b"nnvts-reference-cache\x00v1"


class CompilationCache(ModelCache):
    """The reference driver's cache: a model and nothing else."""

    def __init__(self, version: str, secret: bytes | None = None) -> None:
        super().__init__(MAGIC, version, secret, "NNVTS_REFERENCE_CACHE_SECRET")
