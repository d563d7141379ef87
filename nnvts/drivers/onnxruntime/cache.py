"""Compiled sessions cached per machine: a provider's compiled context, keyed by model and options, authenticated.

An NPU compile is slow (QNN's HTP: 0.1-1 s a model), and a corpus run
prepares the same model many times (every family, every worker).  ONNX
Runtime can write what a provider compiled as an *EP context* model
(``ep.context_enable``: an ONNX model whose one node holds the provider's
compiled binary, embedded); loading that model skips the compile.  This
cache keeps those models in a directory, one file per key:

* **Key**: SHA-256 over the translated model's bytes, the provider's name,
  version and options for this model (relaxed or not), and ONNX Runtime's
  version: another model, option or engine is another file, never a stale hit.
* **Authenticated before use**, as the XLA driver's cache files are
  (``nnvts.drivers.xla.caching``): a file is ``MAGIC``, an HMAC-SHA256 tag over
  the key and the payload, then the payload.  The tag is checked
  (constant-time) before ONNX Runtime sees a byte: a provider's context
  loader parses a binary blob, and a file planted or changed in the
  directory must not reach it.  A file that fails is ignored and replaced.
* **Secret**: ``secret`` in the cache directory, 32 random bytes written
  once with mode 0600.  It is not used (the cache turns itself off, with
  the reason in ``note``) unless it is a regular file owned by this user
  that nobody else can read or write, in a directory nobody else can write.
* **Never changes preparation**: a provider that writes no context, an
  unwritable directory, or a hit that fails to load all fall back to
  compiling the model as if there were no cache.

Where: the ``cache`` driver option (a directory, ``on`` or ``off``), else
``$NNVTS_ENGINE_CACHE``; ``on`` is ``$NNVTS_ENGINE_CACHE`` or
``$XDG_CACHE_HOME/nnvts/onnxruntime`` (``~/.cache``).  The CPU provider is
never cached (it compiles nothing worth keeping).

**Off by default**, as measured (bench/README.md, engine plugins): on the
HTP *emulated* on x86_64, loading a compiled context costs more than
compiling the ONNX model (bundled one-operation models: compile 79 ms,
load 107 ms, compile-and-store 182 ms; MobileNet-v1 96: compile 2.3 s, load
32 s).  On a device whose HTP loads context binaries natively (what apps
ship) it is the fast path; there, turn it on.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
from pathlib import Path

from nnvts.drivers.engine.device import EngineFailure
from nnvts.drivers.onnxruntime.providers import Provider, ort
from nnvts.drivers.onnxruntime.translator import OrtProgram

MAGIC = b"nnvts-ort-ctx\x00v1"
ENV = "NNVTS_ENGINE_CACHE"
_TAG = 32


def default_directory() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nnvts" / "onnxruntime"


def _private(path: Path, kind: int) -> str:
    """'' if ``path`` is a ``kind`` (S_IFREG/S_IFDIR) owned by us that no one else may write; else why not."""
    info = path.lstat()
    if stat.S_IFMT(info.st_mode) != kind:
        return f"{path} is not a {'file' if kind == stat.S_IFREG else 'directory'}"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH | (stat.S_IRGRP | stat.S_IROTH if kind == stat.S_IFREG else 0)):
        return f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
    return ""


def _secret(directory: Path) -> tuple[bytes | None, str]:
    """(the directory's secret, '') or (None, why the cache is off)."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        problem = _private(directory, stat.S_IFDIR)
        if problem:
            return None, problem
        path = directory / "secret"
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(handle, "wb") as stream:
                stream.write(os.urandom(32))
        problem = _private(path, stat.S_IFREG)
        if problem:
            return None, problem
        secret = path.read_bytes()
        return (secret, "") if len(secret) == 32 else (None, f"{path} is not a 32-byte secret")
    except OSError as error:
        return None, f"cache directory unusable: {error}"


class SessionCache:
    """Sessions of one provider, compiled once per machine: ``program`` is the only entry."""

    def __init__(self, provider: Provider, directory: Path | None) -> None:
        self.provider = provider
        self.directory = directory
        self.secret: bytes | None = None
        self.note = "off" if directory is None else ""
        self.hits = self.misses = 0
        if directory is not None and not provider.is_cpu:
            self.secret, self.note = _secret(directory)

    @property
    def active(self) -> bool:
        return self.secret is not None

    def key(self, content: bytes, relaxed: bool) -> str:
        digest = hashlib.sha256()
        options = sorted(self.provider.provider_options(relaxed).items())
        for part in (ort().__version__, self.provider.name, self.provider.version, repr(options)):
            digest.update(part.encode() + b"\x00")
        digest.update(content)
        return digest.hexdigest()

    def _tag(self, key: str, payload: bytes) -> bytes:
        assert self.secret is not None
        return hmac.new(self.secret, key.encode() + b"\x00" + payload, hashlib.sha256).digest()

    def load(self, key: str) -> bytes | None:
        """The authenticated payload stored under ``key``, or None (absent, short, forged, or unreadable)."""
        assert self.directory is not None
        try:
            data = (self.directory / f"{key}.ctx").read_bytes()
        except OSError:
            return None
        head = len(MAGIC) + _TAG
        if len(data) < head or not data.startswith(MAGIC):
            return None
        tag, payload = data[len(MAGIC):head], data[head:]
        return payload if hmac.compare_digest(tag, self._tag(key, payload)) else None

    def store(self, key: str, payload: bytes) -> None:
        """Write ``MAGIC + tag + payload`` atomically (a temporary file renamed); failures are ignored."""
        assert self.directory is not None
        try:
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".ctx-")
            with os.fdopen(handle, "wb") as stream:
                stream.write(MAGIC + self._tag(key, payload) + payload)
            os.replace(temporary, self.directory / f"{key}.ctx")
        except OSError:
            pass

    def program(self, content: bytes, relaxed: bool) -> OrtProgram:
        """A program of ``content``: from the cache when an authenticated context is there, else compiled."""
        if not self.active:
            return OrtProgram(content, self.provider, relaxed)
        key = self.key(content, relaxed)
        payload = self.load(key)
        if payload is not None:
            try:
                program = OrtProgram(payload, self.provider, relaxed)
                self.hits += 1
                return program
            except EngineFailure:
                pass  # a context this runtime cannot load: compile again, replace it
        self.misses += 1
        assert self.directory is not None
        with tempfile.TemporaryDirectory(dir=self.directory, prefix=".compile-") as scratch:
            path = Path(scratch) / "model_ctx.onnx"
            context = {"ep.context_enable": "1", "ep.context_embed_mode": "1", "ep.context_file_path": str(path)}
            program = OrtProgram(content, self.provider, relaxed, context)
            try:
                compiled = path.read_bytes()
            except OSError:
                return program  # the provider writes no context: nothing to keep
        self.store(key, compiled)
        return program
