"""The private kit of the families: shared mechanics (prepare, execute, judge, threads, derived models)."""
