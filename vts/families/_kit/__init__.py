"""The private kit of the families: shared mechanics (prepare, execute, judge, the per-example family base,
threads, waves of jobs, the fenced path's rules, request mutations, random inputs, derived models, the burst
path and AIDL's burst token checks, the dynamic-shape rules, the device-memory model runs, AIDL v4's config
calls).

Families share code only through this kit: a family never imports another (an import-linter independence
contract in pyproject.toml keeps it so), so a helper two families need lives here.
"""

#: What the kit offers the families: its modules, each one job (imported by name, never re-exported here, so
#: a family pays only for what it uses).  Programs above the families use the names vts.families exports.
__all__ = ["burst_path", "burst_tokens", "concurrent_calls", "derived_models", "device_memory_runs",
           "dynamic_shapes", "executions", "fenced_path", "fresh_inputs", "jobs", "judge", "loop_abort", "per_example",
           "random_inputs", "request_mutations", "request_variants", "supported_models", "version_rules",
           "with_config"]
