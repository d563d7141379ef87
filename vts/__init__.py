"""nnvts: a conformance harness for NN HAL accelerator drivers."""

__version__ = "0.1.0"
