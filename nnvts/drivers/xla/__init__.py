"""An NN HAL driver over XLA (through JAX): ``pip install nnvts[xla]``, ``--driver xla``.

Backends and precision are options (``nnvts.drivers.xla.backend``): the
environment variables ``NNVTS_XLA_BACKEND`` (``cpu`` default, ``gpu``,
``cuda``, ``rocm``...) and ``NNVTS_XLA_PRECISION`` (``highest`` default,
``default``), or one of the factories below with ``--driver nnvts.drivers.xla:NAME``:

- ``create_device``: the options from the environment (the ``xla`` entry point);
- ``cpu``, ``gpu``: that backend, full precision;
- ``gpu_default_precision``, ``cpu_default_precision``: XLA's default
  convolution/matmul precision on float32 models (a self-test: on a GPU the
  suite must fail it; on the CPU it is the same as full precision).
"""

from nnvts.drivers.xla.device import XlaDevice, create_device


def cpu() -> XlaDevice:
    return create_device(backend="cpu", precision="highest")


def gpu() -> XlaDevice:
    return create_device(backend="gpu", precision="highest")


def cpu_default_precision() -> XlaDevice:
    return create_device(backend="cpu", precision="default")


def gpu_default_precision() -> XlaDevice:
    return create_device(backend="gpu", precision="default")


__all__ = ["XlaDevice", "cpu", "cpu_default_precision", "create_device", "gpu", "gpu_default_precision"]
