"""JAX, imported once and configured for NNAPI semantics; the backend and precision options of the driver.

Options (there is no option syntax in ``--driver``, so the driver reads
environment variables, and ``nnvts.drivers.xla`` exports one factory per common
variant for ``--driver nnvts.drivers.xla:NAME``):

- ``NNVTS_XLA_BACKEND``: ``cpu`` (default), ``gpu`` / ``cuda`` / ``rocm``, or any
  platform name JAX reports (``jax.devices(name)``).  ``gpu`` and ``cuda``
  both mean "the first GPU JAX sees".
- ``NNVTS_XLA_PRECISION``: ``highest`` (default: float32 models compute at
  full float32 precision) or ``default`` (XLA's default matmul/conv precision:
  on GPUs TF32 or bfloat16 passes, which the HAL forbids for float32 models
  that do not allow relaxed computation; a self-test variant the suite must
  catch on a GPU; on a CPU the two are the same).

JAX is configured process-wide when the driver loads: 64-bit integer types
on (the fixed-point requantization of quantized operations needs int64
intermediates, as the reference's numpy arithmetic has), and the default
matmul precision set to match the precision option.  The driver runs in its
own host process by default, so this touches nothing else.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

BACKEND_ENV = "NNVTS_XLA_BACKEND"
PRECISION_ENV = "NNVTS_XLA_PRECISION"
PRECISIONS = ("highest", "default")
_GPU_ALIASES = {"gpu": "gpu", "cuda": "cuda", "rocm": "rocm"}


class BackendUnavailable(ImportError):
    """The asked-for JAX backend is not present here: an ImportError, so nnvts says it once (exit status 2)."""


@functools.cache
def jax_module() -> Any:
    """``jax``, configured for the driver (64-bit integers on)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


@dataclass(frozen=True)
class Backend:
    """The JAX device a driver instance runs on, and its precision option."""

    platform: str  # the platform JAX reports: cpu, cuda, rocm, ...
    device: Any  # the jax.Device every computation is compiled for and every buffer lives on
    precision: str  # "highest" or "default"

    @property
    def is_gpu(self) -> bool:
        return self.platform not in ("cpu", "interpreter")

    @property
    def kind(self) -> str:
        """The device kind JAX reports (``cpu``, ``NVIDIA H100 80GB HBM3``...), made name-safe."""
        raw = str(getattr(self.device, "device_kind", self.platform)).strip().lower()
        return "".join(c if c.isalnum() else "-" for c in raw).strip("-") or self.platform

    def lax_precision(self, relaxed: bool) -> Any:
        """The ``precision=`` for convolutions and dots: HIGHEST unless the model or the option relaxes it."""
        lax = jax_module().lax
        if self.precision == "default" or relaxed:
            return lax.Precision.DEFAULT
        return lax.Precision.HIGHEST


def select_backend(name: str | None = None, precision: str | None = None) -> Backend:
    """The backend ``name`` (default: ``$NNVTS_XLA_BACKEND`` or ``cpu``), or ``BackendUnavailable``."""
    name = (name or os.environ.get(BACKEND_ENV) or "cpu").strip().lower()
    precision = (precision or os.environ.get(PRECISION_ENV) or "highest").strip().lower()
    if precision not in PRECISIONS:
        raise ValueError(f"{PRECISION_ENV}={precision!r}: expected one of {', '.join(PRECISIONS)}")
    jax = jax_module()
    jax.config.update("jax_default_matmul_precision", "highest" if precision == "highest" else "default")
    platform = _GPU_ALIASES.get(name, name)
    try:
        devices = jax.devices(platform)
    except RuntimeError as error:
        available = ", ".join(sorted({d.platform for d in jax.devices()})) or "none"
        raise BackendUnavailable(f"JAX has no {name!r} backend here ({str(error).splitlines()[0][:200]}); "
                                 f"available: {available}") from None
    if not devices:
        raise BackendUnavailable(f"JAX reports no {name!r} device")
    device = devices[0]
    return Backend(str(device.platform), device, precision)


def jax_version() -> str:
    jax = jax_module()
    import jaxlib

    return f"jax {jax.__version__}, jaxlib {jaxlib.__version__}"
