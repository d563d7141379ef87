"""What a validation model mutation costs the harness before it reaches the socket: copy, mutate, encode.

Run standalone from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m bench.mutation_encoding \\
        --specs ../shared/corpus/V1_1 --every 4

Two ways over the same mutations of the same models, in one process, alternating rounds:

* ``copied``: what the sweep did before 2026-11-29: every operand and operation of the model copied
  for each mutation, and the whole model encoded;
* ``shared``: the mutation shares what it leaves alone with its model (``clone_model``), and the
  encoder copies those entries from the model's bytes (``SubgraphBytes``).

Both produce the same bytes (checked here on every mutation, and in
tests/families/test_validation_sharing.py).  Ratios of one sitting only.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import time

from vts.families.validation.family import BUILTIN_REGISTRY
from vts.families.validation.mutations import MUTATORS, apply_mutation, enumerate_mutations
from vts.hal.types import DataLocation, Model, Operand, Operation, Subgraph
from vts.ipc import protocol as p
from vts.ipc.protocol import Writer
from vts.model.casemodel import close_model, parse_spec, to_hal_model


def copied(model: Model) -> Model:
    """Every operand and operation of the main subgraph copied (the clone before sharing)."""
    main = model.main
    operands = [Operand(o.type, list(o.dimensions), o.number_of_consumers, o.scale, o.zero_point, o.lifetime,
                        DataLocation(o.location.pool_index, o.location.offset, o.location.length), o.extra_params)
                for o in main.operands]
    operations = [Operation(op.type, list(op.inputs), list(op.outputs)) for op in main.operations]
    return Model(Subgraph(operands, operations, list(main.input_indexes), list(main.output_indexes)),
                 model.referenced, model.operand_values, model.pools, model.relax_computation_float32_to_float16,
                 model.extension_name_to_prefix)


def _memory_id(ids: dict[int, int]):
    return lambda pool: ids.setdefault(id(pool), len(ids) + 1)


def run_copied(work: list[tuple[Model, list]]) -> list[bytes]:
    out, ids = [], {}
    for model, mutations in work:
        for mutation in mutations:
            mutated = copied(model)
            MUTATORS[mutation.kind][1](mutated, mutation)
            w = Writer()
            p.write_model(w, mutated, _memory_id(ids))
            out.append(bytes(w.buf))
    return out


def run_shared(work: list[tuple[Model, list]]) -> list[bytes]:
    out, ids = [], {}
    for model, mutations in work:
        like = p.SubgraphBytes.of(model.main)
        for mutation in mutations:
            w = Writer()
            p.write_model(w, apply_mutation(model, mutation), _memory_id(ids), like)
            out.append(bytes(w.buf))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", default="../shared/corpus/V1_1", help="a folder of .json.gz corpus specs")
    parser.add_argument("--every", type=int, default=4, help="take every Nth spec file")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    models = []
    for path in sorted(glob.glob(os.path.join(args.specs, "*.json.gz")))[::args.every]:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            models += [to_hal_model(m, None, BUILTIN_REGISTRY) for m in parse_spec(json.load(handle))]
    work = [(model, list(enumerate_mutations(model))) for model in models]
    count = sum(len(m) for _, m in work)
    times: dict[str, list[float]] = {"copied": [], "shared": []}
    for _ in range(args.rounds):
        for name, run in (("copied", run_copied), ("shared", run_shared)):
            start = time.process_time()
            encoded = run(work)
            times[name].append(time.process_time() - start)
        assert run_copied(work) == encoded, "the two ways encoded different bytes"
    print(f"{len(models)} models, {count} mutations; CPU per mutation (best of {args.rounds}):")
    for name, values in times.items():
        print(f"  {name}: {min(values) / count * 1e6:.1f} us")
    print(f"  copied / shared: {min(times['copied']) / min(times['shared']):.2f}x")
    print(f"load average after: {os.getloadavg()}")
    for model in models:
        close_model(model)


if __name__ == "__main__":
    main()
