"""Benchmarks of the reference driver against peers (see README.md); run as ``python -m bench.mobilenet``."""
