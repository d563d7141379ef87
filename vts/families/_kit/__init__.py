"""The private kit of the families: shared mechanics (prepare, execute, judge, the per-example family base,
threads, waves of jobs, the fenced path's rules, request mutations, random inputs, derived models).

Families share code only through this kit: a family never imports another (an import-linter independence
contract in pyproject.toml keeps it so), so a helper two families need lives here.
"""
