"""Compilation-cache files a driver may reuse: authenticated before anything in them is parsed.

The HAL hands a driver cache files (``prepareModel``'s model and data cache
handles, HAL 1.2+) that any process could have written; a driver must not
build a model, let alone load an executable, from bytes it did not write for
this token (the caching rules of ``IDevice.hal`` 1.2/1.3, which VTS
CompilationCachingTests.cpp checks).  Two of our drivers cache (the reference
and XLA), so the rules live here once:

* **Files.** One model-cache file: a magic, a JSON header (driver version, the
  model's structure, the SHA-256 of the data cache), the model's small
  constants, then an HMAC-SHA256 tag over all of it.  One data-cache file: the
  model's constant pools, then whatever the driver adds (XLA: its executable).
* **Key.** The tag's key is HMAC(driver secret, token || driver version): a
  flipped bit, a truncated or extended file, another model's cache, another
  token, another driver version or instance all fail.  The secret is random
  per driver instance unless the driver's environment variable gives one (hex).
* **Order.** Both files are read once (a concurrent writer cannot slip content
  in between check and use), the tag is compared in constant time, the data
  digest against the authenticated header; only then is anything parsed.
  Any failure is GENERAL_FAILURE.
* **Saving never changes preparation**: wrong handle counts, an unusable file
  or an I/O error leave the model prepared and uncached.  Files may have any
  size and offset: they are truncated before writing and used at explicit
  offsets (``pread``/``pwrite``), and no descriptor is kept after the call.
* **Retrieval validates its arguments**: wrong handle counts or a token that is
  not 32 bytes are INVALID_ARGUMENT; a write-only or non-regular file is
  GENERAL_FAILURE.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import stat
import struct
from collections.abc import Sequence
from typing import Any

from vts.hal import memory as hal_memory
from vts.hal.enums import BYTE_SIZE_OF_CACHE_TOKEN, ErrorStatus
from vts.hal.errors import DriverError
from vts.hal.types import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    Operation,
    Subgraph,
    SymmPerChannelQuantParams,
)

NUM_MODEL_CACHE = 1
NUM_DATA_CACHE = 1
_LENGTH = struct.Struct("<Q")
TAG_SIZE = hashlib.sha256().digest_size
#: Larger cache files are not ours (and not worth reading).
MAX_CACHE_BYTES = 1 << 31


class CacheRejected(Exception):
    """A cache that cannot be used; ``status`` is what prepare_model_from_cache answers."""

    def __init__(self, status: ErrorStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def secret_from_environment(variable: str) -> bytes:
    """The secret named (in hex) by ``variable``, else a fresh random one for this driver instance."""
    configured = os.environ.get(variable, "") if variable else ""
    if configured:
        with contextlib.suppress(ValueError):
            return bytes.fromhex(configured)
    return os.urandom(32)


# -- descriptors -------------------------------------------------------------------


def _access_mode(fd: int) -> int:
    try:
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except (OSError, ValueError, TypeError, OverflowError) as error:
        raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache handle {fd!r} is not an open descriptor: {error}")\
            from None


def _require_regular(fd: int) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache handle {fd} is not a regular file")


def read_file(fd: int) -> bytes:
    """The whole file behind ``fd``, read at explicit offsets (the descriptor's position is untouched)."""
    if _access_mode(fd) == os.O_WRONLY:
        raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache handle {fd} is write-only")
    _require_regular(fd)
    size = os.fstat(fd).st_size
    if size > MAX_CACHE_BYTES:
        raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache file of {size} bytes is not ours")
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def check_writable(fd: int) -> None:
    """A save handle must be a regular file opened read-write (checked for all before writing any)."""
    if _access_mode(fd) != os.O_RDWR:
        raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache handle {fd} is not open read-write")
    _require_regular(fd)


def write_file(fd: int, data: bytes) -> None:
    """Replace the file's content: truncate first (it may hold anything), write at offset 0."""
    os.ftruncate(fd, 0)
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.pwrite(fd, view[offset:], offset)


# -- model <-> JSON (only ever parsed from authenticated bytes) ------------------------


def _operand_doc(o: Operand) -> list[Any]:
    extra: Any = None
    if isinstance(o.extra_params, SymmPerChannelQuantParams):
        extra = {"scales": [float(v) for v in o.extra_params.scales], "channel_dim": int(o.extra_params.channel_dim)}
    elif isinstance(o.extra_params, bytes | bytearray):
        extra = {"extension": base64.b64encode(bytes(o.extra_params)).decode()}
    loc = o.location
    return [int(o.type), [int(d) for d in o.dimensions], int(o.number_of_consumers), float(o.scale),
            int(o.zero_point), int(o.lifetime), [int(loc.pool_index), int(loc.offset), int(loc.length)], extra]


def _operand(doc: list[Any]) -> Operand:
    type_, dims, consumers, scale, zero_point, lifetime, loc, extra = doc
    params: SymmPerChannelQuantParams | bytes | None = None
    if isinstance(extra, dict) and "scales" in extra:
        params = SymmPerChannelQuantParams(list(extra["scales"]), extra["channel_dim"])
    elif isinstance(extra, dict):
        params = base64.b64decode(extra["extension"])
    return Operand(type_, list(dims), consumers, scale, zero_point, lifetime, DataLocation(*loc), params)


def _subgraph_doc(g: Subgraph) -> dict[str, Any]:
    return {"operands": [_operand_doc(o) for o in g.operands],
            "operations": [[int(op.type), [int(i) for i in op.inputs], [int(i) for i in op.outputs]]
                           for op in g.operations],
            "inputs": [int(i) for i in g.input_indexes], "outputs": [int(i) for i in g.output_indexes]}


def _subgraph(doc: dict[str, Any]) -> Subgraph:
    return Subgraph([_operand(o) for o in doc["operands"]],
                    [Operation(t, list(i), list(o)) for t, i, o in doc["operations"]],
                    list(doc["inputs"]), list(doc["outputs"]))


# -- the cache ------------------------------------------------------------------------


class ModelCache:
    """Saves and restores one driver instance's prepared models (one secret, one version string).

    ``magic`` names the driver's format; ``extra`` (save) is appended to the
    data cache and handed back by ``load`` (an executable, say), authenticated
    like the rest.
    """

    def __init__(self, magic: bytes, version: str, secret: bytes | None = None, secret_variable: str = "") -> None:
        self.magic = magic
        self.version = version
        self._secret = secret if secret is not None else secret_from_environment(secret_variable)

    @staticmethod
    def counts() -> tuple[int, int]:
        return NUM_MODEL_CACHE, NUM_DATA_CACHE

    def _tag(self, token: bytes, payload: bytes) -> bytes:
        key = hmac.new(self._secret, bytes(token) + self.version.encode(), hashlib.sha256).digest()
        return hmac.new(key, payload, hashlib.sha256).digest()

    def save(self, model: Model, model_cache: Sequence[int], data_cache: Sequence[int], token: bytes,
             extra: bytes = b"") -> str:
        """Write the cache if the arguments allow it; returns why not ("" when saved).  Never raises."""
        if not model_cache and not data_cache:
            return "no cache requested"
        if len(model_cache) != NUM_MODEL_CACHE or len(data_cache) != NUM_DATA_CACHE:
            return f"{len(model_cache)} model / {len(data_cache)} data cache handles, expected 1 / 1"
        if not isinstance(token, bytes | bytearray) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            return "token is not 32 bytes"
        try:
            for fd in (*model_cache, *data_cache):
                check_writable(fd)  # all or nothing: a half-written cache set could pair with stale files
            data = b"".join(pool.read(0, pool.size) for pool in model.pools) + bytes(extra)
            header = {
                "version": self.version,
                "main": _subgraph_doc(model.main),
                "referenced": [_subgraph_doc(g) for g in model.referenced],
                "relaxed": model.relax_computation_float32_to_float16,
                "extensions": [[e.name, e.prefix] for e in model.extension_name_to_prefix],
                "pools": [[pool.name, pool.size] for pool in model.pools],
                "extra_bytes": len(extra),
                "data_sha256": hashlib.sha256(data).hexdigest(),
            }
            text = json.dumps(header, separators=(",", ":")).encode()
            payload = self.magic + _LENGTH.pack(len(text)) + text + bytes(model.operand_values)
            write_file(data_cache[0], data)
            write_file(model_cache[0], payload + self._tag(token, payload))
        except (CacheRejected, OSError, ValueError, TypeError, OverflowError) as error:
            return f"not cached: {error}"
        return ""

    def verified_payload(self, blob: bytes, token: bytes) -> bytes:
        """The model cache without its tag, if the tag is the one this driver wrote for ``token``."""
        payload, tag = blob[:-TAG_SIZE], blob[-TAG_SIZE:]
        if len(blob) <= TAG_SIZE or not hmac.compare_digest(tag, self._tag(token, payload)):
            raise CacheRejected(ErrorStatus.GENERAL_FAILURE,
                                "model cache failed verification (modified, replaced, another token, "
                                "another driver version or instance)")
        return payload

    def load(self, model_cache: Sequence[int], data_cache: Sequence[int], token: bytes) -> tuple[Model, bytes]:
        """(model, extra) saved under ``token``; DriverError(GENERAL_FAILURE or INVALID_ARGUMENT) otherwise."""
        if len(model_cache) != NUM_MODEL_CACHE or len(data_cache) != NUM_DATA_CACHE:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"{len(model_cache)} model / {len(data_cache)} data "
                              f"cache handles, this driver needs {NUM_MODEL_CACHE} / {NUM_DATA_CACHE}")
        if not isinstance(token, bytes | bytearray) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "cache token must be 32 bytes")
        try:
            blob = read_file(model_cache[0])
            data = read_file(data_cache[0])
            return self._parse(self.verified_payload(blob, token), data)
        except CacheRejected as rejected:
            raise DriverError(rejected.status, str(rejected)) from None
        except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error) as error:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"unusable cache: {error}") from None

    def _parse(self, payload: bytes, data: bytes) -> tuple[Model, bytes]:
        """A model (and the extra bytes) from verified cache bytes; anything inconsistent is GENERAL_FAILURE."""
        if not payload.startswith(self.magic):
            raise CacheRejected(ErrorStatus.GENERAL_FAILURE, "not this driver's kind of model cache")
        (length,) = _LENGTH.unpack_from(payload, len(self.magic))
        start = len(self.magic) + _LENGTH.size
        header = json.loads(payload[start:start + length])
        if not hmac.compare_digest(hashlib.sha256(data).hexdigest(), str(header["data_sha256"])):
            raise CacheRejected(ErrorStatus.GENERAL_FAILURE, "data cache does not match the model cache")
        if header["version"] != self.version:
            raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache written by {header['version']}, this is "
                                f"{self.version}")
        pools, offset = [], 0
        try:
            for kind, size in header["pools"]:
                pool = hal_memory.allocate(kind if kind in hal_memory.POOL_KINDS else hal_memory.ASHMEM, max(size, 1))
                pool.write(0, data[offset:offset + size])
                pools.append(pool)
                offset += size
            extra = data[offset:]
            if len(extra) != header["extra_bytes"]:
                raise CacheRejected(ErrorStatus.GENERAL_FAILURE, "data cache length differs from the header")
            model = Model(
                main=_subgraph(header["main"]),
                referenced=[_subgraph(g) for g in header["referenced"]],
                operand_values=payload[start + length:],
                pools=pools,
                relax_computation_float32_to_float16=bool(header["relaxed"]),
                extension_name_to_prefix=[ExtensionNameAndPrefix(n, p) for n, p in header["extensions"]],
            )
            return model, extra
        except BaseException:
            for pool in pools:
                pool.close()
            raise

