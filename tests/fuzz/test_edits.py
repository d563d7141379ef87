"""Edits: applied in place, skipped when their target is gone, and round-tripped through JSON."""

from __future__ import annotations

import math

from vts.families.fuzz_replay.edits import Edit, apply_edit, apply_edits, dumps, loads
from vts.hal.types import DataLocation, ExtensionNameAndPrefix, MemoryToken, Model, Operand, Operation, Subgraph


def small_model() -> Model:
    operand = Operand(3, [2], 1, 0.5, 0, 0)
    out = Operand(3, [2], 0, 0.5, 0, 1)
    return Model(Subgraph([operand, out], [Operation(0, [0], [1])], [0], [1]))


def test_set_reaches_nested_fields_and_list_elements():
    model = small_model()
    assert apply_edit(model, Edit("set", ("main", "operands", 0, "location", "offset"), 2**32 - 1))
    assert apply_edit(model, Edit("set", ("main", "operations", 0, "inputs", 0), 7))
    assert model.main.operands[0].location == DataLocation(0, 2**32 - 1, 0)
    assert model.main.operations[0].inputs == [7]


def test_structural_edits():
    model = small_model()
    assert apply_edit(model, Edit("duplicate", ("main", "operands"), 0))
    assert len(model.main.operands) == 3 and model.main.operands[2] is not model.main.operands[0]
    assert apply_edit(model, Edit("swap", ("main", "operands"), 0))
    assert model.main.operands[0].lifetime == 0 and model.main.operands[2].lifetime == 0
    assert apply_edit(model, Edit("delete", ("main", "operations"), 0))
    assert model.main.operations == []


def test_tagged_values_become_hal_objects():
    model = small_model()
    apply_edit(model, Edit("append", ("extension_name_to_prefix",), {"extension": ["com.example.x", 3]}))
    apply_edit(model, Edit("set", ("main", "operands", 0, "extra_params"), {"channel_quant": [[0.5], 0]}))
    assert model.extension_name_to_prefix == [ExtensionNameAndPrefix("com.example.x", 3)]
    assert model.main.operands[0].extra_params.scales == [0.5]
    pools: list = ["a"]
    holder = type("R", (), {})()
    holder.pools = pools
    assert apply_edit(holder, Edit("set", ("pools", 0), {"token": 5}))
    assert holder.pools[0] == MemoryToken(5)


def test_edits_whose_target_is_gone_do_nothing():
    model = small_model()
    before = model.copy()
    edits = [Edit("delete", ("main", "operands"), 1), Edit("set", ("main", "operands", 1, "scale"), 2.0),
             Edit("set", ("referenced", 0, "operands"), []), Edit("set", ("main", "no_such_field"), 1)]
    assert apply_edits(model, edits) == 1
    assert model.main.operands == before.main.operands[:1]


def test_json_round_trip_keeps_nan_and_huge_values():
    edits = [Edit("set", ("main", "operands", 0, "scale"), math.nan),
             Edit("set", ("main", "operands", 0, "dimensions"), [3, 2**31 - 1]),
             Edit("delete", ("pools",), 0)]
    again = loads(dumps(edits))
    assert again[1:] == edits[1:] and math.isnan(again[0].value)
