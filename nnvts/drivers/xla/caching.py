"""Compilation caching of the XLA driver: the compiled executable itself, authenticated before it is loaded.

What is cached: the XLA executable that ``prepare_model`` compiled
(``jax.experimental.serialize_executable.serialize``), plus the model it
was compiled from (needed to validate requests).  Restoring loads the
executable with ``deserialize_and_load``, so no XLA compilation happens; only
if loading fails (an XLA runtime that cannot load its own executable) is the
verified model recompiled.

``deserialize_and_load`` unpickles its input, and JAX warns that loading an
executable "may run arbitrary code": nothing from a cache file reaches it,
nor ``json``, before the bytes are authenticated.

* **Files.** One model-cache file: a magic, a JSON header (driver version,
  backend, the model's structure, the SHA-256 of the data cache), the
  model's small constants, then an HMAC-SHA256 tag over all of it.  One
  data-cache file: the model's constant pools, then the executable.
* **Key.** The tag's key is HMAC(driver secret, token || driver version):
  another token, another driver version (JAX upgraded, another backend or
  precision option: all part of the version string) or another driver
  instance's secret all fail.  The secret is random per driver instance;
  ``NNVTS_XLA_CACHE_SECRET`` (hex) makes it persistent.
* **Order.** Read both files once, verify the tag over the model cache
  (constant-time compare), verify the data cache's digest against the
  authenticated header; only then parse the header and load the executable.
  Any failure is GENERAL_FAILURE ("never deserialized": a test spies on the
  loader to prove it).
* **Saving never changes preparation**: wrong handle counts, unwritable
  files or an executable that cannot be serialized leave the model prepared
  and uncached.  Handles are used at explicit offsets (pread/pwrite).
"""

from __future__ import annotations

from collections.abc import Sequence

from vts.hal.cache_files import CacheRejected, ModelCache
from vts.hal.types import Model

__all__ = ["MAGIC", "SECRET_ENV", "CacheRejected", "CompilationCache"]

MAGIC = b"nnvts-xla-cache\x00v1"
SECRET_ENV = "NNVTS_XLA_CACHE_SECRET"


class CompilationCache(ModelCache):
    """Saves and restores compiled models: the model plus its serialized executable (``vts.hal.cache_files``)."""

    def __init__(self, version: str, secret: bytes | None = None) -> None:
        super().__init__(MAGIC, version, secret, SECRET_ENV)

    def save(self, model: Model, executable: bytes, model_cache: Sequence[int],  # type: ignore[override]
             data_cache: Sequence[int], token: bytes) -> str:
        """Write the cache if the arguments allow it; returns why not ("" when saved).  Never raises."""
        return super().save(model, model_cache, data_cache, token, extra=executable)
