"""The driver's environment: built from an allowlist, never the harness's whole environment.

A CI job's environment holds its secrets (tokens, keys, cloud credentials);
copied into the driver's, any driver could read them.  The driver gets only:

* ``PATH``, the locale (``LANG``, ``LANGUAGE``, ``LC_*``), ``TZ``, ``TERM``;
* what Python and native libraries need to run as configured: ``PYTHONPATH``
  (the harness's import path, for Python hosts), ``PYTHONHASHSEED``,
  ``PYTHONUNBUFFERED``, ``PYTHONDONTWRITEBYTECODE``, ``PYTHONFAULTHANDLER``,
  ``PYTHONWARNINGS``, ``PYTHONIOENCODING``, ``LD_LIBRARY_PATH``, and the
  thread-count and backend settings of the numeric libraries (``OPENBLAS_*``,
  ``OMP_*``, ``MKL_*``, ``XLA_FLAGS``, ``TF_CPP_MIN_LOG_LEVEL``,
  ``CUDA_VISIBLE_DEVICES``);
* ``NNVTS_*``: settings of nnvts and of its drivers (``NNVTS_XLA_BACKEND``,
  ``NNVTS_REFERENCE_MEMORY_BUDGET``), except the harness's own controls
  (``HARNESS_ONLY``);
* each name given with ``--driver-env NAME`` (``DRIVER_ENV``), on purpose;
* ``HOME`` and ``TMPDIR``, set to the driver's scratch directory where a
  sandbox gives it one (the harness's home is not the driver's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

__all__ = ["ALLOWED_NAMES", "ALLOWED_PREFIXES", "DRIVER_ENV", "HARNESS_ONLY", "driver_environment", "extra_names"]

ALLOWED_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE", "PYTHONFAULTHANDLER", "PYTHONWARNINGS", "PYTHONIOENCODING", "LD_LIBRARY_PATH",
    "XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES",
})
ALLOWED_PREFIXES = ("LC_", "OPENBLAS_", "OMP_", "MKL_", "NNVTS_")
#: Names the user passes on purpose (``--driver-env NAME``, repeatable): comma-separated, inherited by ``-j``
#: workers and every host.
DRIVER_ENV = "NNVTS_DRIVER_ENV"
#: ``NNVTS_*`` names that configure the harness, not the driver: never passed.
HARNESS_ONLY = frozenset({DRIVER_ENV, "NNVTS_SANDBOX", "NNVTS_SANDBOX_HIDE", "NNVTS_TASK_LIMIT",
                          "NNVTS_SCRATCH_MIB", "NNVTS_SANDBOX_UID"})


def extra_names(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names ``--driver-env`` passes (``NNVTS_DRIVER_ENV``), in order, without repeats."""
    text = (os.environ if environ is None else environ).get(DRIVER_ENV, "")
    return tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def allowed(name: str, extra: Iterable[str] = ()) -> bool:
    if name in HARNESS_ONLY:
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES) or name in set(extra)


def driver_environment(environ: Mapping[str, str] | None = None, extra: Iterable[str] | None = None
                       ) -> dict[str, str]:
    """The allowlisted part of ``environ`` (default: this process's), with ``extra`` names (``--driver-env``)."""
    source = os.environ if environ is None else environ
    names = tuple(extra_names(source) if extra is None else extra)
    return {name: value for name, value in source.items() if allowed(name, names)}
