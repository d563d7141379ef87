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
MAGIC = b"nnvts-xla-cache\x00v1"
SECRET_ENV = "NNVTS_XLA_CACHE_SECRET"
_LENGTH = struct.Struct("<Q")
_TAG_SIZE = hashlib.sha256().digest_size
MAX_CACHE_BYTES = 1 << 31


class CacheRejected(Exception):
    def __init__(self, status: ErrorStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _secret() -> bytes:
    configured = os.environ.get(SECRET_ENV, "")
    if configured:
        with contextlib.suppress(ValueError):
            return bytes.fromhex(configured)
    return os.urandom(32)


# -- descriptors ----------------------------------------------------------------


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
    if _access_mode(fd) != os.O_RDWR:
        raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache handle {fd} is not open read-write")
    _require_regular(fd)


def write_file(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.pwrite(fd, view[offset:], offset)


# -- model <-> JSON (only ever parsed from authenticated bytes) -----------------------


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


# -- the cache --------------------------------------------------------------------


class CompilationCache:
    """Saves and restores compiled models for one driver instance (one secret, one version string)."""

    def __init__(self, version: str, secret: bytes | None = None) -> None:
        self.version = version
        self._secret = secret if secret is not None else _secret()

    @staticmethod
    def counts() -> tuple[int, int]:
        return NUM_MODEL_CACHE, NUM_DATA_CACHE

    def _tag(self, token: bytes, payload: bytes) -> bytes:
        key = hmac.new(self._secret, bytes(token) + self.version.encode(), hashlib.sha256).digest()
        return hmac.new(key, payload, hashlib.sha256).digest()

    def save(self, model: Model, executable: bytes, model_cache: Sequence[int], data_cache: Sequence[int],
             token: bytes) -> str:
        """Write the cache if the arguments allow it; returns why not ("" when saved).  Never raises."""
        if not model_cache and not data_cache:
            return "no cache requested"
        if len(model_cache) != NUM_MODEL_CACHE or len(data_cache) != NUM_DATA_CACHE:
            return f"{len(model_cache)} model / {len(data_cache)} data cache handles, expected 1 / 1"
        if not isinstance(token, bytes | bytearray) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            return "token is not 32 bytes"
        try:
            for fd in (*model_cache, *data_cache):
                check_writable(fd)
            pools = b"".join(pool.read(0, pool.size) for pool in model.pools)
            data = pools + executable
            header = {
                "version": self.version,
                "main": _subgraph_doc(model.main),
                "referenced": [_subgraph_doc(g) for g in model.referenced],
                "relaxed": model.relax_computation_float32_to_float16,
                "extensions": [[e.name, e.prefix] for e in model.extension_name_to_prefix],
                "pools": [[pool.name, pool.size] for pool in model.pools],
                "executable_bytes": len(executable),
                "data_sha256": hashlib.sha256(data).hexdigest(),
            }
            text = json.dumps(header, separators=(",", ":")).encode()
            payload = MAGIC + _LENGTH.pack(len(text)) + text + bytes(model.operand_values)
            write_file(data_cache[0], data)
            write_file(model_cache[0], payload + self._tag(token, payload))
        except (CacheRejected, OSError, ValueError, TypeError, OverflowError) as error:
            return f"not cached: {error}"
        return ""

    def verified(self, model_blob: bytes, data: bytes, token: bytes) -> tuple[bytes, bytes]:
        """(authenticated model-cache payload, authenticated data) or CacheRejected; parses nothing."""
        payload, tag = model_blob[:-_TAG_SIZE], model_blob[-_TAG_SIZE:]
        if len(model_blob) <= _TAG_SIZE or not hmac.compare_digest(tag, self._tag(token, payload)):
            raise CacheRejected(ErrorStatus.GENERAL_FAILURE,
                                "model cache failed authentication (modified, replaced, another token, "
                                "another driver version or instance)")
        if not payload.startswith(MAGIC):
            raise CacheRejected(ErrorStatus.GENERAL_FAILURE, "not an XLA-driver model cache")
        return payload, data

    def load(self, model_cache: Sequence[int], data_cache: Sequence[int], token: bytes) -> tuple[Model, bytes]:
        """(model, serialized executable) saved under ``token``; DriverError otherwise."""
        if len(model_cache) != NUM_MODEL_CACHE or len(data_cache) != NUM_DATA_CACHE:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"{len(model_cache)} model / {len(data_cache)} data "
                              f"cache handles, this driver needs {NUM_MODEL_CACHE} / {NUM_DATA_CACHE}")
        if not isinstance(token, bytes | bytearray) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "cache token must be 32 bytes")
        try:
            blob = read_file(model_cache[0])
            data = read_file(data_cache[0])
            payload, data = self.verified(blob, data, token)
            (length,) = _LENGTH.unpack_from(payload, len(MAGIC))
            start = len(MAGIC) + _LENGTH.size
            header = json.loads(payload[start:start + length])
            if header["version"] != self.version:
                raise CacheRejected(ErrorStatus.GENERAL_FAILURE, f"cache of {header['version']}, not {self.version}")
            if not hmac.compare_digest(hashlib.sha256(data).hexdigest(), header["data_sha256"]):
                raise CacheRejected(ErrorStatus.GENERAL_FAILURE, "data cache does not match the model cache")
            return self._model(header, payload[start + length:], data)
        except CacheRejected as rejected:
            raise DriverError(rejected.status, str(rejected)) from None
        except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error) as error:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"unusable cache: {error}") from None

    @staticmethod
    def _model(header: dict[str, Any], operand_values: bytes, data: bytes) -> tuple[Model, bytes]:
        pools, offset = [], 0
        try:
            for kind, size in header["pools"]:
                pool = hal_memory.allocate(kind if kind in hal_memory.POOL_KINDS else hal_memory.ASHMEM,
                                           max(size, 1))
                pool.write(0, data[offset:offset + size])
                pools.append(pool)
                offset += size
            executable = data[offset:]
            if len(executable) != header["executable_bytes"]:
                raise CacheRejected(ErrorStatus.GENERAL_FAILURE, "executable length differs from the header")
            model = Model(
                main=_subgraph(header["main"]),
                referenced=[_subgraph(g) for g in header["referenced"]],
                operand_values=operand_values,
                pools=pools,
                relax_computation_float32_to_float16=bool(header["relaxed"]),
                extension_name_to_prefix=[ExtensionNameAndPrefix(n, p) for n, p in header["extensions"]],
            )
            return model, executable
        except BaseException:
            for pool in pools:
                pool.close()
            raise
