"""Which numpy primitive computes a 3x3 depthwise convolution fastest, on MobileNet-v1's layers.

Run from the repository root (one BLAS thread, as ``bench.mobilenet``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.depthwise_primitives

A depthwise layer is 9 multiply-adds per output element with a weight per
channel: no matrix product, so BLAS cannot take it, and numpy offers three
ways to write it.  Each is timed on the multiply-adds alone (input already
padded, no bias, no activation), over every depthwise shape of the network:

- ``einsum (driver)``: the reference driver's blocking (``bench.numpy_floor``):
  row blocks of a phase-split strip, one ``einsum`` per block;
- ``einsum (rows)``: one ``einsum`` per block of 8 output rows over the padded
  input itself (strided windows, channels innermost);
- ``ufunc per tap``: ``np.multiply`` then ``np.add`` per tap and block of
  rows, the ufuncs numpy runs with AVX-512 where the CPU has it (einsum's
  inner loops are compiled for the baseline instruction set only);
- ``multiply + add.reduce``: the 9 products of a block in one ``np.multiply``
  into a [rows, 9, ...] buffer, summed over the tap axis by ``np.add.reduce``.

The fastest of them is what ``bench.numpy_floor`` charges a numpy driver.
"""

from __future__ import annotations

import os

if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from bench.numpy_floor import SCRATCH_ELEMENTS, Scratch, depthwise_step
from vts.model.builtin.mobilenet import BLOCKS, FIRST_CHANNELS

Kernel = Callable[[], None]
ROWS = 8


def padded_input(rng: np.random.Generator, size: int, channels: int) -> np.ndarray:
    """[size + 2, (size + 2) * channels]: rows of pixels, channels innermost, a zero border of one pixel."""
    padded = np.zeros((size + 2, (size + 2) * channels), dtype=np.float32)
    padded[1:-1, channels:-channels] = rng.standard_normal((size, size * channels), dtype=np.float32)
    return padded


def windows(padded: np.ndarray, y0: int, rows: int, out_size: int, channels: int, stride: int) -> np.ndarray:
    """[rows, 3, 3, out_size, channels]: the input each tap multiplies for output rows y0..y0+rows."""
    row, item = padded.strides
    return np.lib.stride_tricks.as_strided(
        padded[y0 * stride:], shape=(rows, 3, 3, out_size, channels),
        strides=(stride * row, row, channels * item, stride * channels * item, item), writeable=False)


def einsum_rows(padded: np.ndarray, w: np.ndarray, out: np.ndarray, stride: int) -> Kernel:
    out_size, channels = out.shape[1], out.shape[2]

    def run() -> None:
        for y0 in range(0, out_size, ROWS):
            rows = min(ROWS, out_size - y0)
            np.einsum("yijxc,ijc->yxc", windows(padded, y0, rows, out_size, channels, stride), w,
                      out=out[y0:y0 + rows])

    return run


def ufunc_per_tap(padded: np.ndarray, w: np.ndarray, out: np.ndarray, stride: int) -> Kernel:
    out_size, channels = out.shape[1], out.shape[2]
    scratch = np.empty((ROWS, out_size, channels), dtype=np.float32)

    def run() -> None:
        for y0 in range(0, out_size, ROWS):
            rows = min(ROWS, out_size - y0)
            view = windows(padded, y0, rows, out_size, channels, stride)
            target, product = out[y0:y0 + rows], scratch[:rows]
            np.multiply(view[:, 0, 0], w[0, 0], out=target)
            for i in range(3):
                for j in range(3):
                    if i or j:
                        np.multiply(view[:, i, j], w[i, j], out=product)
                        np.add(target, product, out=target)

    return run


def multiply_reduce(padded: np.ndarray, w: np.ndarray, out: np.ndarray, stride: int) -> Kernel:
    out_size, channels = out.shape[1], out.shape[2]
    products = np.empty((ROWS, 3, 3, out_size, channels), dtype=np.float32)

    def run() -> None:
        for y0 in range(0, out_size, ROWS):
            rows = min(ROWS, out_size - y0)
            block = products[:rows]
            np.multiply(windows(padded, y0, rows, out_size, channels, stride), w[:, :, None, :], out=block)
            np.add.reduce(block.reshape(rows, 9, out_size, channels), axis=1, out=out[y0:y0 + rows])

    return run


def layers() -> list[tuple[int, int, int, int]]:
    """(input size, channels, stride, how many such layers) of MobileNet-v1-224's depthwise convolutions."""
    shapes: dict[tuple[int, int, int], int] = {}
    size, channels = 112, FIRST_CHANNELS
    for out_channels, stride in BLOCKS:
        shapes[(size, channels, stride)] = shapes.get((size, channels, stride), 0) + 1
        size, channels = size // stride, out_channels
    return [(*shape, count) for shape, count in shapes.items()]


def median_ms(kernel: Kernel, runs: int) -> float:
    for _ in range(3):
        kernel()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        kernel()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def main(runs: int = 30) -> int:
    rng = np.random.default_rng(0)
    names = ("einsum (driver)", "einsum (rows)", "ufunc per tap", "multiply + add.reduce")
    totals = dict.fromkeys(names, 0.0)
    print(f"numpy {np.__version__}; median of {runs} runs, ms; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'layer (in, C, stride) x count':<30}" + "".join(f"{name:>23}" for name in names))
    for size, channels, stride, count in layers():
        out_size = size // stride
        padded = padded_input(rng, size, channels)
        w = rng.standard_normal((3, 3, channels), dtype=np.float32)
        out = np.empty((out_size, out_size, channels), dtype=np.float32)
        driver = depthwise_step(Scratch(rng, SCRATCH_ELEMENTS), size, out_size, channels, stride, w)
        kernels = [driver, einsum_rows(padded, w, out, stride),
                   ufunc_per_tap(padded, w, out, stride), multiply_reduce(padded, w, out, stride)]
        times = [median_ms(kernel, runs) for kernel in kernels]
        for name, ms in zip(names, times, strict=True):
            totals[name] += ms * count
        label = f"{size}x{size}x{channels} /{stride} x{count}"
        print(f"{label:<30}" + "".join(f"{ms:23.3f}" for ms in times))
    print(f"{'network total':<30}" + "".join(f"{totals[name]:23.3f}" for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
