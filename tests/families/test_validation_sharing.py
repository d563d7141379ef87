"""Model mutations share what they leave alone with their model, and are still sent as their own bytes.

``clone_model`` copies a model's lists but not its operands and operations; a mutator takes its own
copy of an entry before changing it.  A mutator that changed a shared entry would corrupt the model
every later mutation is made from, and the wire encoding that copies shared entries from the model's
bytes (``SubgraphBytes``) would send stale bytes: both are checked here on every mutation of every
model of a spread of specs.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from vts.families.validation.mutations import apply_mutation, enumerate_mutations
from vts.hal.types import DataLocation, Model, Operand, Operation, Subgraph
from vts.ipc import protocol as p
from vts.ipc.protocol import Writer
from vts.model.casemodel import ConstantPolicy, close_model, parse_spec, to_hal_model
from vts.spec.loader import load_file

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"

#: Models of every shape the mutators meet: many operands (LSTM), per-channel quantization, several
#: operations, constants by reference, variable outputs, extension operations.
CORPUS_FILES = ("V1_0/lstm.json.gz", "V1_2/conv2d_per_channel.json.gz", "V1_0/depthwise_conv.json.gz",
                "V1_2/split_float_1.json.gz", "V1_2/bidirectional_sequence_lstm.json.gz",
                "V1_1/space_to_batch_quant8_1.json.gz", "V1_0/concat_quant8_3.json.gz")
LOCAL_FILES = ("generated_tests/fibonacci.json",)


def _encode(model: Model, like: p.SubgraphBytes | None = None) -> bytes:
    ids: dict[int, int] = {}
    w = Writer()
    p.write_model(w, model, lambda pool: ids.setdefault(id(pool), len(ids) + 1), like)
    return bytes(w.buf)


def _models(name: str) -> list[object]:
    if name.startswith("generated_tests/"):
        return parse_spec(load_file(str(ROOT / name)).document)
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is not present (the external corpus lives in ../shared/corpus)")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return parse_spec(json.load(handle))


@pytest.mark.parametrize("name", CORPUS_FILES + LOCAL_FILES)
@pytest.mark.parametrize("constants", ["by_size", "as_written"])
def test_every_mutation_leaves_its_model_alone_and_encodes_as_its_own(name: str, constants: str) -> None:
    from vts.families.validation.family import BUILTIN_REGISTRY

    checked = 0
    for case_model in _models(name):
        hal = to_hal_model(case_model, ConstantPolicy(mode=constants), BUILTIN_REGISTRY)
        try:
            before = _encode(hal)
            like = p.SubgraphBytes.of(hal.main)
            for mutation in enumerate_mutations(hal):
                mutated = apply_mutation(hal, mutation)
                own = _encode(mutated)
                assert _encode(mutated, like) == own, mutation.slug
                assert _encode(hal) == before, f"{mutation.slug} changed the model it was made from"
                if mutation.kind not in ("execution_preference", "execution_priority"):
                    assert own != before, f"{mutation.slug} changed nothing"
                checked += 1
        finally:
            close_model(hal)
    assert checked > 0


def _operand(value: int) -> Operand:
    return Operand(3, [1, value], 1, 0.5, value, 1, DataLocation(0, value, 4), None)


def test_shared_entries_are_copied_wherever_they_are_and_the_rest_is_encoded() -> None:
    operands = [_operand(i) for i in range(6)]
    operations = [Operation(0, [0, 1], [2]), Operation(1, [2, 3], [4]), Operation(2, [4], [5])]
    base = Subgraph(operands, operations, [0, 1, 3], [5])
    like = p.SubgraphBytes.of(base)
    variants = [
        Subgraph(list(operands), list(operations), [0], [5]),  # all shared
        Subgraph([*operands[:2], _operand(9), *operands[3:]], list(operations), [0, 1, 3], [5]),  # one replaced
        Subgraph(operands[:3] + operands[4:], [operations[0], operations[2]], [0], [5]),  # removals shift the rest
        Subgraph([*operands, _operand(7)], [*operations, Operation(4, [6], [0])], [0, 1, 3, 6], [5]),  # appended
        Subgraph(list(reversed(operands)), [operations[2], operations[0], operations[1]], [], []),  # reordered
        Subgraph([], [], [], []),
    ]
    for variant in variants:
        plain, reused = Writer(), Writer()
        p.write_subgraph(plain, variant)
        p.write_subgraph(reused, variant, like)
        assert bytes(reused.buf) == bytes(plain.buf)
