"""The private kit of the families: shared mechanics (prepare, execute, judge, the per-example family base,
threads, derived models)."""
