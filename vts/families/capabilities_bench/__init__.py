"""The capabilities_bench family (opt-in): declared execTime must be near the measured speed."""
