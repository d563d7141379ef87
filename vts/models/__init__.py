"""Whole networks built programmatically as ``TestModel``s (benchmarks, capability measurements)."""
